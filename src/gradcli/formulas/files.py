"""Check files: TOML with ``[[check]]`` tables, loaded in linear time into ``CheckSpec``
objects. Every mistake is a ``CheckFileError`` naming the file, the line (``KeyLines``) and the
key. A UTF-8 byte order mark at the start is ignored."""

from __future__ import annotations

import bisect
import math
import os
import re
import sys
from collections.abc import Collection, Iterable
from typing import Any

from gradcli.engine.graph import Program, output_labels
from gradcli.engine.notation import format_number
from gradcli.errors import ExitStatus, GradcliError, UsageError, visible
from gradcli.formulas.outcomes import Axis, CheckSpec, Expected, Range
from gradcli.gradcheck.check import DEFAULT_ATOL, DEFAULT_RTOL
from gradcli.language.parser import parse
from gradcli.language.values import (
    FINITE_HINT,
    Value,
    names_a_file,
    parse_value,
    range_parts,
    read_array,
)
from gradcli.language.values_file import huge_integer, toml_reader
from gradcli.limits import MAX_CHECK_CELLS, MAX_CHECK_FILE_BYTES, MAX_CHECK_NODES, MAX_CHECK_POINTS

CHECK_KEYS = ("name", "expr", "at", "sweep", "value", "gradients", "derivative", "jacobian",
              "finite", "rtol", "atol")
FILE_KEYS = ("check", "rtol", "atol")
ASSERTION_KEYS = ("value", "gradients", "derivative", "jacobian", "finite")


class CheckFileError(GradcliError):
    """A check file that cannot be used: names the file, the line (when known) and the key."""

    kind = "check-file"
    status = ExitStatus.USAGE

    def __init__(self, message: str, *, file: str, line: int | None = None,
                 key: str | None = None, hint: str | None = None) -> None:
        super().__init__(message, line=line, hint=hint)
        self.file = file
        self.key = key

    @property
    def title(self) -> str:
        file = visible(self.file)
        where = file if self.line is None else f"{file}:{self.line}"
        return where + ("" if self.key is None else f": {visible(self.key)}")


def load_check_files(paths: Iterable[str]) -> tuple[list[CheckSpec], list[CheckFileError]]:
    """Every check of every file, and the error of each file that cannot be used."""
    specs: list[CheckSpec] = []
    errors: list[CheckFileError] = []
    paths = list(paths)
    for path in paths:
        if path == "-" and paths.count("-") > 1:  # the second would read an empty stdin
            errors.append(CheckFileError("- is given more than once: stdin can be read once",
                                         file="<stdin>", hint="give - once"))
            break
        try:
            specs += load_check_file(path)
        except CheckFileError as error:
            errors.append(error)
    return specs, errors


def load_check_file(path: str) -> list[CheckSpec]:
    """Read and validate one check file (``-``: stdin, named ``<stdin>``, its array files
    beside the working directory); raises CheckFileError."""
    name = "<stdin>" if path == "-" else path
    try:
        if path == "-":
            data = sys.stdin.buffer.read(MAX_CHECK_FILE_BYTES + 1)
        else:
            with open(path, "rb") as stream:
                data = stream.read(MAX_CHECK_FILE_BYTES + 1)
        if len(data) > MAX_CHECK_FILE_BYTES:
            raise CheckFileError(f"the file is larger than {MAX_CHECK_FILE_BYTES:,} bytes",
                                 file=name, hint="split it into several check files")
        text = data.decode("utf-8")
    except OSError as error:
        raise CheckFileError(f"cannot read the file: {error.strerror or error}", file=name,
                             hint="check the path and that the file is readable") from None
    except UnicodeDecodeError:
        raise CheckFileError("the file is not UTF-8 text", file=name) from None
    return parse_check_file(text, name)


