"""Values from a file (``--values point.json``): a JSON or TOML object of name -> number or
array, read as ``--NAME VALUE`` options are; every problem is a UsageError naming the file and,
where it can be found, the line.
"""

from __future__ import annotations

import json
import math
import re
import sys
from dataclasses import dataclass
from typing import Any

from gradcli.errors import UsageError, visible
from gradcli.language.values import FINITE_HINT, NAME
from gradcli.limits import MAX_ARRAY_DIMS


@dataclass(frozen=True)
class FileValue:
    """One ``name = value`` of a values file, and the line it is on (None: not found)."""

    name: str
    value: Any  # a float, or a NumPy array of floats
    line: int | None

    @property
    def is_array(self) -> bool:
        return not isinstance(self.value, float)

    def where(self, file_name: str) -> str:
        """``point.json:3`` (or just the file's name when the line is not known)."""
        return f"{file_name}:{self.line}" if self.line is not None else file_name


def parse_values_text(text: str, file_name: str, kind: str | None = None) -> list[FileValue]:
    """The values in ``text``, in the file's order. ``kind`` is "json" or "toml"; None guesses
    from the text (a JSON object starts with ``{``, a TOML file never does)."""
    if kind is None:
        kind = _guessed_kind(text)
    lines = _key_lines(text, kind)  # one pass, for the pairs' lines and a duplicate's
    pairs = (_json_pairs if kind == "json" else _toml_pairs)(text, file_name, lines)
    values = []
    for occurrence, (name, raw) in _numbered(pairs):
        line = _line_of(lines, name, occurrence)
        where = visible(file_name) if line is None else f"{visible(file_name)}:{line}"
        if not NAME.fullmatch(name):
            raise UsageError(f"{where}: {visible(name)} is not a variable name",
                             hint="names are letters, digits and _, not starting with a digit")
        value = _number_or_array(raw, f"{where}: the value of {visible(name)}", kind)
        values.append(FileValue(name, value, line))
    return values


def _guessed_kind(text: str) -> str:
    """JSON for text starting with ``{``, or with ``[`` when it parses as JSON (a TOML table
    header also starts with ``[``); else TOML."""
    start = text.lstrip()[:1]
    if start == "[":
        try:
            json.loads(text)
        except ValueError:
            return "toml"
        except RecursionError:  # deep brackets: _json_pairs says so
            return "json"
        return "json"
    return "json" if start == "{" else "toml"


def kind_of(path: str) -> str | None:
    """"json" or "toml" from the file's suffix; None (guess from the text) for others and stdin."""
    lowered = path.lower()
    return "json" if lowered.endswith(".json") else "toml" if lowered.endswith(".toml") else None


class _Pairs(tuple):
    """A JSON object as its (key, value) pairs in order: duplicates are kept, to be reported. A
    tuple, not a list: inside an array it is an element that is not a number, not a row."""


def _json_pairs(text: str, file_name: str, lines: dict[str, list[int]]) -> list[tuple[str, Any]]:
    def refuse_constant(word: str) -> Any:
        line = text.count("\n", 0, max(text.find(word), 0)) + 1
        raise UsageError(f"{visible(file_name)}:{line}: {word} is not a finite number",
                         hint="give finite numbers such as 2, -0.5 or 1e-3")

    try:
        document = json.loads(text, object_pairs_hook=_Pairs, parse_constant=refuse_constant)
    except RecursionError:
        raise _too_deep(file_name) from None
    except json.JSONDecodeError as error:
        raise UsageError(f"{visible(file_name)}:{error.lineno}: not valid JSON: {error.msg} "
                         f"(column {error.colno})",
                         hint='write one object of name: number, e.g. {"x": 2, "W": 3}') from None
    except ValueError:  # an integer Python will not read (int_max_str_digits)
        raise _huge_integer_error(text, file_name) from None
    if not isinstance(document, _Pairs):
        raise UsageError(f"{visible(file_name)} holds {_kind(document)} of JSON, not an "
                         "object of name: number", hint='write e.g. {"x": 2, "W": 3}')
    _refuse_duplicates(document, lines, file_name)
    return list(document)


