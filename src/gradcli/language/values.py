"""Values given from outside a program: a number (``--x 2``), a range ``START:STOP:COUNT``
(``-2:2:9``, both ends included), a list (``1,2,5``), an array (``"[[1, 2], [3, 4]]"``, one value,
docs/arrays.md) or an array file. Several swept variables form a grid (every combination).
"""

from __future__ import annotations

import itertools
import math
import re
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from gradcli.engine.notation import shape_text
from gradcli.errors import UsageError
from gradcli.limits import MAX_ARRAY_DIMS, MAX_RANGE_COUNT, check_dims

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

Value = Any  # a float, a tuple of floats (a sweep) or a NumPy array
ARRAY_FILE_SUFFIXES = (".npy", ".npz", ".csv")  # --W W.npy: language/data_files.py reads it


def names_a_file(text: str) -> bool:
    """Whether a value as written (``W.npy``) names a file of arrays rather than numbers."""
    return text.strip().lower().endswith(ARRAY_FILE_SUFFIXES)


def parse_value(name: str, text: str) -> Value:
    """``"2"`` -> 2.0, ``"-2:2:5"`` -> (-2, -1, 0, 1, 2), ``"1,2"`` -> (1.0, 2.0)."""
    text = text.strip()
    if text.startswith("["):
        return parse_array(name, text)
    if names_a_file(text):  # --W W.npy, W.csv, data.npz
        from gradcli.language.data_files import read_array

        return read_array(name, text)
    if ":" in text:
        return _parse_range(name, text)
    if "," in text:
        return tuple(_number(name, part, text) for part in text.split(","))
    return _number(name, text, text)


def parse_assignments(assignments: Iterable[str]) -> dict[str, Value]:
    """``NAME=VALUE`` texts -> values; a UsageError names the first bad one."""
    values: dict[str, Value] = {}
    for text in assignments:
        name, has_value, value = text.partition("=")
        name = name.strip()
        if not has_value or not NAME.fullmatch(name):
            raise UsageError(f"cannot read the value {text!r}", hint="write NAME=VALUE, e.g. x=2")
        values[name] = parse_value(name, value)
    validate_values(values)
    return values


def validate_values(values: Mapping[str, Value]) -> None:
    """Values from outside a program: finite numbers (a value for a constant's name makes it a
    variable of the program: ``parser.parse``'s ``given``)."""
    for name, value in values.items():
        if type(value) is not float and (hasattr(value, "ndim") or isinstance(value, list)):
            continue  # an array: engine/arrays.py checks its elements
        for number in value if isinstance(value, tuple) else (value,):
            if type(number) is not float and not _is_real(number):
                raise UsageError(f"the value of {name} is {number!r}, not a number",
                                 hint="give a number such as 2 or -0.5 (not a string or bool)")
            if not math.isfinite(number):
                raise UsageError(f"the value of {name} is {number}, not a finite number",
                                 hint="give a finite number such as 2, -0.5 or 1e-3")


def _is_real(number: object) -> bool:
    """An int, a NumPy float, a Fraction...: a real number, and not a bool. (A float, the value
    the command line gives, is not asked about: the numbers module is not loaded at start-up.)"""
    import numbers

    return not isinstance(number, bool) and isinstance(number, numbers.Real)


_ARRAY_TOKEN = re.compile(r"\s*(?:([\[\],])|([^\s\[\],]+))")


def parse_array(name: str, text: str) -> Any:
    """``[1, 2]``, ``[[1, 2], [3, 4]]`` -> a float array; a UsageError says where it is wrong
    (a token that is not a number, a bracket not closed, rows of different lengths)."""
    stack: list[list[Any]] = []
    done: Any = None
    expect_item = True
    for match in _ARRAY_TOKEN.finditer(text):
        symbol, word = match.group(1), match.group(2)
        where = f"at character {match.start(1 if symbol else 2) + 1}"
        if done is not None:
            raise _array_error(name, text, f"{where}: text after the closing ']'")
        if symbol == "[" and expect_item:
            if len(stack) == MAX_ARRAY_DIMS:
                check_dims(f"the array for {name}", len(stack) + 1)
            stack.append([])
        elif symbol == "]" and stack and (not expect_item or not stack[-1]):
            row = stack.pop()
            if stack:
                stack[-1].append(row)
                expect_item = False
            else:
                done = row
        elif symbol == "," and stack and not expect_item:
            expect_item = True
        elif word is not None and stack and expect_item:
            if not _NUMBER.fullmatch(word):
                raise _array_error(name, text, f"{where}: {word!r} is not a number")
            stack[-1].append(float(word))
            expect_item = False
        else:
            raise _array_error(name, text, f"{where}: unexpected {(symbol or word)!r}")
    if done is None:
        raise _array_error(name, text, "a '[' is not closed")
    return _rectangular(name, text, done)


def nested_shape(item: Any) -> tuple[int, ...]:
    """The shape of nested lists or tuples, read down their first elements."""
    dims = []
    while isinstance(item, (list, tuple)):
        dims.append(len(item))
        if not item:
            break
        item = item[0]
    return tuple(dims)


