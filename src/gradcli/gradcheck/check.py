"""The gradient check at one point: every gradient against finite differences, element by element.

Scalars are the smallest arrays: every verdict is a ``GradientCheck`` that says how many elements
of a gradient were checked, how many failed and where the worst one is. One element of one node
is perturbed at a time and the nodes downstream replayed, on floats (``replay.Replayer``, the fast
path, picked when every value is a float) or on arrays (``columns.ElementReplayer``); an element
looks like a scalar node to the methods below (``Perturbed``). Central differences use the step
policy of gradcheck/steps.py. A first pass settles many perturbations at once as NumPy columns
(gradcheck/columns.py); on floats it runs only when that saves time, so a small scalar program
never imports NumPy. An array's gradient is checked at up to ``ARRAY_CHECK_ELEMENTS`` elements
(an evenly spread sample beyond, fewer past ``ARRAY_CHECK_BUDGET``); a float program's inputs
within ``CHECK_BUDGET`` node recomputations, those past it listed as ``unchecked``.

Two more methods (``method=``, ``--check-method``); each verdict records the one it used:
- ``complex``: complex-step differentiation, Im f(v + ih) / h, evaluated with the op table's
  ``complex`` form. No difference of nearby values is taken: no cancellation, no rounding-noise
  allowance (the tolerance is atol + rtol * max(|analytic|, |numeric|)). The only error is
  truncation, about (h/L)^2 / 6 relative, L the scale on which f changes: invisible for any L
  above ~1e-92 with h = 1e-100 * max(1, |v|), which is no smaller so that the imaginary parts
  carried through the graph stay normal floats. At a kink (abs, relu at 0; min/max at a tie;
  sign) the complex form follows the real part, so complex-step *reproduces* the documented
  convention and cannot flag a point where the function is not differentiable (central
  differences do: relu(x) at 0 gives 1/2).
  Should the complex evaluation overflow where the real one does not, the central check is used
  and the verdict says so. An op whose row has no complex form (``complex=NONE``, see
  engine/ops/) is refused instead: if such an op depends on a variable (a complex replay would
  reach it), ``check_gradients`` raises a UsageError (exit status 2) that names the function and
  suggests ``--check-method central`` or ``richardson``, before any replay. A refusal rather than
  a silent fallback: complex was asked for by name, and the missing form is a property of the
  program, not of a point, so the answer does not change from one point to the next. An op with
  no complex form that depends only on constants (``erf(2)*x``) is never replayed and is fine.
- ``richardson``: central differences D(h) at steps h0 / 2^k (h0 = max(1, |v|) / 8, at most
  ``RICHARDSON_LEVELS`` steps) extrapolated column by column, T[k][j] = T[k][j-1] +
  (T[k][j-1] - T[k-1][j-1]) / (4^j - 1), which cancels the h^2, h^4, ... error terms one by one
  (Ridders' scheme, Numerical Recipes' dfridr). The entry whose error estimate (its distance from
  the two entries it was built from) is smallest is the answer, and that estimate is reported.
  The tolerance keeps the rounding-noise allowance of the smallest step that entry used. Where no
  two steps evaluate (the edge of a domain), it falls back to the central check and says so in
  the verdict's method ("forward", "backward" or "central").
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from gradcli.engine.graph import Node, Program, liveness
from gradcli.engine.ops import LOGICAL, NONE
from gradcli.engine.replay import Replayer
from gradcli.errors import NumericError, UsageError
from gradcli.gradcheck.steps import (
    CENTRAL,
    EPS,
    STENCILS,
    Perturbed,
    Replays,
    Stencil,
    judge,
    noise_allowance,
    quotient,
    steps_for,
    tolerance,
)
from gradcli.gradcheck.tolerances import (  # noqa: F401 (named here too)
    BATCH_NODE_CHECK_LIMIT,
    DEFAULT_ATOL,
    DEFAULT_RTOL,
    METHODS,
    NODE_CHECK_LIMIT,
)
from gradcli.limits import (
    ARRAY_CHECK_BUDGET,
    ARRAY_CHECK_ELEMENTS,
    ARRAY_CHECK_MIN,
    ARRAY_COLUMN_FACTOR,
    CHECK_BUDGET,
    VECTOR_CHECK_FACTOR,
)

if TYPE_CHECKING:
    from gradcli.gradcheck.columns import ElementReplayer
    from gradcli.gradcheck.conditioning import Conditioning

COMPLEX_STEP = 1e-100  # relative to max(1, |v|); see the module docstring
RICHARDSON_LEVELS = 15  # steps h0 ... h0 / 2^14: from max(1, |v|) / 8 down to ~eps^(1/3)
_RICHARDSON_FIRST_STEP = 0.125


@dataclass
class GradientCheck:
    """One gradient compared with its finite-difference estimate, element by element; the
    scalar fields describe the worst element (the first failure with the largest error, else
    the largest error). A float's gradient is one element: checked 1 of 1, ``where`` ()."""

    analytic: float
    numeric: float | None  # None when no difference could be evaluated (domain on both sides)
    abs_error: float | None
    tolerance: float
    ok: bool
    method: str  # "central", "forward", "backward", "complex" or "richardson"
    step: float
    error_estimate: float | None = None  # Richardson's estimate of its own error
    checked: int = 1  # elements checked
    size: int = 1  # elements in the gradient
    failed: int | None = None  # elements that disagree (None: 1 if not ok, else 0)
    where: tuple[int, ...] = ()  # the worst element's index (() for a scalar)
    ill_conditioned: float | None = None  # rounding amplification, when it explains a failure

    def __post_init__(self) -> None:
        if self.failed is None:
            self.failed = 0 if self.ok else 1


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

    @property
    def checks(self) -> list[GradientCheck]:
        """Every check once (a variable's node shares its check with ``gradients``)."""
        unique = {id(c): c for c in (*self.gradients.values(), *self.nodes.values())}
        return list(unique.values())

    @property
    def failures(self) -> list[GradientCheck]:
        return [check for check in self.checks if not check.ok]

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def max_abs_error(self) -> float:
        return max((c.abs_error for c in self.checks if c.abs_error is not None), default=0.0)


