"""How a printed entry is read back and compared with the truth: parsed as a user would paste
it, equal within the tolerance, or a ``CheckError`` naming the entry, the point and both numbers."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from gradcli.engine import arrays
from gradcli.engine.graph import Program
from gradcli.engine.notation import format_number
from gradcli.errors import CheckError, GradcliError
from gradcli.gradcheck.derivative_request import ATOL, FD_ATOL, FD_RTOL, RTOL


def read_entry(label: str, text: str, variables: Collection[str]) -> Program:
    """The printed ``text`` parsed back, its ``variables`` the program's: a constant's name
    that the program made a variable (``e = 2``) is that variable here too."""
    from gradcli.language.parser import parse

    try:
        return parse(text, given=variables, both_ways=True)
    except GradcliError as error:
        raise CheckError(f"{label} = {text} does not read back: {error.message}",
                         hint=BUG_HINT) from None


def entry_label(kind: str, path: tuple[str, ...]) -> str:
    if kind == "jacobian":
        return f"d({path[0]})/d{path[1]}"
    order = "" if len(path) == 1 else str(len(path))
    return f"d{order}/" + " ".join(f"d{name}" for name in path)


BUG_HINT = ("a bug in gradcli diff, so the derivative was not printed: gradcli eval gives the "
         "numbers (--no-check prints the formula unchecked)")


def compare(label: str, text: str, point: Mapping[str, Any], printed: Any, expected: Any,
             exact: bool, strict: bool) -> None:
    """Equal within the tolerance; a scalar printed for an array broadcasts (``0``, ``1``)
    unless ``strict`` (an export returns the array's shape)."""
    np = arrays.numpy()
    printed, expected = np.asarray(printed, dtype=float), np.asarray(expected, dtype=float)
    if printed.shape != expected.shape:
        if strict or printed.ndim or not expected.ndim:
            raise mismatch(label, text, point, printed, expected,
                            f"shape {_shape(printed)}, not {_shape(expected)}")
        printed = np.broadcast_to(printed, expected.shape)
    rtol, atol = (RTOL, ATOL) if exact else (FD_RTOL, FD_ATOL)
    scale = max(1.0, float(np.max(np.abs(expected), initial=0.0)))
    with np.errstate(all="ignore"):
        error = np.abs(printed - expected)
        if float(np.max(error, initial=0.0)) <= atol * scale:  # NaN compares False: below
            return
        bad = ~(error <= atol * scale + rtol * np.abs(expected))
    if bool(np.any(bad)):
        where = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.ndim else ()
        raise mismatch(label, text, point, printed, expected, "", where)


def _short(value: Any) -> str:
    """A point's value in a message: 10 significant digits, at most 6 elements."""
    np = arrays.numpy()
    value = np.asarray(value, dtype=float)
    if value.size > 6:
        return f"[{arrays.shape_text(value.shape)} array, from {_short(value.min())} to " \
               f"{_short(value.max())}]"
    rounded = np.array([float(f"{v:.10g}") for v in value.ravel()]).reshape(value.shape)
    return format_number(rounded if value.ndim else float(rounded))


def _shape(value: Any) -> str:
    return arrays.shape_text(tuple(value.shape))


def mismatch(label: str, text: str, point: Mapping[str, Any], printed: Any, expected: Any,
              why: str, where: tuple[int, ...] = ()) -> CheckError:
    at = ", ".join(f"{name} = {_short(value)}" for name, value in point.items())
    shown = text if len(text) <= 80 else text[:77] + "..."
    if printed is None:
        return CheckError(f"{label} = {shown} is not defined at {at or 'the point'}, where the "
                          f"program is: {why}", hint=BUG_HINT)
    element = arrays.index_text(where)
    numbers = why or (f"is {format_number(printed[where])}{element and ' at ' + element}, "
                      f"the engine's {format_number(expected[where])}")
    return CheckError(f"{label} = {shown} at {at or 'the point'}: {numbers}", hint=BUG_HINT)