def _rectangular(name: str, text: str, rows: list[Any]) -> Any:
    """Nested lists -> an array; a UsageError names the first row whose shape differs."""
    import numpy as np

    pending = deque([(rows, "")])
    while pending:  # breadth-first, iterative: the first ragged row by depth
        items, path = pending.popleft()
        if not items:
            raise _array_error(name, text, f"the array{path and ' at ' + path} is empty")
        first = nested_shape(items[0])
        for i, item in enumerate(items):
            if nested_shape(item) != first:
                raise _array_error(name, text, f"element {path}[{i}] has shape "
                                   f"{shape_text(nested_shape(item))}, element {path}[0] has "
                                   f"{shape_text(first)}")
            if not isinstance(item, float):
                pending.append((item, f"{path}[{i}]"))
    return np.array(rows, dtype=float)


def _array_error(name: str, text: str, problem: str) -> UsageError:
    from gradcli.errors import shortened

    return UsageError(f"cannot read the array {shortened(text)!r} for {name}: {problem}",
                      hint=f"write e.g. --{name} \"[1, 2, 3]\" or --{name} \"[[1, 2], [3, 4]]\"")


def is_sweep(values: Mapping[str, Value]) -> bool:
    return any(isinstance(value, tuple) for value in values.values())


def grid(values: Mapping[str, Value]) -> tuple[list[str], list[tuple[float, ...]]]:
    """Every combination of the swept values (the first name varies slowest), fixed ones kept."""
    names = list(values)
    axes = [v if isinstance(v, tuple) else (v,) for v in values.values()]
    return names, list(itertools.product(*axes))


def _parse_range(name: str, text: str) -> tuple[float, ...]:
    parts = text.split(":")
    if len(parts) != 3:
        raise UsageError(f"cannot read the range {text!r} for {name}",
                         hint="write START:STOP:COUNT, e.g. -2:2:9")
    start, stop = range_ends(name, text)
    try:
        count = int(parts[2])
    except ValueError:
        count = 0
    if not 1 <= count <= MAX_RANGE_COUNT:
        raise UsageError(f"the count in {text!r} for {name} must be a whole number from 1 to "
                         f"{MAX_RANGE_COUNT:,}", hint="write START:STOP:COUNT, e.g. -2:2:9")
    if count == 1:
        return (start,) if start == stop else _one_point_of_two(name, text)
    intervals = count - 1
    step = (stop - start) / intervals
    if math.isfinite(step):
        return (*(start + i * step for i in range(intervals)), stop)
    # stop - start overflows (-1e308:1e308:3): weigh the ends instead. start and stop have
    # opposite signs here, so neither product nor their sum can overflow.
    return (*(start * (1.0 - i / intervals) + stop * (i / intervals) for i in range(intervals)),
            stop)


def range_ends(name: str, text: str) -> tuple[float, float]:
    """START and STOP of ``text``, a range ``START:STOP:COUNT`` (a UsageError if either is not
    a finite number): what a check file reads without making the range's values."""
    parts = text.split(":")
    return _number(name, parts[0], text), _number(name, parts[1], text)


def _one_point_of_two(name: str, text: str) -> tuple[float, ...]:
    """``1:2:1``: both ends are included, so one point cannot hold two different ends; taking
    START alone would drop STOP without a word."""
    start, stop = (part.strip() for part in text.split(":")[:2])
    raise UsageError(f"the range {text!r} for {name} has a count of 1, so its end {stop} "
                     "would be dropped",
                     hint=f"write {start}:{stop}:2 for both ends, or {start} alone for one point")


# A number as the grammar writes one (ASCII digits; no `1_000`, no `inf`), with an optional sign.
# Each digit can belong to one place only, so a long non-number fails in linear time (a pattern
# like [0-9]+\.?[0-9]* backtracks quadratically on 10^5 digits and a letter).
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _number(name: str, part: str, whole: str) -> float:
    if _NUMBER.fullmatch(part.strip()):
        number = float(part)
        if math.isinf(number):  # 1e400: a number, but past the largest double
            raise UsageError(f"the value of {name} is {whole!r}: too large for a float "
                             "(the largest is about 1.8e308)",
                             hint="give a finite number such as 2, -0.5 or 1e-3")
        return number
    if part.strip().lower().lstrip("+-") in ("inf", "infinity", "nan"):
        raise UsageError(f"the value of {name} is {whole!r}, not a finite number",
                         hint="give a finite number such as 2, -0.5 or 1e-3")
    raise UsageError(f"the value of {name} is {whole!r}, not a number",
                         hint=f"write e.g. --{name} 2.5, a range --{name} -2:2:9 "
                              f"or a list --{name} 1,2,5")


def as_point(values: Mapping[str, Value]) -> dict[str, float]:
    """The values as one point; a UsageError if any of them is a sweep."""
    point: dict[str, float] = {}
    for name, value in values.items():
        if isinstance(value, Sequence):
            raise UsageError(f"{name} is given several values, but this needs one point",
                             hint=f"give {name} one number")
        point[name] = value
    return point
