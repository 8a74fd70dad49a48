"""The check's defaults and choices, which ``EvalSettings`` and the CLI's options name when they
load: kept apart from ``check.py`` (which imports them), so that a run without the check
(``--no-check``) does not load the check."""

DEFAULT_RTOL = 1e-5
DEFAULT_ATOL = 1e-8
# Above this many nodes the per-node check (one replay per node: quadratic) is skipped.
NODE_CHECK_LIMIT = 300
# A batch checks input gradients only unless asked (``--check-nodes``): the per-node check is a
# diagnostic for one program's table and costs ~4 times the rest of a small program's check.
BATCH_NODE_CHECK_LIMIT = 0
METHODS = ("central", "complex", "richardson")  # the choices of --check-method
