"""The gradient check at one point: every gradient against finite differences.

Scalars are the smallest arrays: every verdict is a ``GradientCheck`` that says how many elements
of a gradient were checked, how many failed and where the worst one is. On floats one node is
perturbed at a time and the nodes downstream replayed (``replay.Replayer``, the fast path,
picked when every value is a float); a pass settles many perturbations at once as NumPy
columns (gradcheck/float_columns.py) when that saves time (``REPLAYS_FIRST`` says which runs
first), so a small scalar program never imports NumPy. A float program's inputs are checked
within budgets of node recomputations (``CHECK_BUDGET``), those past them listed as
``unchecked``. An array program's gradients are checked element by element,
and a large one's along random directions too, within ``ARRAY_CHECK_BUDGET`` (gradcheck/
elements.py). Central differences use the step policy of gradcheck/steps.py.

The methods (``method=``, ``--check-method``: central, ``complex``, ``richardson``) and the
verdict, ``GradientCheck``, live in gradcheck/differences.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gradcli.engine import replay
from gradcli.engine.graph import Node, Program, liveness
from gradcli.engine.ops import NONE
from gradcli.engine.replay import Replayer
from gradcli.errors import UsageError
from gradcli.gradcheck.differences import (
    GradientCheck,
    check_node,
    meaningful,
    screened,
    settled_check,
)
from gradcli.gradcheck.steps import CENTRAL, base_step, central_agrees, rounding_swamps
from gradcli.gradcheck.tolerances import DEFAULT_ATOL, DEFAULT_RTOL, METHODS, NODE_CHECK_LIMIT
from gradcli.limits import (
    ARRAY_CHECK_BUDGET,
    CHECK_BUDGET,
    REPLAY_CHECK_FACTOR,
    VECTOR_CHECK_FACTOR,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

    from gradcli.gradcheck.conditioning import Conditioning


@dataclass
class CheckReport:
    """The verdict of the finite-difference check of one evaluated program."""

    rtol: float
    atol: float
    gradients: dict[str, GradientCheck] = field(default_factory=dict)  # by input variable
    nodes: dict[int, GradientCheck] = field(default_factory=dict)  # by node id, when run
    nodes_skipped: bool = False  # True when the graph was too large for the per-node check
    method: str = "central"  # the method asked for; each GradientCheck says which one it used
    unchecked: list[str] = field(default_factory=list)  # variables past the check's budget
    # Conditions that a finite difference turned over (x > 0 at x = 0, replay.Replayer): where
    # a condition switches, the pieces meet and a difference mixes both, as at relu's kink.
    boundaries: list[str] = field(default_factory=list)
    conditioning: Conditioning | None = None  # when ill-conditioning explains every failure
    shrunk: list[str] = field(default_factory=list)  # arrays whose check the budget shrank

    def __init__(self, rtol: float, atol: float,
                 gradients: dict[str, GradientCheck] | None = None,
                 nodes: dict[int, GradientCheck] | None = None, nodes_skipped: bool = False,
                 method: str = "central", unchecked: list[str] | None = None,
                 boundaries: list[str] | None = None, conditioning: Conditioning | None = None,
                 shrunk: list[str] | None = None) -> None:
        """The fields' own, written out as ``GradientCheck``'s is (a native call, compiled; None
        for an empty dict or list)."""
        self.rtol = rtol
        self.atol = atol
        self.gradients = {} if gradients is None else gradients
        self.nodes = {} if nodes is None else nodes
        self.nodes_skipped = nodes_skipped
        self.method = method
        self.unchecked = [] if unchecked is None else unchecked
        self.boundaries = [] if boundaries is None else boundaries
        self.conditioning = conditioning
        self.shrunk = [] if shrunk is None else shrunk

    # A batch line's record asks for the verdicts below several times, and it checks no
    # nodes: so no set of unique checks is built there (W2: 2% of a line).
    @property
    def checks(self) -> list[GradientCheck]:
        """Every check once (a variable's node shares its check with ``gradients``)."""
        if not self.nodes:
            return list(self.gradients.values())
        unique = {id(c): c for c in (*self.gradients.values(), *self.nodes.values())}
        return list(unique.values())

    @property
    def failures(self) -> list[GradientCheck]:
        return [check for check in self.checks if not check.ok]

    @property
    def ok(self) -> bool:
        return all(check.ok for check in self.checks)

    @property
    def max_abs_error(self) -> float:
        return max((c.abs_error for c in self.checks if c.abs_error is not None), default=0.0)

    def record(self) -> dict[str, Any]:
        """The report's JSON record (``--json``'s ``"check"``): the verdict, the tolerances, each
        gradient's check (``GradientCheck.record``) and what was left out or explains a failure."""
        return {
            "ok": self.ok, "max_abs_error": self.max_abs_error, "rtol": self.rtol,
            "atol": self.atol,
            "gradients": {name: check.record() for name, check in self.gradients.items()},
            "nodes_checked": not self.nodes_skipped, "method": self.method,
            "unchecked": self.unchecked, "shrunk": self.shrunk, "unresolved": self.unresolved,
            "ill_conditioned": None if self.conditioning is None else self.conditioning.record(),
        }

    @property
    def unresolved(self) -> list[str]:
        """The variables whose gradient agrees only within the rounding of values far larger
        than their changes: the rounding itself, not only the allowance for it, is above the
        tolerance's own share (``rounding_swamps``), so a wrong gradient would pass
        too (x**2 + 1e20 at 1: 5.9e10 allowed for a gradient of 2)."""
        found = []
        for name, check in self.gradients.items():
            if check.ok and check.numeric is not None:
                share = self.atol + self.rtol * max(abs(check.analytic), abs(check.numeric))
                if rounding_swamps(check.tolerance - share, share):
                    found.append(name)
        return found


def check_gradients(
    program: Program,
    rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL,
    node_check_limit: Any = NODE_CHECK_LIMIT,  # any number (a NumPy int; inf: every node)
    method: str = "central",
    budget: int | None = None,
) -> CheckReport:
    """Compare every gradient of an evaluated program (forward and backward done) with FD.

    ``method`` is one of ``METHODS`` (see the module docstring). ``budget`` bounds the work:
    node recomputations on floats (default ``CHECK_BUDGET``; the first variable is always
    checked and those past the budget are listed in ``unchecked``: a sum of 10^5 distinct
    variables would otherwise take hours), array elements recomputed on arrays (default
    ``ARRAY_CHECK_BUDGET``; fewer elements are sampled, never fewer than ``ARRAY_CHECK_MIN``).
    """
    if method not in METHODS:
        raise UsageError(f"unknown check method {method!r}", hint="use " + ", ".join(METHODS))
    nodes = program.nodes
    if method == "complex":  # refused before any replay (differences.py's docstring)
        for node in nodes:
            if node.inputs and node.needs_grad and node.op.complex is NONE:
                raise node.op.no_complex_form()
    report = CheckReport(rtol, atol, method=method)
    per_node = bool(len(nodes) <= node_check_limit)  # (a NumPy int gives a NumPy bool)
    if program.arrays:
        from gradcli.gradcheck.elements import check_arrays

        checks, report.shrunk, switched = check_arrays(
            program, rtol, atol, method, per_node,
            ARRAY_CHECK_BUDGET if budget is None else budget)
        report.nodes_skipped = not per_node
        report.gradients = {name: checks[node.index]
                            for name, node in program.variables.items()}
        if per_node:
            report.nodes = {n.index: checks[n.index] for n in nodes
                            if n.needs_grad and n.index in checks}
    else:
        replayer = Replayer(nodes)
        _check_floats(program, report, replayer, per_node,
                      CHECK_BUDGET if budget is None else budget)
        switched = replayer.switched
    if switched and not report.ok:
        from gradcli.engine.graph import node_text  # only for this message

        report.boundaries = [node_text(nodes[i]) for i in sorted(switched)]
    measured = [check.ill_conditioned for check in report.failures]
    if measured and None not in measured:
        from gradcli.gradcheck.conditioning import conditioning  # only for a failed check

        report.conditioning = conditioning(program, max(m or 0.0 for m in measured))
    return report


def _check_floats(program: Program, report: CheckReport, replayer: Replayer, per_node: bool,
                  budget: int) -> None:
    """The fast path: every value a float, one replay per perturbation (module docstring).

    With the compiled replays (``REPLAYS_FIRST``) the inputs are replayed first, as far as
    ``budget`` times ``REPLAY_CHECK_FACTOR`` goes in the work the replays do (only the nodes
    each input affects), and the vectorised pass takes those left when they are many (a sum
    of 10^5 inputs): a large graph of a few inputs (W3: 100 over 10^5 nodes) never imports
    NumPy. In Python, and for a per-node check of a large graph, the vectorised pass settles
    what it can first and the replays, within ``budget``, the rest."""
    nodes, rtol, atol, method = program.nodes, report.rtol, report.atol, report.method
    targets = [n for n in nodes if n.needs_grad] if per_node else list(program.variables.values())
    passed = {}
    vectorised_first = (per_node or not REPLAYS_FIRST) and method == "central"
    if program.masked:
        targets = meaningful(targets, liveness(nodes), nodes)
    elif vectorised_first and len(targets) * len(nodes) >= _COLUMNS_FROM:
        affordable = _affordable(targets, nodes, budget * VECTOR_CHECK_FACTOR)
        passed = _central_at_once(program, affordable, rtol, atol, replayer)
    spent, left = 0, []
    limit = budget * REPLAY_CHECK_FACTOR if REPLAYS_FIRST else budget
    for name, node in program.variables.items():
        if node.index in passed:
            report.gradients[name] = passed[node.index]
            continue
        if REPLAYS_FIRST:  # counted as the replays go (a sweep is spent even where they
            sweep = _sweep_cost(nodes, node)  # do not fit after it)
            if report.gradients and spent + sweep > limit:
                left.append(node)
                continue
            spent += sweep
            cost = 2 * len(replayer.affected(node.index))
        else:  # in Python, as before: an upper bound, every node after the input twice
            cost = _columns_cost(nodes, node)
        if report.gradients and spent + cost > limit:
            left.append(node)
            continue
        spent += cost
        report.gradients[name] = _checked(replayer, node, rtol, atol, method)
    if left and not vectorised_first:
        _check_left(program, report, left, budget, replayer)
    else:
        report.unchecked = [str(node.name) for node in left]
    if not per_node or report.unchecked:
        report.nodes_skipped = True
        return
    for node in targets:
        known = report.gradients.get(str(node.name)) if node.is_leaf else None
        report.nodes[node.index] = (
            known or passed.get(node.index) or _checked(replayer, node, rtol, atol, method))


def _check_left(program: Program, report: CheckReport, left: list[Node], budget: int,
                replayer: Replayer) -> None:
    """The inputs past the replays' budget: the vectorised pass (within its own budget)
    checks those that pass; those it saw disagree are replayed, as in Python after that pass,
    within ``budget`` more and the first of them always (a disagreement the pass saw is never
    left as "unchecked" alone); the rest are ``unchecked``. ``report.gradients`` keeps the
    inputs' order."""
    nodes, passed, seen = program.nodes, {}, set()
    if report.method == "central" and not program.masked:
        affordable = _affordable(left, nodes, budget * VECTOR_CHECK_FACTOR)
        passed = _central_at_once(program, affordable, report.rtol, report.atol, replayer)
        if len(affordable) * len(nodes) >= _COLUMNS_FROM:  # the pass ran
            seen = {node.index for node in affordable}
    checked, spent, replayed = report.gradients, 0, False
    report.gradients = {}
    for name, node in program.variables.items():
        if name in checked:
            report.gradients[name] = checked[name]
            continue
        if node.index in passed:
            report.gradients[name] = passed[node.index]
            continue
        if node.index in seen:
            cost = _sweep_cost(nodes, node) + 2 * len(replayer.affected(node.index))
            if not replayed or spent + cost <= budget:
                spent, replayed = spent + cost, True
                report.gradients[name] = _checked(replayer, node, report.rtol, report.atol,
                                                  report.method)
                continue
        report.unchecked.append(name)


def _checked(replayer: Replayer, node: Node, rtol: float, atol: float,
             method: str) -> GradientCheck:
    """``check_node``, whose usual central verdict -- the first step agrees -- comes from
    both replays in one walk (``Replayer.replay_pair``): the same numbers, half the walking."""
    if method == "central":
        v = node.value
        h = base_step(v)  # the first of ``steps_for``
        both = replayer.replay_pair(node.index, v + h, v - h)
        if both is not None:
            largest = max(float(abs(replayer.nodes[-1].value)), both[2])
            agreed = central_agrees(node.grad, both[0], both[1], largest, h, rtol, atol)
            if agreed is not None:
                numeric, error, allowed = agreed  # not ``*agreed``, which would make the
                # call a generic one through the class, not the native ``__init__``
                return screened(replayer, node, GradientCheck(
                    node.grad, numeric, error, allowed, True, CENTRAL.method, h),
                    both[0], both[1], largest)
    return check_node(replayer, node, rtol, atol, method)


def _sweep_cost(nodes: list[Node], node: Node) -> int:
    """The sweep that finds the nodes an input affects, in recomputations: five nodes swept
    cost about one."""
    return (len(nodes) - node.index) // 5


def _columns_cost(nodes: list[Node], node: Node) -> int:
    """The nodes two replays from ``node`` recompute in the vectorised pass (all after it)."""
    return 2 * (len(nodes) - node.index)


def _affordable(targets: list[Node], nodes: list[Node], budget: int) -> list[Node]:
    """The first targets whose replays fit in ``budget`` (the vectorised pass's share)."""
    chosen: list[Node] = []
    spent = 0
    for node in targets:
        spent += _columns_cost(nodes, node)
        if chosen and spent > budget:
            break
        chosen.append(node)
    return chosen


# The compiled replays recompute a node about as fast as the vectorised pass does and need no
# NumPy (W3: 13 MB less at the peak, 5% fewer instructions); in Python the vectorised pass is
# twice as fast on W3. Verdicts agree either way (a test compares them); a number that passes
# may differ in its last bits between the two builds (NumPy's sin is not libm's), and so may
# which inputs of a program past the budgets are left unchecked.
REPLAYS_FIRST = not replay.__file__.endswith(".py")


# Below this much scalar replay work (checked nodes x graph size) NumPy's import and per-call
# cost outweigh what it saves. The choice depends on the program alone, never on whether NumPy
# is loaded already: NumPy's functions may round differently from math's in the last bit, and a
# line's record is the same bytes wherever the same build runs it (after an array line, on a Dask
# worker); across builds see ``REPLAYS_FIRST``.
_COLUMNS_FROM = 200_000


def _central_at_once(
    program: Program, targets: list[Node], rtol: float, atol: float, replayer: Replayer,
) -> dict[int, GradientCheck]:
    """The first step of ``check_node`` -- a central difference at the base step -- for every
    target in one vectorised replay (``float_columns.central_at_once``), when that saves time; only
    the checks that pass, anything else goes through ``check_node``. ``replayer``: the check's,
    whose rounding weights serve both (made once, when needed)."""
    work = len(targets) * len(program.nodes)
    if work < _COLUMNS_FROM:
        return {}
    from gradcli.gradcheck.float_columns import central_at_once

    nodes = program.nodes
    return {index: settled_check(nodes[index].grad, settled)
            for index, settled in central_at_once(program, targets, rtol, atol,
                                                  replayer).items()}
