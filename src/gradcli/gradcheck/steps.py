"""The finite-difference step policy, written once for one point (floats) and many (arrays).

The central difference (f(v + h) - f(v - h)) / 2h with h = eps^(1/3) * max(1, |v|), which
balances truncation (O(h^2)) against rounding (O(eps/h)); a second-order one-sided difference
where a shifted point leaves the domain or the difference overflows (``STENCILS``, in order). An
estimate passes when |analytic - numeric| <= atol + rtol * max(|analytic|, |numeric|) + noise,
noise = 16 eps M / h being the rounding the difference can carry (M: the largest
|v| min(1, |df/dv|) among the values it recomputed, ``replay.rounding_weight``), so that
``1e8 + x`` does not "fail" while exp(40) inside a sigmoid at -40 allows no wrong gradient.
After a disagreement a step 16 times smaller is tried, up to ``SHRINKS`` times and never past
the step where the noise allowance alone would exceed the tolerance ("swamped"); then one at the
value's own scale (``steps_for``). So sqrt(x) at 1e-7 is not a wrong gradient, while a wrong
gradient disagrees at every step. ``differences.check_node`` applies the policy to one node,
``settle`` to many entries at once; the two agree entry by entry.
"""

from __future__ import annotations

import math
import sys
from collections import namedtuple
from collections.abc import Callable, Iterator, Sequence
from itertools import pairwise

from gradcli.engine.ops import numpy

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

    from gradcli.gradcheck.perturbing import Sample

EPS = sys.float_info.epsilon
SHRINKS = 8  # smaller steps tried after a disagreement: down to h / 16**8
_SHRINK_FACTOR = 16.0
_NOISE_FACTOR = 16.0
_CUBE_ROOT_EPS = EPS ** (1.0 / 3.0)


# f'(v) ~ (sum of weight * f(v + offset * h)) / 2h, summed in the order listed (which fixes the
# rounding: every caller gets the same bits); offset 0 is f(v), known already. ``method``: the
# name a verdict reports; ``offsets``, ``weights``: tuples of floats. (A ``typing.NamedTuple``
# would import typing at every start of gradcli; a class over ``namedtuple`` is not compiled.
# ``module``: compiled, namedtuple would take importlib's for it, and pickle would fail.)
Stencil = namedtuple("Stencil", ("method", "offsets", "weights"), module=__name__)


CENTRAL = Stencil("central", (1.0, -1.0), (1.0, -1.0))
STENCILS = (
    CENTRAL,
    # second-order one-sided differences: (-3 f(v) + 4 f(v ± h) - f(v ± 2h)) / ±2h
    Stencil("forward", (1.0, 2.0, 0.0), (4.0, -1.0, -3.0)),
    Stencil("backward", (0.0, -1.0, -2.0), (3.0, -4.0, 1.0)),
)


def base_step(value: Any, maximum: Callable[[Any, Any], Any] = max) -> Any:
    """eps^(1/3) * max(1, |value|): the first step tried."""
    return _CUBE_ROOT_EPS * maximum(1.0, abs(value))


def step(base: Any, shrink: int) -> Any:
    """The step after ``shrink`` disagreements (0 ... ``SHRINKS``): 16 times smaller each."""
    return base / _SHRINK_FACTOR**shrink


def steps_for(value: float) -> Iterator[float]:
    """The steps one value's check tries in turn, made as needed: ``step(base_step(value), k)``
    for k = 0 ... ``SHRINKS``, then, for a value far below them, its ``own_step`` (a function
    of tiny operands, ``norm`` at 1e-200, changes on that scale)."""
    base = h = base_step(value)
    for shrink in range(SHRINKS + 1):
        h = step(base, shrink)
        yield h
    own = own_step(value)
    if 0.0 < own < h:
        yield own


def own_step(value: Any) -> Any:
    """eps^(1/3) * |value|: the step at a value's own scale, tried last (``steps_for``)."""
    return _CUBE_ROOT_EPS * abs(value)


def quotient(stencil: Stencil, samples: Sequence[Any], h: Any) -> Any:
    """The stencil's estimate from ``samples``, f at v + offset * h for each of its offsets
    (a result that is not finite is no estimate: the caller tries the next stencil)."""
    weights = stencil.weights
    total = weights[0] * samples[0]
    for k in range(1, len(weights)):
        total = total + weights[k] * samples[k]
    return total / (2.0 * h)