def parse_check_file(text: str, file: str = "<checks>") -> list[CheckSpec]:
    """Validate the text of a check file (``file`` is the name its errors show)."""
    tomllib = toml_reader()
    text = text.removeprefix("\ufeff")  # a byte order mark, as some Windows editors write
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        found = re.search(r"line (\d+)", str(error))
        raise CheckFileError(f"not valid TOML: {visible(str(error))}", file=file,
                             line=int(found.group(1)) if found else None) from None
    except RecursionError:
        raise CheckFileError("not valid TOML: nested too deeply", file=file,
                             hint="check files need no nested arrays or tables") from None
    except ValueError:  # an integer Python will not read (int_max_str_digits)
        line, problem = huge_integer(text)
        raise CheckFileError(problem, file=file, line=line, hint=FINITE_HINT) from None
    lines = KeyLines(text)
    for key in data:
        if key not in FILE_KEYS:
            raise _unknown(key, FILE_KEYS, file, lines.top(key), "the top level")
    defaults = {key: _tolerance(data, key, file, lines.top(key), DEFAULT) for key, DEFAULT in
                (("rtol", DEFAULT_RTOL), ("atol", DEFAULT_ATOL))}
    checks = data.get("check")
    if "check" in data and not (isinstance(checks, list)
                                and all(isinstance(table, dict) for table in checks)):
        raise CheckFileError("`check` must be an array of tables: write each check as [[check]]",
                             file=file, line=lines.top("check"), key="check",
                             hint="start each check with a [[check]] line (double brackets), "
                                  "then its name, expr and points")
    if not checks:
        raise CheckFileError("no checks in the file", file=file, line=lines.top("check"),
                             key="check", hint="add [[check]] tables with name, expr and points")
    specs: dict[str, CheckSpec] = {}
    for number, table in enumerate(checks):
        spec = _CheckReader(table, number, file, lines, defaults).read()
        if spec.name in specs:
            raise CheckFileError(f"a second check named {spec.name!r}", file=file,
                                 line=spec.line_of("name"), key="name",
                                 hint="give every check its own name")
        specs[spec.name] = spec
    return list(specs.values())