def check_gradients(
    program: Program,
    rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL,
    node_check_limit: int = NODE_CHECK_LIMIT,
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
    if method == "complex":
        _require_complex_forms(nodes)
    report = CheckReport(rtol, atol, method=method)
    per_node = len(nodes) <= node_check_limit
    replayer: Replays
    if program.arrays:
        from gradcli.gradcheck.columns import ElementReplayer

        replayer = ElementReplayer(nodes)
        _check_elements(program, report, replayer, per_node,
                        ARRAY_CHECK_BUDGET if budget is None else budget)
    else:
        replayer = Replayer(nodes)
        _check_floats(program, report, replayer, per_node,
                      CHECK_BUDGET if budget is None else budget)
    if replayer.switched and not report.ok:
        from gradcli.engine.graph import node_text  # only for this message

        report.boundaries = [node_text(nodes[i]) for i in sorted(replayer.switched)]
    measured = [check.ill_conditioned for check in report.failures]
    if measured and None not in measured:
        from gradcli.gradcheck.conditioning import conditioning  # only for a failed check

        report.conditioning = conditioning(program, max(m or 0.0 for m in measured))
    return report


def _check_floats(program: Program, report: CheckReport, replayer: Replayer, per_node: bool,
                  budget: int) -> None:
    """The fast path: every value a float, one replay per perturbation (module docstring)."""
    nodes, rtol, atol, method = program.nodes, report.rtol, report.atol, report.method
    targets = [n for n in nodes if n.needs_grad] if per_node else list(program.variables.values())
    passed = {}
    if program.masked:  # a truth value's or a dead node's difference quotient means nothing
        live = liveness(nodes)
        targets = [n for n in targets
                   if (live[n.index] or n.is_leaf) and n.op.name not in LOGICAL]
    elif method == "central":
        affordable = _affordable(targets, nodes, budget * VECTOR_CHECK_FACTOR)
        passed = _central_at_once(program, affordable, rtol, atol)
    spent = 0
    for name, node in program.variables.items():
        if node.index in passed:
            report.gradients[name] = passed[node.index]
            continue
        cost = _replay_cost(nodes, node)
        if report.gradients and spent + cost > budget:
            report.unchecked.append(name)
            continue
        spent += cost
        report.gradients[name] = check_node(replayer, node, rtol, atol, method)
    if not per_node or report.unchecked:
        report.nodes_skipped = True
        return
    for node in targets:
        known = report.gradients.get(str(node.name)) if node.is_leaf else None
        report.nodes[node.index] = (
            known or passed.get(node.index) or check_node(replayer, node, rtol, atol, method))


# A node costs as much to recompute as this many array elements (NumPy's per-call overhead).
_NODE_OVERHEAD = 2_000


class _Probe:
    """One element of an array node, as the step policies read a node (``Perturbed``)."""

    __slots__ = ("grad", "index", "value")

    def __init__(self, value: float, grad: float, index: int) -> None:
        self.value, self.grad, self.index = value, grad, index


def _check_elements(program: Program, report: CheckReport, replayer: ElementReplayer,
                    per_node: bool, budget: float) -> None:
    """Every input's gradient element by element, then every node's when the graph is small;
    each node gets a fair share of the budget that is left."""
    nodes = program.nodes
    report.nodes_skipped = not per_node
    variables = list(program.variables.values())
    others = [n for n in nodes if n.needs_grad and not n.is_leaf] if per_node else []
    targets = variables + others
    checks: dict[int, GradientCheck] = {}
    for done, node in enumerate(targets):
        share = budget / (len(targets) - done)
        checks[node.index], spent = check_node_elements(
            replayer, node, report.rtol, report.atol, report.method, share)
        budget -= spent
    report.gradients = {name: checks[node.index] for name, node in program.variables.items()}
    if per_node:
        report.nodes = {node.index: checks[node.index] for node in nodes
                        if node.needs_grad and node.index in checks}


def sample(size: int, count: int) -> list[int]:
    """``count`` flat indices spread evenly over ``size`` elements, first and last included."""
    if count >= size:
        return list(range(size))
    from gradcli.engine.arrays import numpy

    return sorted(set(numpy().linspace(0, size - 1, count).round().astype(int).tolist()))


def check_node_elements(replayer: ElementReplayer, node: Node, rtol: float, atol: float,
                        method: str, budget: float) -> tuple[GradientCheck, float]:
    """The per-element check of ``node``'s gradient; returns it and the budget spent."""
    from gradcli.engine.arrays import numpy
    from gradcli.gradcheck.columns import COLUMN_MAX_ELEMENTS, central_columns, replayable

    np = numpy()
    elements = replayer.aim(node)
    # Columns copy the whole node once each: for a large one, perturbing one element of one
    # copy in place (the loop) costs less.
    columns = (method == "central" and np.size(node.value) <= COLUMN_MAX_ELEMENTS
               and replayable(replayer.downstream))
    # A replay costs the elements it reads and writes, and NumPy's overhead per node (paid
    # once per block of columns when they replay together).
    cost = elements + (0 if columns else _NODE_OVERHEAD * len(replayer.downstream))
    size = int(np.size(node.value))
    affordable = int(budget * (ARRAY_COLUMN_FACTOR if columns else 1) // (2 * max(cost, 1)))
    count = min(size, ARRAY_CHECK_ELEMENTS, max(ARRAY_CHECK_MIN, affordable))
    values, grads = np.ravel(node.value), np.ravel(node.grad)
    flats = sample(size, count)
    passed = central_columns(node, replayer.downstream, replayer.nodes[-1], flats, rtol,
                             atol) if columns else {}
    worst: tuple[tuple[float, float], int, GradientCheck] | None = None
    failed, measured = 0, []  # the failed elements' ill_conditioned
    for flat in flats:
        grad, settled = float(grads[flat]), passed.get(flat)
        verdict = (check_node(replayer, _Probe(float(values[flat]), grad, flat), rtol, atol,
                              method) if settled is None else
                   GradientCheck(grad, settled.numeric, settled.abs_error, settled.tolerance,
                                 True, CENTRAL.method, settled.step))
        failed += not verdict.ok
        measured += [] if verdict.ok else [verdict.ill_conditioned]
        badness = (0.0 if verdict.ok else 1.0, verdict.abs_error or 0.0)
        if worst is None or badness > worst[0]:
            worst = (badness, flat, verdict)
    assert worst is not None
    _, flat, verdict = worst
    where = tuple(int(i) for i in np.unravel_index(flat, np.shape(node.value)))
    fields = {**vars(verdict), "checked": len(flats), "size": size, "failed": failed,
              "where": where, "ok": failed == 0,
              "ill_conditioned": None if None in measured else max(measured, default=None)}
    return GradientCheck(**fields), 2 * cost * count / (ARRAY_COLUMN_FACTOR if columns else 1)


def _require_complex_forms(nodes: list[Node]) -> None:
    """A UsageError naming the first op without a complex form that a complex replay would
    reach (every node that depends on a variable; module docstring)."""
    for node in nodes:
        if node.inputs and node.needs_grad and node.op.complex is NONE:
            raise node.op.no_complex_form()


def _replay_cost(nodes: list[Node], node: Node) -> int:
    """An upper bound of the nodes two replays from ``node`` recompute."""
    return 2 * (len(nodes) - node.index)


def _affordable(targets: list[Node], nodes: list[Node], budget: int) -> list[Node]:
    """The first targets whose replays fit in ``budget`` (the vectorised pass's share)."""
    chosen: list[Node] = []
    spent = 0
    for node in targets:
        spent += _replay_cost(nodes, node)
        if chosen and spent > budget:
            break
        chosen.append(node)
    return chosen


# Below this much scalar replay work (checked nodes x graph size) NumPy's import and per-call
# cost outweigh what it saves, unless NumPy is already loaded (a batch, a sweep).
_COLUMNS_ALWAYS, _COLUMNS_IF_LOADED = 200_000, 400


def _central_at_once(
    program: Program, targets: list[Node], rtol: float, atol: float
) -> dict[int, GradientCheck]:
    """The first step of ``check_node`` -- a central difference at the base step -- for every
    target in one vectorised replay (``columns.central_at_once``), when that saves time; only
    the checks that pass, so anything else goes through ``check_node`` as before."""
    work = len(targets) * len(program.nodes)
    if work < _COLUMNS_IF_LOADED or (work < _COLUMNS_ALWAYS and "numpy" not in sys.modules):
        return {}
    from gradcli.gradcheck.columns import central_at_once

    nodes = program.nodes
    return {index: GradientCheck(nodes[index].grad, settled.numeric, settled.abs_error,
                                 settled.tolerance, True, CENTRAL.method, settled.step)
            for index, settled in central_at_once(program, targets, rtol, atol).items()}


def check_node(
    replayer: Replays, node: Perturbed, rtol: float, atol: float, method: str = "central"
) -> GradientCheck:
    """d(output)/d(node) by ``method``, compared with ``node.grad`` (``replayer`` replays the
    graph ``node`` belongs to)."""
    if method == "complex":
        return complex_step_check(replayer, node, rtol, atol)
    if method == "richardson":
        return richardson_check(replayer, node, rtol, atol)
    analytic = node.grad
    tried: list[GradientCheck] = []
    for shrink, h in enumerate(steps_for(node.value)):
        estimate = _difference(replayer, node, h)
        if estimate is None:
            tried.append(GradientCheck(analytic, None, None, 0.0, False, "none", h))
            continue
        numeric, method, largest = estimate
        error, allowed, agrees, swamped = judge(analytic, numeric, largest, h, shrink, rtol, atol)
        if swamped:
            from gradcli.gradcheck.conditioning import ill_conditioned  # a failing check only

            earlier = [c.abs_error for c in tried if c.abs_error is not None]
            measured = ill_conditioned(error, earlier, agrees, largest, replayer.nodes[-1].value)
            tried = [replace(c, ill_conditioned=measured) for c in tried] if measured else tried
            break
        check = GradientCheck(analytic, numeric, error, allowed, agrees, method, h)
        if agrees:
            return check
        tried.append(check)
    return min(tried, key=lambda c: math.inf if c.abs_error is None else c.abs_error)


def _difference(replayer: Replays, node: Perturbed, h: float) -> tuple[float, str, float] | None:
    """(estimate, method, largest magnitude) by the first stencil that evaluates, or None."""
    for stencil in STENCILS:
        estimate = _apply(replayer, node, stencil, h)
        if estimate is not None:
            return estimate[0], stencil.method, estimate[1]
    return None


def _apply(
    replayer: Replays, node: Perturbed, stencil: Stencil, h: float
) -> tuple[float, float] | None:
    """(estimate, largest magnitude among f(v) and the recomputed values), or None where a
    shifted point is outside the domain or the estimate is not finite."""
    v, index = node.value, node.index
    f0 = replayer.nodes[-1].value
    samples, largest = [], float(abs(f0))  # a float also where an array program's sum is NumPy's
    try:
        for offset in stencil.offsets:
            if offset:
                value, reach = replayer.replay(index, v + offset * h)
                largest = max(largest, reach)
            else:
                value = f0
            samples.append(value)
    except NumericError:
        return None
    estimate = quotient(stencil, samples, h)
    return (estimate, largest) if math.isfinite(estimate) else None


# --- complex step and Richardson extrapolation ---------------------------------------------------

def complex_step_check(
    replayer: Replays, node: Perturbed, rtol: float, atol: float
) -> GradientCheck:
    """d(output)/d(node) = Im f(v + ih) / h: no subtraction, so no rounding-noise allowance."""
    analytic = node.grad
    h = COMPLEX_STEP * max(1.0, abs(node.value))
    try:
        output, _ = replayer.replay(node.index, complex(node.value, h), complex_step=True)
    except NumericError:  # the complex evaluation overflowed where the real one did not
        return check_node(replayer, node, rtol, atol)  # the verdict says "central" (or one-sided)
    numeric = output.imag / h
    if not math.isfinite(numeric):  # Im f / h overflowed: no estimate (inf <= inf would pass)
        return check_node(replayer, node, rtol, atol)
    error = abs(analytic - numeric)
    allowed = tolerance(analytic, numeric, rtol, atol)
    return GradientCheck(analytic, numeric, error, allowed, error <= allowed, "complex", h)


def richardson_check(
    replayer: Replays, node: Perturbed, rtol: float, atol: float
) -> GradientCheck:
    """d(output)/d(node) by Richardson extrapolation of central differences (module docstring)."""
    best = richardson_estimate(replayer, node)
    if best is None or not math.isfinite(best[0]):  # an overflowed table is no estimate
        return check_node(replayer, node, rtol, atol)  # the verdict says "forward", "central"...
    numeric, estimate, h, largest = best
    analytic = node.grad
    error = abs(analytic - numeric)
    allowed = tolerance(analytic, numeric, rtol, atol, noise_allowance(largest, h))
    return GradientCheck(analytic, numeric, error, allowed, error <= allowed, "richardson", h,
                         estimate)


def richardson_estimate(
    replayer: Replays, node: Perturbed
) -> tuple[float, float, float, float] | None:
    """(estimate, its error estimate, smallest step used, largest magnitude), or None.

    Row k holds the central difference at h0 / 2^k and its extrapolations; entry j of row k
    removes the h^(2j) term using entry j-1 of rows k and k-1. An entry's error estimate is its
    distance from the two entries it was built from, but never less than the rounding error of
    its row's differences (eps * M / h): otherwise a lucky cancellation at a tiny step would win.
    That floor doubles with each row, so the table stops once it exceeds the best estimate (the
    answer is the same, and stopping early saves most of the replays).
    Rows start at the first step that evaluates and stop at the first that does not, so a domain
    edge shortens the table.
    """
    h = _RICHARDSON_FIRST_STEP * max(1.0, abs(node.value))
    previous: list[float] = []
    best: tuple[float, float, float, float] | None = None
    largest = abs(replayer.nodes[-1].value)
    for _ in range(RICHARDSON_LEVELS):
        difference = _apply(replayer, node, CENTRAL, h)
        if difference is None:
            if previous:
                break
            h /= 2.0
            continue
        largest = max(largest, difference[1])
        rounding = EPS * largest / h  # what D(h) itself carries: entries cannot be better
        if best is not None and rounding > best[1]:
            break  # rounding only grows as h shrinks: no later entry can beat the best one
        row = [difference[0]]
        for j in range(1, len(previous) + 1):
            row.append(row[j - 1] + (row[j - 1] - previous[j - 1]) / (4.0**j - 1.0))
            change = max(abs(row[j] - row[j - 1]), abs(row[j] - previous[j - 1]))
            estimate = max(change, rounding)
            if best is None or estimate <= best[1]:
                best = (row[j], estimate, h, largest)
        previous = row
        h /= 2.0
    return best