def noise_allowance(largest: Any, h: Any) -> Any:
    """Rounding error a difference quotient at step ``h`` can carry, ``largest`` being the
    largest rounding scale |v| |df/dv| among the values it recomputed."""
    return _NOISE_FACTOR * EPS * largest / h


def rounding_swamps(allowance: Any, share: Any) -> Any:
    """Where the rounding a difference carries, the ``noise_allowance`` without its margin of
    ``_NOISE_FACTOR``, is above the tolerance's own ``share``: a wrong value would pass too."""
    return allowance / _NOISE_FACTOR > share


def tolerance(
    analytic: Any, numeric: Any, rtol: float, atol: float, noise: Any = 0.0,
    maximum: Callable[[Any, Any], Any] = max,
) -> Any:
    """atol + rtol * max(|analytic|, |numeric|) + noise: how far apart two gradients may be
    (``maximum``: ``max`` for floats, ``numpy.maximum`` for arrays)."""
    return atol + rtol * maximum(abs(analytic), abs(numeric)) + noise


def judge(
    analytic: Any, numeric: Any, largest: Any, h: Any, shrink: int, rtol: float, atol: float,
    maximum: Callable[[Any, Any], Any] = max,
) -> tuple[Any, Any, Any, Any]:
    """(error, tolerance, agrees, swamped) of the estimate ``numeric`` at step ``h``
    (``largest``: the largest rounding scale the difference saw). Swamped: the noise allowance
    alone could wave a wrong gradient through, so the caller stops shrinking."""
    error = abs(analytic - numeric)
    noise = noise_allowance(largest, h)
    allowed = tolerance(analytic, numeric, rtol, atol, noise, maximum)
    swamped = (shrink > 0) & (noise > allowed - noise)
    # an infinite gradient makes the allowance infinite: it never agrees
    return error, allowed, (error <= allowed) & (error < math.inf), swamped


# --- a kink a central difference averages over -------------------------------------------------
# A central difference averages the slopes on the two sides of the point: at a kink, abs(x) at
# 0, it gives their mean, the rules' convention abs'(0) = 0, and so would call it checked where
# relu(x) at 0 fails. Its own two replays tell where to look: their one-sided slopes differ by
# about h f''(v) on a curve, by the jump at a kink (``curved``); smaller pairs then decide
# (``kink``): a kink's jump stays, a curve's shrinks with the step. Every check screens its
# central agreements so (differences.screened, settle, the columns' first passes). The smaller
# pairs' steps, relative to the central difference's, each a tenth of the one before (``kink``
# reads the jump with a curve's part taken out by that ratio): a feature of the curve below the
# smallest of them (hypot(x, 1e-10) at 0) looks like a kink.
KINK_STEPS = (0.1, 0.01, 1e-3, 1e-4)


def curved(up: Any, down: Any, f0: Any, h: Any, allowed: Any) -> Any:
    """Where f(v + h) = ``up`` and f(v - h) = ``down`` have one-sided slopes so far apart that
    one of them is outside the allowance of a gradient between them (NaN: nowhere): only
    there can a kink make the verdict wrong (2000*x + abs(x) at 0: 1999 and 2001, the rule's
    2000). Most such points are curves, told apart by one smaller pair (``curve_alone``)."""
    return abs(slope_gap(up, down, f0, h)) > 2.0 * allowed


def slope_gap(up: Any, down: Any, f0: Any, h: Any) -> Any:
    """The right one-sided slope, of f(v + h) = ``up``, less the left one, of f(v - h) =
    ``down``: about h f''(v) on a curve, the jump itself at a kink."""
    return (up - f0) / h - (f0 - down) / h


def curve_alone(gap: Any, smaller: Any, allowed: Any) -> Any:
    """Where the slopes' gaps at the central step (``gap``) and at the first of ``KINK_STEPS``
    (``smaller``) are a curve's alone. Beside a kink of jump K the gap at a step t is about
    K + c t, so (smaller - 0.1 gap) / 0.9 is K: where it is within twice the allowance, both
    sides agree with a gradient between them (abs(x) + 1.6e6*x**2 at 0 keeps its K = 2). The
    looks end there for most points (W2: 1,677 looks in 3,000 programs), with one pair of
    replays; the others go on to ``kink``."""
    fraction = KINK_STEPS[0]
    return abs(smaller - fraction * gap) <= 2.0 * (1.0 - fraction) * allowed