class _CheckReader:
    """Reads one ``[[check]]`` table; every error names the file, the line and the key."""

    def __init__(self, table: dict[str, Any], number: int, file: str, lines: KeyLines,
                 defaults: dict[str, float]) -> None:
        self.table, self.number, self.file = table, number, file
        self.lines, self.defaults = lines, defaults
        self.header = lines.header(number)

    def fail(self, key: str, message: str, hint: str | None = None) -> CheckFileError:
        return CheckFileError(message, file=self.file, line=self._line(*key.split(".")),
                              key=f"check.{key}", hint=hint)

    def read(self) -> CheckSpec:
        for key in self.table:
            if key not in CHECK_KEYS:
                raise _unknown(key, CHECK_KEYS, self.file, self._line(key), "a [[check]]")
        name = self._string("name")
        if not name.isprintable():
            raise self.fail("name", f"has a control character: {visible(name)}",
                            hint="use printable text")
        expr = self._string("expr")
        program = self._parse("expr", expr, self._given_names())
        spec = CheckSpec(name, self.file, self.header, expr, program, self._points(program),
                         rtol=self._tolerance("rtol"), atol=self._tolerance("atol"))
        if program.outputs:  # several outputs: value would be the last one's alone
            for key in ("value", "gradients", "derivative"):
                if key in self.table:
                    labels = ", ".join(output_labels(program))
                    raise self.fail(key, f"is of one scalar output, and expr has several "
                                         f"({labels})", hint="assert each output with "
                                    "jacobian = {f = {x = ...}}, or give expr one output")
        if "value" in self.table:
            spec.value = self._expected("value", self.table["value"], program)
        for variable, given in self._table("gradients", program).items():
            spec.gradients[variable] = self._number(f"gradients.{variable}", given)
        for variable, given in self._table("derivative", program).items():
            spec.derivative[variable] = self._expected(f"derivative.{variable}", given, program,
                                                       numbers=False)
        self._refuse_array_expectations(spec)
        if "jacobian" in self.table:
            spec.jacobian = self._jacobian(program)
        if "finite" in self.table:
            if not isinstance(self.table["finite"], bool):
                raise self.fail("finite", "must be true or false",
                                hint="a TOML boolean, without quotes: finite = true")
            spec.finite = self.table["finite"]
        if not any(key in self.table for key in ASSERTION_KEYS):
            raise CheckFileError(
                f"check {name!r} asserts nothing", file=self.file, line=self.header, key="check",
                hint="add value, gradients, derivative or finite = true (the finite-difference "
                     "check alone runs on every check)")
        spec.key_lines = {key: self._line(*key.split(".")) for key in self._all_keys()}
        return spec

    def _refuse_array_expectations(self, spec: CheckSpec) -> None:
        """An expected array for a scalar expr is the file's mistake, at its own key (it was a
        sweep's "this one has arrays" at the expr's line)."""
        if spec.arrays:
            return
        expected = {"value": spec.value,
                    **{f"derivative.{name}": e for name, e in spec.derivative.items()}}
        for key, given in expected.items():
            if given is not None and given.program is not None and given.program.arrays:
                raise self.fail(key, f"is an array ({given.text}), and expr is a scalar "
                                     "program at scalar values",
                                hint="give a number or a scalar expression")

    def _tolerance(self, key: str) -> float:
        return _tolerance(self.table, key, self.file, self._line(key), self.defaults[key],
                          label=f"check.{key}")

    def _line(self, *path: str) -> int:
        return self.lines.key(self.number, *path)

    def _all_keys(self) -> list[str]:
        keys = list(self.table)
        for key in ("gradients", "derivative", "at", "sweep", "jacobian"):
            keys += [f"{key}.{sub}" for sub in self.table.get(key, {})]
        return keys

    def _jacobian(self, program: Program) -> dict[str, dict[str, Any]]:
        """``jacobian = {f = {x = 3, y = "x"}, "W@x" = {x = [[1, 2]]}}``: each output (its name
        or expression) to each input's block."""
        table = self.table["jacobian"]
        if not isinstance(table, dict):
            raise self.fail("jacobian", "must be a table such as {f = {x = 1}}")
        if not table:
            raise _empty_assertion(self, "jacobian")
        labels = output_labels(program)
        found: dict[str, dict[str, Any]] = {}
        for output, blocks in table.items():
            key = f"jacobian.{output}"
            if output not in labels:
                raise self.fail(key, f"expr has no output {output}",
                                hint=f"its outputs: {', '.join(labels)}")
            if not isinstance(blocks, dict):
                raise self.fail(key, "must be a table of the inputs, such as {x = 1}")
            if not blocks:
                raise _empty_assertion(self, key)
            found[output] = {}
            for variable, given in blocks.items():
                if variable not in program.variables:
                    raise self.fail(key, f"expr has no variable {variable}",
                                    hint=f"its variables: {', '.join(program.variables)}")
                found[output][variable] = (
                    self._array(key, given) if isinstance(given, list)
                    else self._expected(key, given, program))
        return found

    def _string(self, key: str) -> str:
        if key not in self.table:
            raise CheckFileError(f"a [[check]] has no {key}", file=self.file, line=self.header,
                                 key=f"check.{key}", hint=f'add {key} = "..."')
        value = self.table[key]
        if not isinstance(value, str) or not value.strip():
            raise self.fail(key, "must be a non-empty string",
                            hint=f'a TOML string, in quotes: {key} = "..."')
        return value

    def _given_names(self) -> list[str]:
        """The names ``at`` and ``sweep`` give values (``at = {e = 2}``: e is a variable)."""
        return [name for key in ("at", "sweep") if isinstance(self.table.get(key), dict)
                for name in self.table[key]]

    def _parse(self, key: str, text: str, given: Collection[str] = ()) -> Program:
        try:
            return parse(text, max_nodes=MAX_CHECK_NODES, given=given)
        except GradcliError as error:
            if "--max-nodes" in (error.hint or ""):  # an option gradcli check does not have
                raise self.fail(key, error.message, hint="a check's expr may have at most "
                                f"{MAX_CHECK_NODES:,} nodes") from None
            failed = self.fail(key, f"{error.title}: {error.message}", hint=error.hint)
            failed.source_line, failed.column = error.source_line, error.column  # the caret
            raise failed from None

    def _table(self, key: str, program: Program) -> dict[str, Any]:
        """A table keyed by the variables of ``program`` (any other key is a mistake)."""
        table = self.table.get(key, {})
        if not isinstance(table, dict):
            raise self.fail(key, "must be a table such as {x = 1}")
        if key in self.table and not table and key in ASSERTION_KEYS:
            raise _empty_assertion(self, key)
        for variable in table:
            if variable not in program.variables:
                raise self.fail(f"{key}.{variable}", f"expr has no variable {variable}",
                                hint=f"its variables: {', '.join(program.variables) or 'none'}")
        return table

    def _points(self, program: Program) -> dict[str, Axis]:
        values: dict[str, Axis] = {}
        for variable, given in self._table("at", program).items():
            values[variable] = self._number(f"at.{variable}", given, variable,
                                            hint="sweeps go in sweep = {x = \"-5:5:101\"}")
        for variable, given in self._table("sweep", program).items():
            key = f"sweep.{variable}"
            if variable in values:
                raise self.fail(key, f"{variable} is in both at and sweep",
                                hint=f"a variable is held at a point (at) or swept (sweep): "
                                     f"give {variable} in one of them")
            values[variable] = self._sweep_value(key, variable, given)
        missing = program.unbound(values)
        if missing:
            raise self.fail("expr", f"no value for {', '.join(missing)}",
                            hint="give it in at = {...} or sweep = {...}")
        points = math.prod(len(v) if isinstance(v, (tuple, Range)) else 1
                           for v in values.values())
        if points > MAX_CHECK_POINTS:
            raise self.fail("sweep", f"the sweep has {points:,} points; a check may have at "
                            f"most {MAX_CHECK_POINTS:,}", hint="use fewer values per variable")
        nodes = len(program.nodes)
        if points * nodes > MAX_CHECK_CELLS:
            raise self.fail("sweep", f"{points:,} points of a {nodes:,}-node expr are too many "
                            f"(points x nodes at most {MAX_CHECK_CELLS:,})",
                            hint="use fewer points, or split the formula into several checks")
        return values

    def _number(self, key: str, given: Any, variable: str | None = None,
                hint: str | None = None) -> Any:
        """A number, or an array: a TOML array (an array program's, docs/arrays.md) or, for a
        ``variable``'s value, a file named beside the check file (``at = {W = "W.npy"}``)."""
        if isinstance(given, list):
            return self._array(key, given)
        if variable is not None and isinstance(given, str) and names_a_file(given):
            return self._array_file(key, variable, given)
        if not _is_number(given):
            what = "must be a number" if variable is None else (
                "must be a number, an array or an array file (.npy, .npz, .csv) beside the "
                "check file")
            raise self.fail(key, what, hint=hint)
        return float(given)

    def _array_file(self, key: str, variable: str, path: str) -> Any:
        """The array of a ``.npy``/``.npz``/``.csv`` file named beside the check file."""
        where = os.path.join(os.path.dirname(self.file), path)
        try:
            return read_array(variable, where)
        except UsageError as error:
            raise self.fail(key, error.message, hint=error.hint) from None

    def _array(self, key: str, given: list) -> Any:
        """A TOML array of numbers (nested for a matrix) as a NumPy array."""
        from gradcli.engine.arrays import checked_array

        try:
            return checked_array(given, "the array")
        except GradcliError as error:
            raise self.fail(key, error.message, hint=error.hint) from None

    def _sweep_value(self, key: str, variable: str, given: Any) -> Axis:
        if isinstance(given, str):
            try:
                return _range(variable, given) if ":" in given else parse_value(variable, given)
            except GradcliError as error:
                raise self.fail(key, error.message, hint=error.hint) from None
        if _is_number(given):
            return float(given)
        if isinstance(given, list) and given and all(_is_number(x) for x in given):
            return tuple(float(x) for x in given)
        raise self.fail(key, "must be a range \"START:STOP:COUNT\" or a list of numbers",
                        hint=f'e.g. {variable} = "-4:4:9" or {variable} = [0, 0.5, 1]')

    def _expected(self, key: str, given: Any, program: Program, numbers: bool = True) -> Expected:
        """A number, or an expression of expr's variables; with ``numbers`` False (a
        derivative, compared as an expression) a number is the constant expression it is."""
        if _is_number(given):
            if numbers:
                return Expected(number=float(given))
            given = format_number(float(given))
        if not isinstance(given, str):
            raise self.fail(key, "must be a finite number or an expression string",
                            hint='e.g. 4, or "2*x" (an expression of expr\'s variables)')
        expected = self._parse(key, given, program.variables)
        unknown = [name for name in expected.variables if name not in program.variables]
        if unknown:
            raise self.fail(key, f"uses {', '.join(unknown)}, which expr does not have",
                            hint="an expected expression uses expr's variables: "
                                 f"{', '.join(program.variables) or 'none'}")
        return Expected(text=given, program=expected)