def toml_reader() -> Any:
    """The TOML reader: stdlib ``tomllib`` on 3.11+, the ``tomli`` package on 3.10."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.10 only
        import tomli as tomllib
    return tomllib


def _toml_pairs(text: str, file_name: str, lines: dict[str, list[int]]) -> list[tuple[str, Any]]:
    tomllib = toml_reader()
    try:
        document = tomllib.loads(text)
    except RecursionError:
        raise _too_deep(file_name) from None
    except tomllib.TOMLDecodeError as error:  # its message ends "(at line 2, column 5)"
        _refuse_duplicates(_toml_keys(text), lines, file_name)
        raise UsageError(f"{visible(file_name)}: not valid TOML: {error}",
                         hint="write one name = number per line, e.g. x = 2") from None
    except ValueError:  # an integer Python will not read (int_max_str_digits)
        raise _huge_integer_error(text, file_name) from None
    return list(document.items())  # TOML itself refuses a key given twice


# An integer longer than Python reads (int_max_str_digits, 4,300 by default): not a float's
# digits (0.000...1), nor part of a name
_READ_DIGITS = getattr(sys, "get_int_max_str_digits", lambda: 4300)() or 4300
_LONG_INTEGER = re.compile(rf"(?<![\w.])[-+]?\d[\d_]{{{_READ_DIGITS},}}(?![\w.])")
_KEY = re.compile(r"""["']?([A-Za-z_][\w.-]*)["']?\s*[:=]""")  # "x": or x =, on its line


def huge_integer(text: str) -> tuple[int, str]:
    """(line, problem) of the first integer in ``text`` too long for a float: the JSON and
    TOML readers fail on one of 4,300 digits or more with Python's own message
    (int_max_str_digits), which names neither the line nor the key."""
    found = _LONG_INTEGER.search(text)
    if found is None:  # not expected: the readers' ValueError comes from such an integer
        return 0, "a value is an integer too long to read"
    start = text.rfind("\n", 0, found.start()) + 1
    keys = _KEY.findall(text, start, found.start())
    what = f"the value of {visible(keys[-1])}" if keys else "a value"
    digits = sum(c.isdigit() for c in found.group())
    return (text.count("\n", 0, found.start()) + 1,
            f"{what} is an integer of {digits:,} digits, too large for a float")


def _huge_integer_error(text: str, file_name: str) -> UsageError:
    line, problem = huge_integer(text)
    return UsageError(f"{visible(file_name)}:{line}: {problem}", hint=FINITE_HINT)


def _too_deep(file_name: str) -> UsageError:
    """The parsers (json, tomllib) recurse once per bracket: a file nested past Python's
    recursion limit is refused whole, however deep (``check_dims`` names shallower ones)."""
    return UsageError(f"{visible(file_name)}: brackets are nested too deep to read",
                      hint=f"brackets may nest at most {MAX_ARRAY_DIMS} deep")


_TOML_KEY = re.compile(r"^[ \t]*([A-Za-z0-9_-]+)[ \t]*=", re.MULTILINE)
# Where keys stand: "x": in JSON; x =, "x" = or 'x' = at the start of a line in TOML.
_KEY_PATTERNS = {
    "json": re.compile(r'("(?:[^"\\]|\\.)*")\s*:'),
    "toml": re.compile(r"""^[ \t]*([A-Za-z0-9_-]+|"(?:[^"\\]|\\.)*"|'[^'\n]*')[ \t]*=""",
                       re.MULTILINE),
}


def _toml_keys(text: str) -> list[tuple[str, Any]]:
    """The bare keys at the starts of lines: enough to find the line of a key given twice
    (tomllib says only that a value cannot be overwritten)."""
    return [(match.group(1), None) for match in _TOML_KEY.finditer(text)]


def _key_lines(text: str, kind: str) -> dict[str, list[int]]:
    """Each key's lines, in the order its occurrences stand, found in one pass over the text
    (a file of many names costs a pass, not a pass per name)."""
    lines: dict[str, list[int]] = {}
    line, counted = 1, 0
    for match in _KEY_PATTERNS[kind].finditer(text):
        line += text.count("\n", counted, match.start())
        counted = match.start()
        key = match.group(1)
        if key[:1] == '"':
            try:
                key = json.loads(key)
            except ValueError:
                continue
        elif key[:1] == "'":
            key = key[1:-1]
        lines.setdefault(key, []).append(line)
    return lines


def _line_of(lines: dict[str, list[int]], name: str, occurrence: int) -> int | None:
    """The line of the ``occurrence``-th key ``name`` (0: the first), if it was found."""
    found = lines.get(name, [])
    return found[occurrence] if occurrence < len(found) else None


def _refuse_duplicates(pairs: list[tuple[str, Any]], lines: dict[str, list[int]],
                       file_name: str) -> None:
    for occurrence, (name, _) in _numbered(pairs):
        if occurrence:  # the name came before
            line = _line_of(lines, name, occurrence)
            where = f"{visible(file_name)}:{line}" if line is not None else visible(file_name)
            raise UsageError(f"{where}: {visible(name)} is given twice in the file",
                             hint=f"give {visible(name)} one value")


def _numbered(pairs: list[tuple[str, Any]]) -> list[tuple[int, tuple[str, Any]]]:
    """Each pair with how many times its name came before it (0 for the first): which
    occurrence in the text to find its line from."""
    counts: dict[str, int] = {}
    numbered = []
    for name, value in pairs:
        numbered.append((counts.get(name, 0), (name, value)))
        counts[name] = counts.get(name, 0) + 1
    return numbered


def _number_or_array(raw: Any, shown: str, kind: str) -> Any:
    """A finite float, or a float array of them; a UsageError names the problem and where it
    is (``shown``: ``point.json:3: the value of x``)."""
    if isinstance(raw, list):
        from gradcli.engine.arrays import checked_array

        return checked_array(raw, shown, describe_element=lambda item: _kind(item, kind))
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):  # nor a JSON object (_Pairs)
        raise UsageError(f"{shown} is {_kind(raw, kind)}, not a number",
                         hint="give a number such as 2, -0.5 or 1e-3")
    try:
        number = float(raw)
    except OverflowError:  # a JSON integer of 400 digits
        raise UsageError(f"{shown} is an integer of {len(str(abs(raw))):,} digits, too large "
                         "for a float", hint=FINITE_HINT) from None
    if not math.isfinite(number):
        raise UsageError(f"{shown} is {number}, not a finite number", hint=FINITE_HINT)
    return number


# What a value that is not a number is, in words: JSON's kinds, and TOML's tables
_KINDS = {bool: "a boolean", str: "a string", list: "an array", type(None): "null",
          _Pairs: "an object", dict: "a table"}


def _kind(raw: Any, kind: str = "json") -> str:
    return _KINDS.get(type(raw), "a number" if kind == "json" else "a date or time")