def kink(jumps: Sequence[Any], allowed: Any, largest: Any, h: Any) -> Any:
    """Where the one-sided slopes' jumps at the ``KINK_STEPS`` (of central step ``h``, each a
    tenth of the one before) are a kink's. Beside a kink of jump K a jump at step t is about
    K + c t, so each pair estimates K as (after - 0.1 before) / 0.9, and a curve's estimates
    are 0: the estimates must hold within a factor 2 of each other (a tiny feature's change as
    the steps reach it) up to the smallest step whose rounding leaves one above the allowance
    (at a value of 1e5, abs(x)'s jump of 2 is below the rounding of the smallest step, not of
    the one before). So 0.01*abs(w) + (300*w - 1)**2 at 0, whose curve makes the first jumps
    shrink tenfold (c = 9e4, K = 0.02), is a kink, as it is."""
    estimates = [(after - 0.1 * before) / 0.9 for before, after in pairwise(jumps)]
    steady: Any = True  # (or an array of them: typed so that compiled, it may be one)
    found: Any = False
    for k, (before, estimate) in enumerate(pairwise(estimates), start=2):
        steady = steady & (estimate > 0.5 * before) & (estimate < 2.0 * before)
        noise = noise_allowance(largest, h * KINK_STEPS[k])  # the pair's smaller step's
        found = found | (steady & (estimate > allowed + 4.0 * noise))
    return found


# --- the policy for many entries at once ---------------------------------------------------------

# Entries checked at once (``settle``), one array each: the estimate (NaN: none), its error (inf:
# none), the tolerance, the verdict, the stencil (an index into ``STENCILS``; -1: none) and the
# step.
Estimates = namedtuple("Estimates", ("numeric", "error", "tolerance", "ok", "stencil", "step"),
                       module=__name__)


def no_estimates(shape: Any) -> Estimates:
    """Entries not estimated yet."""
    np = numpy()
    return Estimates(np.full(shape, np.nan), np.full(shape, np.inf), np.zeros(shape),
                     np.zeros(shape, dtype=bool), np.full(shape, -1, dtype=np.int8),
                     np.zeros(shape))


def settle(analytic: Any, base: Any, f0: Any, sample: Sample, rows: Any, rtol: float,
           atol: float, judged: Callable[..., None] | None = None,
           own: Any = None) -> Estimates:
    """``differences.check_node``'s policy for the entries ``rows`` at once, each from its own
    first step ``base``: settled when it agrees, ended when swamped, else keeping its closest
    estimate. ``f0`` is f at every entry; ``judged(rows, h, shrink, estimate, error, tolerance,
    largest, stencil)`` sees each step; ``own``: each entry's ``own_step``, tried last."""
    from gradcli.gradcheck.conditioning import settles_quietly

    np = numpy()
    found = no_estimates(np.shape(analytic))
    for shrink in range(SHRINKS + 1 + (own is not None)):
        if shrink > SHRINKS:
            rows = rows[(own[rows] > 0) & (own[rows] < step(base[rows], SHRINKS))]
        if not rows.size:
            break
        h = step(base[rows], shrink) if shrink <= SHRINKS else own[rows]
        numeric, largest, stencils, central = first_stencil(sample, f0, rows, h)
        with np.errstate(invalid="ignore"):
            error, allowed, agrees, swamped = judge(
                analytic[rows], numeric, largest, h, shrink, rtol, atol, np.maximum)
            good = agrees & ~swamped | swamped & settles_quietly(
                error, found.error[rows], agrees, largest, f0[rows])
            kinks, sides = _kinks(sample, f0, rows, h, good & curved(
                                      central[0], central[1], f0[rows], h, allowed),
                                  analytic[rows], allowed, largest,
                                  slope_gap(central[0], central[1], f0[rows], h))
            numeric = np.where(kinks, sides, numeric)
            error = np.where(kinks, np.abs(sides - analytic[rows]), error)
            good, swamped = good & ~kinks, swamped | kinks  # a kink's verdict is final
            better = good | kinks | (
                ~swamped & (np.nan_to_num(error, nan=np.inf) < found.error[rows]))
            if judged is not None:
                judged(rows, h, shrink, numeric, error, allowed, largest, stencils)
        keep = rows[better]
        tried = Estimates(numeric, np.nan_to_num(error, nan=np.inf), allowed, good, stencils, h)
        for whole, part in zip(found, tried, strict=True):  # each field where this step is better
            whole[keep] = part[better]
        rows = rows[~(good | swamped)]
    return found