def _empty_assertion(reader: _CheckReader, key: str) -> CheckFileError:
    """``gradients = {}`` would let the check pass on nothing it names."""
    example = "{f = {x = 4}}" if key == "jacobian" else "{x = 4}"
    return reader.fail(key, "is empty, so it asserts nothing",
                       hint=f"give what to compare, e.g. {example}, or delete the key")


def _range(variable: str, text: str) -> Value | Range:
    """``"START:STOP:COUNT"`` checked without making the values; any other text, or a mistake,
    is left to ``parse_value``, which raises it (with the whole text) before making any value."""
    try:
        return Range(variable, text, range_parts(variable, text.strip())[2])
    except GradcliError:
        return parse_value(variable, text)


def _unknown(key: str, known: tuple[str, ...], file: str, line: int | None,
             where: str) -> CheckFileError:
    return CheckFileError(f"unknown key in {where}", file=file, line=line, key=key,
                          hint=f"known keys: {', '.join(known)}")


def _tolerance(table: dict[str, Any], key: str, file: str, line: int | None,
               default: float, label: str | None = None) -> float:
    if key not in table:
        return default
    given = table[key]
    if not _is_number(given) or given < 0:
        raise CheckFileError("must be a number >= 0", file=file, line=line, key=label or key,
                             hint=f"a TOML number, without quotes: {key} = 1e-6")
    return float(given)


