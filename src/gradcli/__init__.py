"""gradcli: differentiate formulas -- values, reverse-mode gradients, finite-difference checks.

The CLI is a thin layer over this API (docs/python-api.md)::

    result = gradcli.evaluate("(x*W+b-t)**2", {"x": 2, "W": 3, "b": 1, "t": 8})
    result.value, result.gradients, result.check.ok, result.node_rows()
    gradcli.differentiate("(x*W+b-t)**2", ["x"]).texts()   # {'x': '2*W*(W*x + b - t)'}
"""

from __future__ import annotations

import sys
from types import ModuleType

from gradcli.errors import (
    ExitStatus,
    GradcliError,
    GradcliNameError,
    NumericError,
    ParseError,
    UsageError,
)


class _InspectOnUse(ModuleType):
    """Stands for ``inspect`` while ``dataclasses`` loads: ``dataclasses`` imports it at the top
    (with ``ast``, ``dis`` and ``tokenize``, a third of a scalar eval's start-up) but, before
    Python 3.12, uses it only to write the ``__doc__`` of a class that has none. The real module
    is imported on the first attribute asked for, and then replaces this one in ``dataclasses``."""

    def __getattr__(self, name: str) -> object:
        if sys.modules.get("inspect") is self:
            del sys.modules["inspect"]
        import inspect

        vars(sys.modules["dataclasses"])["inspect"] = inspect
        return getattr(inspect, name)


def _load_dataclasses() -> None:
    """``dataclasses`` without ``inspect`` (``_InspectOnUse``), where neither is loaded yet and
    the version uses ``inspect`` per class no further (3.12 reads every class's annotations
    with it). ``inspect`` is in ``sys.modules`` only during this import: whoever imports it
    later gets the real module."""
    if sys.version_info >= (3, 12) or {"inspect", "dataclasses"} & sys.modules.keys():
        return
    sys.modules["inspect"] = _InspectOnUse("inspect")
    try:
        import dataclasses  # noqa: F401 (loaded here, with the stand-in, for everyone)
    finally:
        if isinstance(sys.modules.get("inspect"), _InspectOnUse):
            del sys.modules["inspect"]


_load_dataclasses()

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from gradcli.api import (
        CheckReport,
        Derivatives,
        EvalSettings,
        FreeResult,
        GradientCheck,
        HessianResult,
        LineOutcome,
        Node,
        NodeRow,
        Program,
        Result,
        SymbolicResult,
        differentiate,
        evaluate,
        evaluate_lines,
        parse,
    )

__version__ = "0.1.0"

__all__ = [
    "CheckReport",
    "Derivatives",
    "EvalSettings",
    "ExitStatus",
    "FreeResult",
    "GradcliError",
    "GradcliNameError",
    "GradientCheck",
    "HessianResult",
    "LineOutcome",
    "Node",
    "NodeRow",
    "NumericError",
    "ParseError",
    "Program",
    "Result",
    "SymbolicResult",
    "UsageError",
    "__version__",
    "differentiate",
    "evaluate",
    "evaluate_lines",
    "parse",
]

# PEP 562: everything else loads on first use, so ``import gradcli`` is almost free (the CLI's
# Ctrl-C guard is set up only once it is imported). The policy of the whole package, stated here
# once: a heavy or rarely used module (NumPy, Rich, Lark, the symbolic engine...) is imported
# inside the function that needs it, so that a plain scalar ``gradcli eval`` loads none of them
# (tests/test_packaging.py checks what a small eval loads).
_API_NAMES = frozenset(__all__) - set(globals())  # those not imported above: the API's


def __getattr__(name: str) -> object:
    """An API name from its module, or a submodule (``gradcli.api``), imported on first use."""
    from importlib import import_module
    from importlib.util import find_spec

    if name in _API_NAMES:
        value = getattr(import_module(".api", __name__), name)
        globals()[name] = value
        return value
    if not name.startswith("_") and find_spec(f"{__name__}.{name}") is not None:
        return import_module(f".{name}", __name__)
    raise AttributeError(f"module 'gradcli' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