def _kinks(sample: Sample, f0: Any, rows: Any, h: Any, flagged: Any, analytic: Any,
           allowed: Any, largest: Any, gap: Any) -> tuple[Any, Any]:
    """(where, the side's slope farther from ``analytic``) the ``flagged`` of ``rows`` have
    a kink (``kink``), as ``differences.screened`` finds one at one point: a row whose gap at
    the first smaller pair is the central step's ``gap`` of a curve alone (``curve_alone``)
    needs no more pairs."""
    np = numpy()
    found, sides = np.zeros(rows.size, dtype=bool), np.full(rows.size, np.nan)
    at = np.flatnonzero(flagged)
    jumps: list[Any] = []
    for fraction in KINK_STEPS:
        if not at.size:
            return found, sides
        small, base = h[at] * fraction, f0[rows[at]]
        up, _, bad_up = sample(rows[at], 1.0, small)
        down, _, bad_down = sample(rows[at], -1.0, small)
        with np.errstate(all="ignore"):
            right, left = (up - base) / small, (base - down) / small
            steady = ~(bad_up | bad_down | ~np.isfinite(right) | ~np.isfinite(left))
            if not jumps:  # the curves end here; the rest go on
                steady &= ~curve_alone(gap[at], right - left, allowed[at])
        jumps = [j[steady] for j in jumps] + [np.abs(right - left)[steady]]
        at, right, left = at[steady], right[steady], left[steady]
    found[at] = kink(jumps, allowed[at], largest[at], h[at])
    farther = np.abs(right - analytic[at]) >= np.abs(left - analytic[at])
    sides[at] = np.where(farther, right, left)
    return found, sides


def first_stencil(sample: Sample, f0: Any, rows: Any, h: Any) -> tuple[Any, Any, Any, Any]:
    """(estimate, largest rounding scale, stencil index, the central stencil's f(v + h) and
    f(v - h) as two rows) at ``rows`` by the first stencil that evaluates at each (as
    ``differences._difference`` at one point); NaN and -1 where none does (the last: NaN where
    the central one did not)."""
    np = numpy()
    estimate = np.full(rows.size, np.nan)
    central = np.full((2, rows.size), np.nan)
    used = np.full(rows.size, -1, dtype=np.int8)
    largest = np.abs(f0[rows])
    todo = np.arange(rows.size)
    for index, stencil in enumerate(STENCILS):
        if not todo.size:
            break
        samples, reach = [], largest[todo]
        bad = np.zeros(todo.size, dtype=bool)
        for offset in stencil.offsets:
            if offset:
                value, magnitude, failed = sample(rows[todo], offset, h[todo])
                reach, bad = np.maximum(reach, magnitude), bad | failed
            else:
                value = f0[rows[todo]]
            samples.append(value)
        with np.errstate(over="ignore", invalid="ignore"):  # overflow: not finite, not done
            quotients = quotient(stencil, samples, h[todo])
        done = ~bad & np.isfinite(quotients)
        at = todo[done]
        estimate[at] = quotients[done]
        largest[at] = reach[done]
        used[at] = index
        if stencil is CENTRAL:
            central[:, at] = np.asarray(samples)[:, done]
        todo = todo[~done]
    return estimate, largest, used, central


def central_agrees(grad: float, up: float, down: float, most: float, h: float, rtol: float,
                   atol: float) -> tuple[float, float, float] | None:
    """The central difference of f(v + h) = ``up`` and f(v - h) = ``down``, its error and its
    allowance, if it agrees with ``grad``; None if not, or if it or ``most`` is not finite (an
    infinite magnitude would allow anything: ``differences.check_node`` then decides).

    On floats alone: ``quotient`` (CENTRAL's weights, 1 and -1) and ``judge`` (at shrink 0)
    written out, the same operations in the same order, so that compiled each number stays a
    C double (boxed, through the functions that serve arrays too, they were a tenth of a batch
    line's check); a test compares the two bit for bit."""
    numeric = (up - down) / (2.0 * h)
    if not (math.isfinite(most) and math.isfinite(numeric)):
        return None
    error = abs(grad - numeric)
    noise = _NOISE_FACTOR * EPS * most / h
    larger, other = abs(grad), abs(numeric)
    if other > larger:  # max(larger, other), as ``tolerance`` takes it
        larger = other
    allowed = atol + rtol * larger + noise
    return (numeric, error, allowed) if error <= allowed and error < math.inf else None
