"""Numbers and arrays as tables and lines print them: a number whole (or to ``digits``), never
cut; an array as the language writes it (``[[1, 2], [3, 4]]``), past ``SHOWN_ELEMENTS`` as its
ends, minimum and maximum unless ``full``. A number needs no NumPy."""

from __future__ import annotations

from typing import Any

from gradcli.engine.notation import format_number

MAX_DIGITS = 17  # every float reads back from 17 significant digits; more would be noise
SHOWN_ELEMENTS = 12  # larger arrays are summarised unless full
_EDGE = 3  # entries shown at each end of a summarised array


def number_text(value: float, digits: int | None = None) -> str:
    """``value`` in full (its shortest round-trip text), or to ``digits`` significant digits."""
    if digits is None or (type(value) is not float and getattr(value, "ndim", 0)):
        return format_number(value)  # an array: as the language writes it (graph trees)
    return f"{float(value):.{digits}g}"


def checked_digits(digits: int | None) -> int | None:
    """``digits`` if it is None or 1 to ``MAX_DIGITS``; a ValueError otherwise."""
    if digits is not None and (isinstance(digits, bool) or not isinstance(digits, int)
                               or not 1 <= digits <= MAX_DIGITS):
        raise ValueError(f"digits must be 1 to {MAX_DIGITS} (or None for every digit), "
                         f"not {digits!r}")
    return digits


def value_text(value: Any, digits: int | None = None, full: bool = False,
               seen: dict[int, tuple[Any, str]] | None = None) -> str:
    """A number as ``number_text`` writes it, an array as nested brackets (summarised past
    ``SHOWN_ELEMENTS`` unless ``full``), None (a branch not taken) as such. ``seen`` keeps the
    arrays written (with the same ``digits`` and ``full``) by id: the tables of one result show
    the same large arrays more than once, and each summary is passes over all the elements."""
    if value is None:
        return "not taken"
    if type(value) is float or not getattr(value, "ndim", 0):
        return number_text(value, digits)
    if seen is not None and id(value) in seen:
        return seen[id(value)][1]
    import numpy as np

    array = np.asarray(value)
    if full or array.size <= SHOWN_ELEMENTS:
        text = _nested(array.tolist(), digits)
    else:
        flat = array.ravel()
        ends = [number_text(v, digits) for v in [*flat[:_EDGE].tolist(), *flat[-_EDGE:].tolist()]]
        low, high = (number_text(float(end), digits) for end in (flat.min(), flat.max()))
        text = f"[{', '.join(ends[:_EDGE])}, …, {', '.join(ends[_EDGE:])}] min {low}, max {high}"
    if seen is not None:
        seen[id(value)] = (value, text)  # the array kept: its id is not another's meanwhile
    return text


def _nested(items: Any, digits: int | None) -> str:
    """Nested lists as ``[[1, 2], [3, 4]]`` (iterative: a list of rows at a time)."""
    if not isinstance(items, list):
        return number_text(items, digits)
    if items and isinstance(items[0], list):
        return "[" + ", ".join(_nested(row, digits) for row in items) + "]"
    return "[" + ", ".join(number_text(v, digits) for v in items) + "]"
