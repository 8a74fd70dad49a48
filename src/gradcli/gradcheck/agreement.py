"""Whether a printed derivative agrees with the truth ``gradcli diff`` holds it to: within the
tolerances and the rounding of the differences (a ``CheckError`` naming the entry, the point and
both numbers where not), and, where it agrees, whether the check reached its digits (a note
where it did not).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from gradcli.engine import arrays
from gradcli.engine.failures import index_text
from gradcli.engine.notation import format_number
from gradcli.errors import CheckError, NumericError
from gradcli.gradcheck.quotients import Quotients
from gradcli.gradcheck.steps import rounding_swamps

RTOL, ATOL = 1e-6, 1e-7  # an exact derivative (relative to the entry's largest element)
FD_RTOL, FD_ATOL = 1e-5, 1e-6  # a derivative compared with central differences

BUG_HINT = ("a bug in gradcli diff, so the derivative was not printed: gradcli eval gives the "
         "numbers (--no-check prints the formula unchecked)")


def compare(label: str, text: str, point: Mapping[str, Any], printed: Any, expected: Any,
            exact: bool, strict: bool, noise: Any = 0.0) -> None:
    """Equal within the tolerance, and the rounding ``noise`` of differences; a scalar printed
    for an array broadcasts (``0``, ``1``) unless ``strict`` (an export returns the array's
    shape)."""
    np = arrays.numpy()
    printed, expected = np.asarray(printed, dtype=float), np.asarray(expected, dtype=float)
    if printed.shape != expected.shape:
        if strict or printed.ndim or not expected.ndim:
            raise mismatch(label, text, point, printed, expected,
                           f"shape {arrays.shape_text(printed.shape)}, not "
                           f"{arrays.shape_text(expected.shape)}")
        printed = np.broadcast_to(printed, expected.shape)
    rtol, atol = (RTOL, ATOL) if exact else (FD_RTOL, FD_ATOL)
    scale = max(1.0, float(np.max(np.abs(expected), initial=0.0)))
    with np.errstate(all="ignore"):  # NaN compares False: bad
        bad = ~(np.abs(printed - expected) <= atol * scale + rtol * np.abs(expected) + noise)
    if bool(np.any(bad)):
        where = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.ndim else ()
        raise mismatch(label, text, point, printed, expected, "", where, exact)


def swamped(found: Quotients) -> Any:
    """Where the rounding of the differences themselves, not the allowance for it, is above the
    tolerance's own share (``rounding_swamps``): no step of theirs tells a wrong
    entry from a right one there (1e20 + x**2: values of 1e20 leave d/dx = 2 unresolved)."""
    np = arrays.numpy()
    expected = np.asarray(found.value, dtype=float)
    scale = max(1.0, float(np.max(np.abs(expected), initial=0.0)))
    return rounding_swamps(found.noise, FD_ATOL * scale + FD_RTOL * np.abs(expected))


def unresolved(label: str, point: Mapping[str, Any], printed: Any, found: Quotients,
               again: Callable[[], Quotients], differenced: str) -> str | None:
    """Why ``printed``, which agrees with ``found`` (differences of ``differenced``, the
    program's values, the gradient's ...), is not fully checked all the same, or None: the
    differences are ``swamped``; or it agrees only within the absolute tolerance, not
    relatively, while differences at a tenth of the step (``again``) neither move nor close in
    on it (i0e's third derivative at 1e6, -7.5e-22, printed from a formula that cancels as
    5.4e-20). Where they move they are rounding (d/ds of softmax(x + s), whose 0 they give as
    1e-14), or truncation where they close in (x**6 at 0.001): no verdict on the entry."""
    np = arrays.numpy()
    expected = np.asarray(found.value, dtype=float)
    scale = max(1.0, float(np.max(np.abs(expected), initial=0.0)))
    at = point_text(point) or "the point"
    if np.any(swamped(found)):
        return (f"{label} at {at} is not checked: {differenced} are so much larger than their "
                "changes there that rounding swamps the differences (they would pass a value "
                f"{rough(np.max(found.noise))} away)")
    printed = np.broadcast_to(np.asarray(printed, dtype=float), expected.shape)
    with np.errstate(all="ignore"):
        loose = ~(np.abs(printed - expected) <= FD_RTOL * np.abs(expected) + found.noise)
        if not np.any(loose):
            return None
        try:
            closer = np.asarray(again().value, dtype=float)
        except NumericError:
            return None
        steady = np.abs(closer - expected) <= 0.1 * np.abs(expected)
        loose &= steady & ~(np.abs(closer - printed) <= 0.5 * np.abs(expected - printed))
    if not np.any(loose):
        return None
    where = tuple(int(i) for i in np.argwhere(loose)[0]) if loose.ndim else ()
    element = index_text(where)
    return (f"{label} at {at} is checked only to within {FD_ATOL * scale:.0e}, not to its "
            f"digits: it is {format_number(float(printed[where]))}"
            f"{element and ' at ' + element}, differences give {rough(expected[where])}")


def rough(value: Any) -> str:
    """A difference quotient's number in a message: 6 significant digits (no -0)."""
    return format_number(float(f"{float(value):.6g}") + 0.0)


def _short(value: Any) -> str:
    """A point's value in a message: 10 significant digits, at most 6 elements."""
    np = arrays.numpy()
    value = np.asarray(value, dtype=float)
    if value.size > 6:
        return f"[{arrays.shape_text(value.shape)} array, from {_short(value.min())} to " \
               f"{_short(value.max())}]"
    rounded = np.array([float(f"{v:.10g}") for v in value.ravel()]).reshape(value.shape)
    return format_number(rounded if value.ndim else float(rounded))


def point_text(point: Mapping[str, Any]) -> str:
    """``x = 0, y = 2``: the point an entry is checked at, as the messages name it."""
    return ", ".join(f"{name} = {_short(value)}" for name, value in point.items())


def mismatch(label: str, text: str, point: Mapping[str, Any], printed: Any, expected: Any,
             why: str, where: tuple[int, ...] = (), exact: bool = True) -> CheckError:
    at = point_text(point)
    shown = text if len(text) <= 80 else text[:77] + "..."
    if printed is None:
        return CheckError(f"{label} = {shown} is not defined at {at or 'the point'}, where the "
                          f"program is: {why}", hint=BUG_HINT)
    element = index_text(where)
    truth = (f"the engine's {format_number(expected[where])}" if exact
             else f"central differences give {rough(expected[where])}")
    numbers = why or f"is {format_number(printed[where])}{element and ' at ' + element}, {truth}"
    return CheckError(f"{label} = {shown} at {at or 'the point'}: {numbers}", hint=BUG_HINT)
