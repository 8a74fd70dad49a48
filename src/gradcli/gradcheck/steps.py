"""The finite-difference step policy, written once for one point (floats) and many (arrays).

For a value v, the derivative is estimated by the central difference (f(v + h) - f(v - h)) / 2h
with h = eps^(1/3) * max(1, |v|) (the step that balances truncation error, O(h^2), against
rounding error, O(eps/h)). Where v - h or v + h leaves the domain (sqrt near 0), or the difference
overflows, a second-order one-sided difference is used instead (``STENCILS``, tried in order).

An estimate passes when |analytic - numeric| <= atol + rtol * max(|analytic|, |numeric|) + noise,
where noise = 16 * eps * M / h is the rounding error the difference itself can carry (M is the
largest magnitude among the recomputed values): without it, ``1e8 + x`` would "fail" because the
difference quotient of numbers near 1e8 cannot resolve 1e-8. If a step disagrees, a step 16 times
smaller is tried (its truncation error is 256 times smaller; the noise allowance grows with 1/h),
up to ``SHRINKS`` times and never past the step where the noise allowance alone would exceed the
user's tolerance (the step is "swamped": the allowance could then wave a wrong gradient through).
A value smaller than every such step gets one more, at its own scale (``steps_for``).
Thus sqrt(x) at x = 1e-7 -- a function that changes on a scale far below h -- is not reported as
a wrong gradient, while a wrong gradient disagrees at every step.

Every function here works on floats and, elementwise, on NumPy arrays (pass ``numpy.maximum`` as
``maximum``): ``differences.check_node`` applies the policy to one node, ``settle`` to many
entries at once (the points of a sweep, a column of a Hessian), and the two agree entry by
entry. They differ only in how they evaluate f at the shifted points and in how they keep track
of which entries still need a smaller step.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from gradcli.engine.ops import numpy

if TYPE_CHECKING:
    from gradcli.engine.node import Node

EPS = sys.float_info.epsilon
SHRINKS = 8  # smaller steps tried after a disagreement: down to h / 16**8
_SHRINK_FACTOR = 16.0
_NOISE_FACTOR = 16.0
_CUBE_ROOT_EPS = EPS ** (1.0 / 3.0)


class Stencil(NamedTuple):
    """f'(v) ~ (sum of weight * f(v + offset * h)) / 2h, summed in the order listed.

    An offset of 0 stands for f(v), which is known and not evaluated again. The order of the
    terms is part of the formula: it fixes the rounding, so every caller gets the same bits.
    """

    method: str  # the name a verdict reports
    offsets: tuple[float, ...]
    weights: tuple[float, ...]


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
    """The steps one value's check tries in turn, made as they are needed (most checks agree at
    the first): ``step(base_step(value), k)`` for k = 0 ... ``SHRINKS`` and, for a value far
    below them, last one at its own scale, eps^(1/3) * |value|: a function of tiny operands
    (``norm`` at 1e-200) changes on that scale, which the others never reach, while one that
    needs an absolute step (``x + 1``) has agreed before it."""
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
    """The stencil's estimate from ``samples``, f at v + offset * h for each of its offsets.

    A result that is not finite (the difference overflowed, values near 1e308) is no estimate:
    the caller tries the next stencil, as it does when a shifted point is outside the domain.
    """
    weights = stencil.weights
    total = weights[0] * samples[0]
    for k in range(1, len(weights)):
        total = total + weights[k] * samples[k]
    return total / (2.0 * h)


def noise_allowance(largest: Any, h: Any) -> Any:
    """Rounding error a difference quotient of values up to ``largest`` at step ``h`` can carry."""
    return _NOISE_FACTOR * EPS * largest / h


def tolerance(
    analytic: Any, numeric: Any, rtol: float, atol: float, noise: Any = 0.0,
    maximum: Callable[[Any, Any], Any] = max,
) -> Any:
    """atol + rtol * max(|analytic|, |numeric|) + noise: how far apart two gradients may be.

    ``maximum`` is ``max`` for floats and ``numpy.maximum`` for arrays.
    """
    return atol + rtol * maximum(abs(analytic), abs(numeric)) + noise


def judge(
    analytic: Any, numeric: Any, largest: Any, h: Any, shrink: int, rtol: float, atol: float,
    maximum: Callable[[Any, Any], Any] = max,
) -> tuple[Any, Any, Any, Any]:
    """(error, tolerance, agrees, swamped) of the estimate ``numeric`` at step ``h``.

    ``largest`` is the largest magnitude the difference saw. ``swamped``: a smaller step is only
    evidence while its noise allowance stays below the user's tolerance; past that the allowance
    alone could wave a wrong gradient through, so the caller stops shrinking and keeps the
    closest earlier estimate. The estimate is accepted when it agrees and is not swamped.
    """
    error = abs(analytic - numeric)
    noise = noise_allowance(largest, h)
    allowed = tolerance(analytic, numeric, rtol, atol, noise, maximum)
    swamped = (shrink > 0) & (noise > allowed - noise)
    return error, allowed, error <= allowed, swamped


# --- what a step policy perturbs and replays ------------------------------------------------------

class Perturbed(Protocol):
    """What the step policies read of the node (or array element) they perturb."""

    @property
    def value(self) -> Any: ...
    @property
    def grad(self) -> Any: ...
    @property
    def index(self) -> int: ...


class Replays(Protocol):
    """The output's value with one perturbed value (``replay.Replayer`` on floats,
    ``columns.ElementReplayer`` for an element of an array)."""

    @property
    def nodes(self) -> list[Node]: ...
    @property
    def switched(self) -> set[int]: ...  # conditions a replay turned over, by node index
    def replay(self, index: int, value: Any, complex_step: bool = False
               ) -> tuple[Any, float]: ...


# --- the policy for many entries at once ---------------------------------------------------------

class Estimates(NamedTuple):
    """Entries checked at once (``settle``), one array each: the estimate (NaN: none), its error
    (inf: none), the tolerance, the verdict, the stencil (an index into ``STENCILS``; -1: none)
    and the step."""

    numeric: Any
    error: Any
    tolerance: Any
    ok: Any
    stencil: Any
    step: Any

    @classmethod
    def empty(cls, shape: Any) -> Estimates:
        """Entries not estimated yet."""
        np = numpy()
        return cls(np.full(shape, np.nan), np.full(shape, np.inf), np.zeros(shape),
                   np.zeros(shape, dtype=bool), np.full(shape, -1, dtype=np.int8),
                   np.zeros(shape))


# f at entries ``rows`` moved by offset * h (h: one step per row): the values, the largest
# magnitude each one's evaluation saw, and where it failed (outside the domain)
Sample = Callable[[Any, float, Any], tuple[Any, Any, Any]]


def settle(analytic: Any, base: Any, f0: Any, sample: Sample, rows: Any, rtol: float,
           atol: float, judged: Callable[..., None] | None = None,
           own: Any = None) -> Estimates:
    """``differences.check_node``'s policy for the entries ``rows`` at once (the points of a
    sweep, a column of a Hessian), each at its own first step ``base``, then 16 times smaller
    after a disagreement: the first stencil that evaluates (``first_stencil``), an entry settled
    as soon as it agrees, a swamped step ending its search; an entry that never agrees keeps its
    closest estimate. ``f0`` is f at every entry; ``judged(rows, h, shrink, estimate, error,
    tolerance, largest, stencil)`` sees each step's verdicts. ``own``: each entry's
    ``own_step``, tried last where it is below the smallest shrink (as ``steps_for``)."""
    np = numpy()
    found = Estimates.empty(np.shape(analytic))
    for shrink in range(SHRINKS + 1 + (own is not None)):
        if shrink > SHRINKS:
            rows = rows[(own[rows] > 0) & (own[rows] < step(base[rows], SHRINKS))]
        if not rows.size:
            break
        h = step(base[rows], shrink) if shrink <= SHRINKS else own[rows]
        numeric, largest, stencils = first_stencil(sample, f0, rows, h)
        with np.errstate(invalid="ignore"):
            error, allowed, agrees, swamped = judge(
                analytic[rows], numeric, largest, h, shrink, rtol, atol, np.maximum)
            good = agrees & ~swamped
            better = good | (~swamped & (np.nan_to_num(error, nan=np.inf) < found.error[rows]))
            if judged is not None:
                judged(rows, h, shrink, numeric, error, allowed, largest, stencils)
        keep = rows[better]
        found.numeric[keep] = numeric[better]
        found.error[keep] = np.nan_to_num(error[better], nan=np.inf)
        found.tolerance[keep] = allowed[better]
        found.ok[keep] = good[better]
        found.stencil[keep] = stencils[better]
        found.step[keep] = h[better]
        rows = rows[~(good | swamped)]
    return found


def first_stencil(sample: Sample, f0: Any, rows: Any, h: Any) -> tuple[Any, Any, Any]:
    """(estimate, largest magnitude, stencil index) at ``rows`` by the first stencil that
    evaluates at each (as ``differences._difference`` at one point); NaN and -1 where none does."""
    np = numpy()
    estimate = np.full(rows.size, np.nan)
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
        todo = todo[~done]
    return estimate, largest, used
