"""One node's (or one element's, or one direction's) gradient against finite differences.

``check_node`` perturbs one value, the ``value`` of a ``perturbing.Perturbed``, through a
``perturbing.Replays`` that recomputes the output, and compares the difference quotient with the
``grad``: central differences with the step policy of gradcheck/steps.py, and, asked by name,
two more methods. Everything that checks a gradient by finite differences -- a float program's
nodes (``replay.Replayer``), an array's elements (``columns.ElementReplayer``), an array along a
random direction (``directions.DirectionReplayer``), sweeps and Hessians -- goes through it, so
there is one step policy, one tolerance and one verdict, a ``GradientCheck``.

The two methods asked for by name (``method=``, ``--check-method``); each verdict records the
one it used:
- ``complex``: complex-step differentiation, Im f(v + ih) / h, evaluated with the op table's
  ``complex`` form. No difference of nearby values is taken: no cancellation, no rounding-noise
  allowance (the tolerance is atol + rtol * max(|analytic|, |numeric|)). The only error is
  truncation, about (h/L)^2 / 6 relative, L the scale on which f changes: invisible for any L
  above ~1e-92 with h = 1e-100 * max(1, |v|) (|v| itself below 1, down to 1e-150:
  ``complex_scale``), which is no smaller so that the imaginary parts carried through the graph
  stay normal floats; one that underflows all the same (x*y at 1e-300) is no estimate, and the
  central check is used. At a kink (abs, relu at 0; min/max at a tie;
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
from dataclasses import dataclass, replace

from gradcli.engine.core_ops import LOGICAL
from gradcli.engine.graph import Node, Program, liveness
from gradcli.engine.ops import CONDITIONAL
from gradcli.errors import NumericError
from gradcli.gradcheck.steps import (
    CENTRAL,
    EPS,
    KINK_STEPS,
    STENCILS,
    Stencil,
    curve_alone,
    curved,
    judge,
    kink,
    quotient,
    slope_gap,
    steps_for,
    tolerance,
)
from gradcli.language.values import runs_on_arrays

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

    from gradcli.gradcheck.perturbing import Perturbed, Replays

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
    directions: int = 0  # random directions checked besides the elements (gradcheck/directions.py)

    def __init__(self, analytic: float, numeric: float | None, abs_error: float | None,
                 tolerance: float, ok: bool, method: str, step: float,
                 error_estimate: float | None = None, checked: int = 1, size: int = 1,
                 failed: int | None = None, where: tuple[int, ...] = (),
                 ill_conditioned: float | None = None, directions: int = 0) -> None:
        """The fields' own (``dataclass`` keeps it, and ``replace`` calls it), with ``failed``
        1 if not ok, else 0, unless given. Written out: compiled, a check is then made by a
        native call, where the one ``dataclass`` writes is interpreted (5 k instructions, 2% of
        a checked batch line)."""
        self.analytic = analytic
        self.numeric = numeric
        self.abs_error = abs_error
        self.tolerance = tolerance
        self.ok = ok
        self.method = method
        self.step = step
        self.error_estimate = error_estimate
        self.checked = checked
        self.size = size
        self.failed = (0 if ok else 1) if failed is None else failed
        self.where = where
        self.ill_conditioned = ill_conditioned
        self.directions = directions

    def record(self) -> dict[str, Any]:
        """The check's JSON record: the numbers of its worst element, at ``where`` (written as a
        list). Here, compiled, the fields are read as struct members (a batch line writes three
        or four of these)."""
        return {"analytic": self.analytic, "numeric": self.numeric, "abs_error": self.abs_error,
                "tolerance": self.tolerance, "ok": self.ok, "method": self.method,
                "error_estimate": self.error_estimate, "checked": self.checked,
                "size": self.size, "failed": self.failed, "where": self.where,
                "directions": self.directions}


def settled_check(grad: float, settled: Any) -> GradientCheck:
    """A central difference that agreed in a vectorised replay (``columns.Settled``), as the
    check that passed: the same verdict ``check_node`` gives it."""
    return GradientCheck(grad, settled.numeric, settled.abs_error, settled.tolerance, True,
                         CENTRAL.method, settled.step)


def check_node(
    replayer: Replays, node: Perturbed, rtol: float, atol: float, method: str = "central",
    extrapolate: bool = False,
) -> GradientCheck:
    """d(output)/d(node) by ``method``, compared with ``node.grad`` (``replayer`` replays the
    graph ``node`` belongs to). ``extrapolate``: a central failure gets ``_extrapolated``'s
    second opinion (a random direction of an array: directions.py)."""
    if method == "complex":
        return complex_step_check(replayer, node, rtol, atol)
    if method == "richardson":
        return richardson_check(replayer, node, rtol, atol)
    analytic = node.grad
    tried: list[GradientCheck] = []
    central: list[tuple[float, float, float]] = []  # (step, estimate, largest) that disagreed
    for shrink, h in enumerate(steps_for(node.value)):
        estimate = _difference(replayer, node, h)
        if estimate is None:
            tried.append(GradientCheck(analytic, None, None, 0.0, False, "none", h))
            continue
        numeric, method, largest, samples = estimate
        error, allowed, agrees, swamped = judge(analytic, numeric, largest, h, shrink, rtol, atol)
        if swamped:
            from gradcli.gradcheck.conditioning import ill_conditioned, settles_quietly

            earlier = [c.abs_error for c in tried if c.abs_error is not None]
            output = replayer.nodes[-1].value
            if settles_quietly(error, min(earlier, default=math.nan), agrees, largest, output):
                check = GradientCheck(analytic, numeric, error, allowed, True, method, h)
                return screened(replayer, node, check, samples[0], samples[1], largest)
            measured = ill_conditioned(error, earlier, agrees, largest, output)
            tried = [replace(c, ill_conditioned=measured) for c in tried] if measured else tried
            break
        check = GradientCheck(analytic, numeric, error, allowed, agrees, method, h)
        if agrees:
            if method != CENTRAL.method:
                return check
            return screened(replayer, node, check, samples[0], samples[1], largest)
        tried.append(check)
        if extrapolate and method == CENTRAL.method:
            central.append((h, numeric, largest))
    second = _extrapolated(analytic, central, rtol, atol) if extrapolate else None
    if second is not None:
        return second
    return min(tried, key=lambda c: math.inf if c.abs_error is None else c.abs_error)


def _extrapolated(analytic: float, central: list[tuple[float, float, float]], rtol: float,
                  atol: float) -> GradientCheck | None:
    """The passing verdict of Richardson's step from the last two central differences, or None.

    Along a random direction of a large array a difference sums the truncation error of
    hundreds of elements, and the noise allowance can stop the shrinking while that error is
    still above the tolerance (``sum(x*sin(x/s))``, s = 1e-3, 808 elements). When the last two
    differences, at steps h1 > h2, disagree by errors that fell at least h1/h2-fold (truncation
    falls as h^2), D(h2) + (D(h2) - D(h1)) / ((h1/h2)^2 - 1) cancels the h^2 term from replays
    already made: no step beyond those is taken. It is held to the tolerance of step h2 (its
    noise is D(h2)'s, 0.4% more), so a wrong gradient disagrees with it as with the differences.
    """
    if len(central) < 2:
        return None
    (h1, d1, _), (h2, d2, largest) = central[-2:]
    ratio = h1 / h2
    if ratio <= 1.0 or abs(analytic - d2) * ratio > abs(analytic - d1):
        return None
    numeric = d2 + (d2 - d1) / (ratio * ratio - 1.0)
    error, allowed, agrees, _ = judge(analytic, numeric, largest, h2, 0, rtol, atol)
    if not agrees:
        return None
    return GradientCheck(analytic, numeric, error, allowed, True, "richardson", h2,
                         abs(numeric - d2))


def screened(replayer: Replays, node: Perturbed, check: GradientCheck, up: Any, down: Any,
             largest: Any) -> GradientCheck:
    """``check``, a central difference that agreed, or the failure a kink at the node's value
    makes of it (steps.py's ``curved`` and ``kink``): abs(x) at 0 fails as relu(x) does, with
    the slope of the side farther from the gradient. A kink a step away, not at the value, is
    no kink there: the smaller steps stay on one side of it."""
    h, f0 = check.step, replayer.nodes[-1].value
    if not curved(up, down, f0, h, check.tolerance):
        return check
    v, index = node.value, node.index
    jumps, left, right = [], 0.0, 0.0
    for fraction in KINK_STEPS:
        small = h * fraction
        try:
            right = (replayer.replay(index, v + small)[0] - f0) / small
            left = (f0 - replayer.replay(index, v - small)[0]) / small
        except NumericError:
            return check
        jumps.append(abs(right - left))
        if len(jumps) == 1 and curve_alone(slope_gap(up, down, f0, h), right - left,
                                           check.tolerance):
            return check  # a curve
    if not kink(jumps, check.tolerance, largest, h):
        return check
    analytic = check.analytic
    side = right if abs(right - analytic) >= abs(left - analytic) else left
    return replace(check, numeric=side, abs_error=abs(side - analytic), ok=False, failed=1,
                   method="one-sided", step=h * KINK_STEPS[-1])


def _difference(replayer: Replays, node: Perturbed,
                h: float) -> tuple[float, str, float, list[Any]] | None:
    """(estimate, method, largest rounding scale, the samples) by the first stencil that
    evaluates, or None."""
    for stencil in STENCILS:
        estimate = _apply(replayer, node, stencil, h)
        if estimate is not None:
            return estimate[0], stencil.method, estimate[1], estimate[2]
    return None


def _apply(
    replayer: Replays, node: Perturbed, stencil: Stencil, h: float
) -> tuple[float, float, list[Any]] | None:
    """(estimate, largest rounding scale among f(v) and the recomputed values, the samples), or
    None where a shifted point is outside the domain or the estimate is not finite."""
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
    return (estimate, largest, samples) if math.isfinite(estimate) else None


# --- complex step and Richardson extrapolation ---------------------------------------------------

def complex_scale(size: float) -> float:
    """What the complex step is relative to: max(1, |v|), and |v| itself below 1 (down to
    1e-150): log(x) at 1e-120 changes on the scale of x, and a step of 1e-100 there is no
    derivative (Im log(x + ih) / h = atan(h/x) / h = pi/2 / h)."""
    return max(size, 1e-150) if 0.0 < size < 1.0 else max(1.0, size)


def complex_step_check(
    replayer: Replays, node: Perturbed, rtol: float, atol: float
) -> GradientCheck:
    """d(output)/d(node) = Im f(v + ih) / h: no subtraction, so no rounding-noise allowance."""
    analytic = node.grad
    h = COMPLEX_STEP * complex_scale(abs(node.value))
    underflowed = False
    try:
        output, _ = replayer.replay(node.index, complex(node.value, h), complex_step=True)
        numeric = output.imag / h
        underflowed = abs(output.imag) < sys.float_info.min  # x*y at 1e-300: h y is below 1e-308
    except NumericError:  # the complex evaluation overflowed where the real one did not
        numeric = math.nan
    if not math.isfinite(numeric):  # no estimate (an overflowed Im f / h: inf <= inf passes)
        return check_node(replayer, node, rtol, atol)  # the verdict says "central" (or one-sided)
    error = abs(analytic - numeric)
    allowed = tolerance(analytic, numeric, rtol, atol)
    if underflowed and not error <= allowed:  # an underflowed Im f is no estimate to fail by
        return check_node(replayer, node, rtol, atol)
    return GradientCheck(analytic, numeric, error, allowed, error <= allowed, "complex", h)


def richardson_check(
    replayer: Replays, node: Perturbed, rtol: float, atol: float
) -> GradientCheck:
    """d(output)/d(node) by Richardson extrapolation of central differences (module docstring)."""
    best = richardson_estimate(replayer, node)
    if best is None or not math.isfinite(best[0]):  # an overflowed table is no estimate
        return check_node(replayer, node, rtol, atol)  # the verdict says "forward", "central"...
    numeric, estimate, h, largest = best
    error, allowed, agrees, _ = judge(node.grad, numeric, largest, h, 0, rtol, atol)
    return GradientCheck(node.grad, numeric, error, allowed, agrees, "richardson", h, estimate)


def richardson_estimate(
    replayer: Replays, node: Perturbed
) -> tuple[float, float, float, float] | None:
    """(estimate, its error estimate, smallest step used, largest rounding scale), or None.

    Row k holds T[k][...] (module docstring). An entry's error estimate is never less than the
    rounding error of its row's differences (eps * M / h): otherwise a lucky cancellation at a
    tiny step would win.
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


def meaningful(targets: list[Node], live: list[bool], nodes: list[Node],
               outputs: list[Node] | None = None) -> list[Node]:
    """The ``targets`` of a program with a conditional whose difference quotient means
    something (a variable's always does): none of a node in a branch not taken, of a truth
    value (moved off 0 or 1, every condition it feeds switches), or of a node that the
    ``outputs`` (default: the last node) read only through conditions (x*y in
    where(x*y != 0, ..., 1): moved, it switches the condition, not the value)."""
    valued = [False] * len(nodes)
    for output in outputs or nodes[-1:]:
        valued[output.index] = True
    for node in reversed(nodes):
        if valued[node.index] and node.op not in LOGICAL:
            for source in node.inputs[1:] if node.op is CONDITIONAL else node.inputs:
                valued[source.index] = True
    return [node for node in targets if node.is_leaf or (
        live[node.index] and valued[node.index] and node.op not in LOGICAL)]


def live_in(program: Program) -> list[Any] | None:
    """Which nodes of an evaluated program with a conditional are live at its point (None
    without one): ``graph.liveness``, or, evaluated on arrays (``runs_on_arrays`` at its
    variables' values: diff's sample points too), ``masks.live_nodes`` (True, False or a
    boolean array of the elements)."""
    if not program.masked:
        return None
    if runs_on_arrays(program, {name: node.value for name, node in program.variables.items()}):
        from gradcli.engine.masks import live_nodes  # with NumPy: scalar programs never load it

        return live_nodes(program.nodes, program.outputs)
    return liveness(program.nodes)
