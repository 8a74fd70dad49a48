"""Finite-difference verification of reverse-mode gradients.

For a node, d(output)/d(node) is estimated by finite differences with the step policy of
``finite_difference`` (central differences at h = eps^(1/3) * max(1, |v|), one-sided ones at the
edge of a domain, smaller steps after a disagreement, a rounding-noise allowance in the tolerance).
Only the nodes downstream of the perturbed one are recomputed (a ``replay.Replayer`` per check).

Two more methods (``method=``, ``--check-method``); each verdict records the one it used:

- ``complex``: complex-step differentiation, Im f(v + ih) / h, evaluated with the op table's
  ``complex`` form. No difference of nearby values is taken, so there is no cancellation and no
  rounding-noise allowance: the estimate is exact to machine precision for analytic ops, and the
  tolerance is just atol + rtol * max(|analytic|, |numeric|). The only error is truncation,
  about (h/L)^2 / 6 relative, L the scale on which f changes: invisible for any L above ~1e-92
  with h = 1e-100 * max(1, |v|). h is no smaller so that the imaginary parts h * d(node)/dv
  carried through the graph stay normal floats (they underflow only for derivatives below about
  1e-208, far under any atol). At a kink (abs, relu at 0; min/max at a tie; sign) the complex
  form follows the real part and gives the documented convention, so complex-step *reproduces*
  the convention: it checks the rule on the branch the real values take and cannot flag a point
  where the function is not differentiable (central differences do: relu(x) at 0 gives 1/2).
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
from dataclasses import dataclass, field

from gradcli.engine.graph import Node, Program, liveness
from gradcli.engine.ops import LOGICAL, NONE
from gradcli.engine.replay import Replayer
from gradcli.errors import NumericError, UsageError
from gradcli.gradcheck.steps import (
    CENTRAL,
    EPS,
    SHRINKS,
    STENCILS,
    Stencil,
    base_step,
    judge,
    noise_allowance,
    quotient,
    step,
    tolerance,
)
from gradcli.gradcheck.tolerances import (  # noqa: F401 (named here too)
    BATCH_NODE_CHECK_LIMIT,
    DEFAULT_ATOL,
    DEFAULT_RTOL,
    METHODS,
    NODE_CHECK_LIMIT,
)
from gradcli.limits import CHECK_BUDGET, VECTOR_CHECK_FACTOR

COMPLEX_STEP = 1e-100  # relative to max(1, |v|); see the module docstring
RICHARDSON_LEVELS = 15  # steps h0 ... h0 / 2^14: from max(1, |v|) / 8 down to ~eps^(1/3)
_RICHARDSON_FIRST_STEP = 0.125


@dataclass
class GradientCheck:
    """One gradient compared with its finite-difference estimate."""

    analytic: float
    numeric: float | None  # None when no difference could be evaluated (domain on both sides)
    abs_error: float | None
    tolerance: float
    ok: bool
    method: str  # "central", "forward", "backward", "complex" or "richardson"
    step: float
    error_estimate: float | None = None  # Richardson's estimate of its own error


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
    budget: int = CHECK_BUDGET,
) -> CheckReport:
    """Compare every gradient of an evaluated program (forward and backward done) with FD.

    ``method`` is one of ``METHODS`` (see the module docstring). A variable that the vectorised
    first pass does not settle costs two replays of the nodes downstream of it; the first
    variable is always checked, and once ``budget`` node recomputations are spent the remaining
    variables are listed in ``unchecked`` (a sum of 10^5 distinct variables would otherwise take
    hours).
    """
    if method not in METHODS:
        raise UsageError(f"unknown check method {method!r}", hint="use " + ", ".join(METHODS))
    nodes = program.nodes
    if method == "complex":
        _require_complex_forms(nodes)
    report = CheckReport(rtol, atol, method=method)
    replayer = Replayer(nodes)
    per_node = len(nodes) <= node_check_limit
    targets = [n for n in nodes if n.needs_grad] if per_node else list(program.variables.values())
    passed = {}
    if program.masked:  # a truth value's or a dead node's difference quotient means nothing
        live = liveness(nodes)
        targets = [n for n in targets
                   if (live[n.index] or n.is_leaf) and n.op.name not in LOGICAL]
        method_at_once = None
    else:
        method_at_once = method
    if method_at_once == "central":
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
    else:
        for node in targets:
            known = report.gradients.get(str(node.name)) if node.is_leaf else None
            report.nodes[node.index] = (
                known or passed.get(node.index) or check_node(replayer, node, rtol, atol, method))
    if replayer.switched and not report.ok:
        from gradcli.engine.graph import node_text  # only for this message

        report.boundaries = [node_text(nodes[i]) for i in sorted(replayer.switched)]
    return report


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
    chosen, spent = [], 0
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
    target in one vectorised replay (``column_replay.replay_columns``); only the checks that
    pass are returned, so anything else goes through ``check_node`` as before (smaller steps,
    one-sided differences near a domain edge, the exact scalar message)."""
    work = len(targets) * len(program.nodes)
    if work < _COLUMNS_IF_LOADED or (work < _COLUMNS_ALWAYS and "numpy" not in sys.modules):
        return {}
    from gradcli.gradcheck.columns import replay_columns

    steps = [base_step(node.value) for node in targets]
    pinned = [node.index for node in targets] * len(CENTRAL.offsets)
    shifted = [node.value + offset * h for offset in CENTRAL.offsets
               for node, h in zip(targets, steps, strict=True)]
    replayed = replay_columns(program, pinned, shifted)
    outputs, largest = replayed.output.tolist(), replayed.largest.tolist()
    f0, count, passed = program.nodes[-1].value, len(targets), {}
    for k, (node, h) in enumerate(zip(targets, steps, strict=True)):
        most = max(largest[k], largest[k + count], abs(f0))
        if not math.isfinite(most):
            continue
        numeric = quotient(CENTRAL, (outputs[k], outputs[k + count]), h)
        if not math.isfinite(numeric):  # overflowed: check_node tries the one-sided differences
            continue
        error, allowed, agrees, _ = judge(node.grad, numeric, most, h, 0, rtol, atol)
        if agrees:
            passed[node.index] = GradientCheck(
                node.grad, numeric, error, allowed, True, CENTRAL.method, h)
    return passed