def _is_number(value: Any) -> bool:
    """A finite TOML integer or float (not ``true``, nor an integer too large for a float)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value) if isinstance(value, float) else abs(value) <= 2**1023


class KeyLines:
    """The line (1-based) of a key in a check file's text: ``tomllib`` reports no positions.

    The n-th ``[[check]]`` header starts the n-th check's block, and a key is the first line of
    that block that assigns it. The text is indexed once (for every key, the lines that assign
    it at a line's start, ``key =`` or ``[check.key]``, and anywhere, ``{key = ...}``), so a
    look-up is a binary search and a whole file's keys take linear time.
    """

    def __init__(self, text: str) -> None:
        self.count = 0
        self.headers: list[int] = []  # 0-based lines of the [[check]] headers
        self.leading: dict[str, list[int]] = {}
        self.inner: dict[str, list[int]] = {}
        for number, line in enumerate(text.split("\n")):  # TOML ends lines with LF (or CR LF)
            self.count += 1
            if _HEADER.match(line):
                self.headers.append(number)
                continue
            found = _LEADING.match(line)
            if found:
                key = _unquoted(found.group(1) or found.group(2) or found.group(3))
                self.leading.setdefault(key, []).append(number)
            for found in _INNER.finditer(line):
                key = _unquoted(found.group(1))
                lines = self.inner.setdefault(key, [])
                if not lines or lines[-1] != number:
                    lines.append(number)

    def header(self, number: int) -> int:
        return self.headers[number] + 1 if number < len(self.headers) else 1

    def top(self, key: str) -> int | None:
        end = self.headers[0] if self.headers else self.count
        return _first(self.leading.get(key), 0, end)

    def key(self, number: int, *path: str) -> int:
        """The line of ``path`` (``("gradients", "x")``) in the ``number``-th check's block."""
        start = self.headers[number] if number < len(self.headers) else 0
        end = self.headers[number + 1] if number + 1 < len(self.headers) else self.count
        found = _first(self.leading.get(path[0]), start, end) or self.header(number)
        for part in path[1:]:
            found = _first(self.inner.get(part), found - 1, end) or found
        return found


def _first(lines: list[int] | None, start: int, end: int) -> int | None:
    """The first of ``lines`` (sorted, 0-based) in ``start`` ... ``end - 1``, 1-based."""
    if not lines:
        return None
    at = bisect.bisect_left(lines, start)
    return lines[at] + 1 if at < len(lines) and lines[at] < end else None


_KEY = r"""(?:[A-Za-z0-9_-]+|"[^"\n]*"|'[^'\n]*')"""  # bare, "quoted" or 'literal'
_HEADER = re.compile(r"\s*\[\[\s*check\s*\]\]")
# ``key = ``, ``key.sub = ``, a ``[check.key]`` sub-table or a ``[key]`` table
_LEADING = re.compile(rf"\s*(?:({_KEY})\s*[=.]|\[\s*check\s*\.\s*({_KEY})\s*\]|\[\s*({_KEY})\s*\])")
# ``key =`` anywhere: at the start, or after ``{``, ``,``, a space or a dot
_INNER = re.compile(rf"(?:^|(?<=[{{,\s.]))({_KEY})\s*=")


def _unquoted(key: str) -> str:
    return key[1:-1] if key[:1] in "\"'" and len(key) >= 2 else key
