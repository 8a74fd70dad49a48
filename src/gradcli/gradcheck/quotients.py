"""Difference quotients of any function of a point, the reference diff's check compares printed
derivatives with (gradcheck/derivative_truth.py): fourth-order central differences of a value,
a gradient or a printed derivative of the order below, and each side's own slope at a kink."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from gradcli.engine import arrays
from gradcli.errors import NumericError
from gradcli.gradcheck.steps import noise_allowance

STEP = 1e-3  # relative step of the fourth-order differences


class Quotients(NamedTuple):
    """Difference quotients, and the rounding each may carry: the values it subtracts, as
    large as 1e20 in 1e20 + x**2, leave the quotient of their last bits (same shape, or the
    same dict of shapes)."""

    value: Any
    noise: Any


def differences(function: Callable[[dict[str, Any]], Any], point: Mapping[str, Any],
                name: str, step: float = STEP, own: bool = False) -> Quotients:
    """d function / d point[name] (shape: the function's, then the variable's) by the
    fourth-order central difference; ``function`` returns an array or a dict of them. ``own``:
    steps at each element's own scale (``step * |x|``), for a value far below 1 next to an edge
    (``where(x > 1e-9, ...)`` at 2e-9). A difference that overflows is a NumericError."""
    np = arrays.numpy()
    base = np.asarray(point[name], dtype=float)
    columns: list[Any] = []
    noises: list[Any] = []
    for element in np.ndindex(*base.shape):
        x = abs(float(base[element]))
        h = step * (x if own and x else max(1.0, x))
        for shrink in (1.0, 1e-2, 1e-4):  # smaller steps near the edge of a domain
            try:
                taken = [function({**point, name: _moved(base, element, offset * h * shrink)})
                         for offset in (2.0, 1.0, -1.0, -2.0)]
                break
            except NumericError:
                if shrink == 1e-4:
                    raise
        columns.append(_combine(taken, h * shrink))
        noises.append(_rounding(taken, h * shrink, 1.5))  # weights 1, 8, 8, 1 over 12 h
    return Quotients(_stacked(columns, base.shape), _stacked(noises, base.shape))


def _moved(base: Any, element: tuple[int, ...], step: float) -> Any:
    moved = base.copy()
    moved[element] += step
    return moved


@dataclass
class Sides:
    """``one_sided``'s findings, each of the shape of the derivative it is taken of."""

    left: Any  # the left piece's derivative at the point
    right: Any  # the right piece's
    jumps: Any  # bool: the function jumps at the point
    before: Any  # the function a step to the left
    after: Any  # and a step to the right
    noise: Any  # the rounding each side's derivative may carry

    @property
    def kinks(self) -> Any:
        """Where the sides' derivatives differ by more than their rounding (relative JUMP, and
        the noise of values far larger than the slopes: 1e20*atanh(x) has no kink)."""
        np = arrays.numpy()
        size = np.maximum(1.0, np.maximum(np.abs(self.left), np.abs(self.right)))
        return np.abs(self.right - self.left) > JUMP * size + 2 * self.noise

    @property
    def resolved(self) -> Any:
        """Where a kink as small as ``JUMP`` of the slopes stands out of their rounding: where
        not, no kink found says none is there (5000 + relu(x) at steps of 1e-10)."""
        np = arrays.numpy()
        size = np.maximum(1.0, np.maximum(np.abs(self.left), np.abs(self.right)))
        return 2 * self.noise < JUMP * size

    def fields(self) -> tuple[Any, ...]:
        return self.left, self.right, self.jumps, self.before, self.after, self.noise


def one_sided(function: Callable[[dict[str, Any]], Any], point: Mapping[str, Any],
              name: str, small: bool = False) -> Sides:
    """The left and right derivatives at the point of each side's own piece (the quadratic
    through three steps on that side, never the point itself, whose value may be neither
    side's: abs's gradient sign(0) = 0 between -1 and 1), and where ``function`` jumps there:
    its two sides differ as much a step away as three (a kink's differences shrink with the
    step). ``small``: steps 10^4 times smaller, and within x's own scale (2e-15 at 2e-9)."""
    np = arrays.numpy()
    base = np.asarray(point[name], dtype=float)
    columns: list[list[Any]] = [[], [], [], [], [], []]  # Sides' fields, a column per element
    for element in np.ndindex(*base.shape):
        value = abs(float(base[element]))
        h = 1e-6 * max(1.0, value)
        if small:
            h = min(1e-4 * h, 1e-6 * value) if value else 1e-4 * h
        taken, values = [], []
        for sign in (-1.0, 1.0):
            g1, g2, g3 = (np.asarray(function({**point, name: _moved(base, element, sign * k * h)}),
                                     dtype=float) for k in (1.0, 2.0, 3.0))
            taken.append((g1, g3))
            values += (g1, g2, g3)
            with np.errstate(all="ignore"):  # not finite: no side found
                columns[int(sign > 0)].append(-sign * (5 * g1 - 8 * g2 + 3 * g3) / (2 * h))
        (before, far_before), (after, far_after) = taken
        near, far = np.abs(after - before), np.abs(far_after - far_before)
        size = np.maximum(1.0, np.maximum(np.abs(before), np.abs(after)))
        columns[2].append((near > 0.8 * far) & (near > JUMP * size))
        columns[3].append(before)
        columns[4].append(after)
        columns[5].append(_rounding(values, h, 8.0))  # weights 5, 8, 3 over 2 h
    return Sides(*(_stacked(column, base.shape) for column in columns))


# The smallest jump of the order below (or of its slope) that ``one_sided`` tells from rounding,
# relative to its values: a central difference across a jump this small is off by JUMP / (2 h).
JUMP = 1e-3


def _combine(taken: list[Any], h: float) -> Any:
    if isinstance(taken[0], dict):
        return {key: _combine([t[key] for t in taken], h) for key in taken[0]}
    np = arrays.numpy()
    far, near, back, farther = (np.asarray(t, dtype=float) for t in taken)
    # scaled to their largest, so that 8 * near does not overflow (exp(x) at 709)
    scale = max(float(np.max(np.abs(each), initial=0.0)) for each in taken) or 1.0
    with np.errstate(all="ignore"):
        found = (-far / scale + 8 * (near / scale) - 8 * (back / scale) + farther / scale) / (
            12 * h) * scale
    if not np.all(np.isfinite(found)):  # exp(x) at 709.7: no reference, not a wrong entry
        raise NumericError("the differences that check it overflow")
    return found


def _rounding(taken: list[Any], h: float, weight: float) -> Any:
    """The noise of a quotient of ``taken`` at step ``h`` whose weights sum to ``weight / h``."""
    if isinstance(taken[0], dict):
        return {key: _rounding([t[key] for t in taken], h, weight) for key in taken[0]}
    np = arrays.numpy()
    with np.errstate(all="ignore"):
        largest = np.max([np.abs(np.asarray(t, dtype=float)) for t in taken], axis=0)
        return weight * noise_allowance(largest, h)


def _stacked(columns: list[Any], shape: tuple[int, ...]) -> Any:
    """Columns (one per element of the variable) as an array of shape f.shape + shape."""
    if isinstance(columns[0], dict):
        return {key: _stacked([c[key] for c in columns], shape) for key in columns[0]}
    np = arrays.numpy()
    stacked = np.stack([np.asarray(c) for c in columns], axis=-1)
    return stacked.reshape(np.shape(columns[0]) + shape)