def check_node(
    replayer: Replayer, node: Node, rtol: float, atol: float, method: str = "central"
) -> GradientCheck:
    """d(output)/d(node) by ``method``, compared with ``node.grad`` (``replayer`` replays the
    graph ``node`` belongs to)."""
    if method == "complex":
        return complex_step_check(replayer, node, rtol, atol)
    if method == "richardson":
        return richardson_check(replayer, node, rtol, atol)
    analytic, base = node.grad, base_step(node.value)
    tried: list[GradientCheck] = []
    for shrink in range(SHRINKS + 1):
        h = step(base, shrink)
        estimate = _difference(replayer, node, h)
        if estimate is None:
            tried.append(GradientCheck(analytic, None, None, 0.0, False, "none", h))
            continue
        numeric, method, largest = estimate
        error, allowed, agrees, swamped = judge(analytic, numeric, largest, h, shrink, rtol, atol)
        if swamped:
            break
        check = GradientCheck(analytic, numeric, error, allowed, agrees, method, h)
        if agrees:
            return check
        tried.append(check)
    return min(tried, key=lambda c: math.inf if c.abs_error is None else c.abs_error)


def _difference(replayer: Replayer, node: Node, h: float) -> tuple[float, str, float] | None:
    """(estimate, method, largest magnitude) by the first stencil that evaluates, or None."""
    for stencil in STENCILS:
        estimate = _apply(replayer, node, stencil, h)
        if estimate is not None:
            return estimate[0], stencil.method, estimate[1]
    return None


def _apply(
    replayer: Replayer, node: Node, stencil: Stencil, h: float
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
    replayer: Replayer, node: Node, rtol: float, atol: float
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
    replayer: Replayer, node: Node, rtol: float, atol: float
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
    replayer: Replayer, node: Node
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
