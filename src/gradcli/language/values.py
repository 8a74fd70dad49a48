"""Values given from outside a program: a number (``--x 2``), a range ``START:STOP:COUNT``
(``-2:2:9``, both ends included), a list (``1,2,5``), an array (``"[[1, 2], [3, 4]]"``, one value,
docs/arrays.md) or an array file. Several swept variables form a grid (every combination).

Array files (``--W W.npy``, ``W.csv``, ``data.npz``, ``--values data.npz``; ``eval --save
out.npz``) are told by their first bytes, never by decoding them; pickles are never loaded
(``allow_pickle=False``), and an array's size is checked from its header before its data is read.
"""

from __future__ import annotations

import io
import itertools
import math
import os
import re
import stat
import warnings
from collections.abc import Iterable, Mapping, Sequence

from gradcli.errors import UsageError, shortened, visible
from gradcli.limits import MAX_ARRAY_DIMS, MAX_ARRAY_ELEMENTS, MAX_RANGE_COUNT, check_dims

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

    from gradcli.engine.graph import Program

    Value = Any  # a float, a tuple of floats (a sweep) or a NumPy array
else:
    Value = object  # the name other modules import for their annotations, never evaluated

FINITE_HINT = "give a finite number such as 2, -0.5 or 1e-3"
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ARRAY_FILE_SUFFIXES = (".npy", ".npz", ".csv")  # --W W.npy: read_array reads it


def names_a_file(text: str) -> bool:
    """Whether a value as written (``W.npy``) names a file of arrays rather than numbers."""
    return text.strip().lower().endswith(ARRAY_FILE_SUFFIXES)


def parse_value(name: str, text: str) -> Value:
    """``"2"`` -> 2.0, ``"-2:2:5"`` -> (-2, -1, 0, 1, 2), ``"1,2"`` -> (1.0, 2.0)."""
    text = text.strip()
    if text.startswith("["):
        return parse_array(name, text)
    if names_a_file(text):  # --W W.npy, W.csv, data.npz
        return read_array(name, text)
    if ":" in text:
        return _parse_range(name, text)
    if "," in text:
        return tuple(_number(name, part, text) for part in text.split(","))
    return _number(name, text, text)


def parse_assignments(assignments: Iterable[str]) -> dict[str, Value]:
    """``NAME=VALUE`` texts -> values; a UsageError names the first bad one, or a name given
    twice (a dict would keep the last one silently)."""
    values: dict[str, Value] = {}
    written: dict[str, str] = {}
    for text in assignments:
        name, has_value, value = text.partition("=")
        name = name.strip()
        if not has_value or not NAME.fullmatch(name):
            raise UsageError(f"cannot read the value {text!r}", hint="write NAME=VALUE, e.g. x=2")
        if name in written:
            raise UsageError(f"{name} is given twice: {visible(written[name])} and "
                             f"{visible(text)}", hint=f"give {name} one value")
        written[name] = text
        values[name] = parse_value(name, value)
    validate_values(values)
    return values


def validate_values(values: Mapping[str, Value]) -> None:
    """Values from outside a program: finite numbers (a value for a constant's name makes it a
    variable of the program: ``parser.parse``'s ``given``)."""
    for name, value in values.items():
        if type(value) is float and value - value == 0.0:
            continue  # a finite float, as the command line gives (inf - inf is NaN)
        if type(value) is not float and (hasattr(value, "ndim") or isinstance(value, list)):
            continue  # an array: engine/arrays.py checks its elements
        for number in value if isinstance(value, tuple) else (value,):
            if type(number) is not float and not _is_real(number):
                raise UsageError(f"the value of {name} is {number!r}, not a number",
                                 hint="give a number such as 2 or -0.5 (not a string or bool)")
            try:
                finite = math.isfinite(number)
            except OverflowError:  # an int past the floats (10**400)
                raise UsageError(f"the value of {name} is too large for a float (the largest "
                                 "is about 1.8e308)", hint="give a finite number such as 2, "
                                 "-0.5 or 1e-3") from None
            if not finite:
                raise UsageError(f"the value of {name} is {number}, not a finite number",
                                 hint=FINITE_HINT)


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
    from gradcli.engine.arrays import checked_array

    # finite=False: a number past the largest float (1e400) is said when the value is bound
    return checked_array(done, f"the array {shortened(text)!r} for {name}", finite=False)


def _array_error(name: str, text: str, problem: str) -> UsageError:
    return UsageError(f"cannot read the array {shortened(text)!r} for {name}: {problem}",
                      hint=f"write e.g. --{name} \"[1, 2, 3]\" or --{name} \"[[1, 2], [3, 4]]\"")


def is_sweep(values: Mapping[str, Value]) -> bool:
    return any(isinstance(value, tuple) for value in values.values())


def is_array_value(value: Value) -> bool:
    """A value that makes the program an array program: a list or an array of one dimension or
    more (a NumPy number or a 0-d array is a number). Here, not in engine/arrays.py: the scalar
    paths ask it without importing NumPy."""
    return type(value) is not float and (isinstance(value, list) or getattr(value, "ndim", 0) > 0)


def gives_arrays(program: Program, values: Mapping[str, Value]) -> bool:
    """Whether ``values`` give one of ``program``'s variables an array. A value for a name the
    program does not use changes nothing: one set of values serves a batch of programs."""
    return any(is_array_value(values[name]) for name in program.variables if name in values)


def runs_on_arrays(program: Program, values: Mapping[str, Value]) -> bool:
    """Whether ``program`` runs on the array path at ``values`` (docs/arrays.md): it has an
    array op or literal, or several outputs, or one of its variables is given an array."""
    return program.arrays or gives_arrays(program, values)


def grid(values: Mapping[str, Value]) -> tuple[list[str], list[tuple[float, ...]]]:
    """Every combination of the swept values (the first name varies slowest), fixed ones kept."""
    names = list(values)
    axes = [v if isinstance(v, tuple) else (v,) for v in values.values()]
    return names, list(itertools.product(*axes))


def _parse_range(name: str, text: str) -> tuple[float, ...]:
    start, stop, count = range_parts(name, text)
    if count == 1:
        return (start,)
    intervals = count - 1
    step = (stop - start) / intervals
    if math.isfinite(step):
        return (*(start + i * step for i in range(intervals)), stop)
    # stop - start overflows (-1e308:1e308:3): weigh the ends instead. start and stop have
    # opposite signs here, so neither product nor their sum can overflow.
    return (*(start * (1.0 - i / intervals) + stop * (i / intervals) for i in range(intervals)),
            stop)


def range_parts(name: str, text: str) -> tuple[float, float, int]:
    """START, STOP and COUNT of a range ``START:STOP:COUNT``, checked (a UsageError names the
    first mistake): what a check file keeps without making the range's values."""
    parts = text.split(":")
    if len(parts) != 3:
        raise UsageError(f"cannot read the range {text!r} for {name}",
                         hint="write START:STOP:COUNT, e.g. -2:2:9")
    start, stop = _number(name, parts[0], text), _number(name, parts[1], text)
    try:
        count = int(parts[2])
    except ValueError:
        count = 0
    if not 1 <= count <= MAX_RANGE_COUNT:
        raise UsageError(f"the count in {text!r} for {name} must be a whole number from 1 to "
                         f"{MAX_RANGE_COUNT:,}", hint="write START:STOP:COUNT, e.g. -2:2:9")
    if count == 1 and start != stop:
        # Both ends are included, so one point cannot hold two different ends; taking START
        # alone would drop STOP without a word.
        start_text, stop_text = (part.strip() for part in parts[:2])
        raise UsageError(f"the range {text!r} for {name} has a count of 1, so its end "
                         f"{stop_text} would be dropped", hint=f"write {start_text}:{stop_text}:2 "
                         f"for both ends, or {start_text} alone for one point")
    return start, stop, count


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
                             hint=FINITE_HINT)
        return number
    if part.strip().lower().lstrip("+-") in ("inf", "infinity", "nan"):
        raise UsageError(f"the value of {name} is {whole!r}, not a finite number",
                         hint=FINITE_HINT)
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


# --- array files ---------------------------------------------------------------------------------

NPY_MAGIC = b"\x93NUMPY"
ZIP_MAGIC = b"PK\x03\x04"


def kind_of(path: str | io.BytesIO) -> str:
    """"npy", "npz" or "csv", from the file's first bytes; a UsageError if it cannot be read."""
    if isinstance(path, io.BytesIO):
        head = path.getvalue()[: len(NPY_MAGIC)]
    else:
        try:
            with open(path, "rb") as file:
                head = file.read(len(NPY_MAGIC))
        except OSError as error:
            raise _cannot_read(path, error) from None
    if head.startswith(NPY_MAGIC):
        return "npy"
    return "npz" if head.startswith(ZIP_MAGIC) else "csv"


def _cannot_read(path: str, error: OSError) -> UsageError:
    return UsageError(f"cannot read {visible(path)}: {error.strerror or error}",
                      hint="check the path and that the file is readable")


_PIPED: dict[str, bytes] = {}  # what each pipe named gave: a second read finds no writer


def _contents(path: str) -> str | io.BytesIO:
    """A regular file's path (NumPy reads it in place), or what a pipe (a FIFO named W.npy) or
    a device gives, read once into memory (and kept: the command line may be read twice), and
    no more than the largest array allowed takes: a link to /dev/zero is refused, not read
    until memory runs out."""
    if path in _PIPED:
        return io.BytesIO(_PIPED[path])
    try:
        if stat.S_ISREG(os.stat(path).st_mode):
            return path
        with open(path, "rb") as file:
            head = file.read(len(NPY_MAGIC))
            binary = head.startswith((NPY_MAGIC, ZIP_MAGIC))
            limit = (8 * MAX_ARRAY_ELEMENTS + 2**16) if binary else 2 * MAX_ARRAY_ELEMENTS
            data = head + file.read(limit + 1 - len(head))
    except OSError as error:
        raise _cannot_read(path, error) from None
    if len(data) > limit:
        raise UsageError(f"{visible(path)} is not a regular file and gives more than "
                         f"{limit:,} bytes, more than an array of {MAX_ARRAY_ELEMENTS:,} "
                         "elements takes",
                         hint="gradcli holds every node's value in memory: use a smaller array")
    _PIPED[path] = data
    return io.BytesIO(data)


def read_array(name: str, path: str) -> Any:
    """The array ``--NAME PATH`` gives: an ``.npy`` file, the array ``name`` of an ``.npz``
    archive (or its only one), or a CSV table (one row or one column is a vector)."""
    source = _contents(path)
    kind = kind_of(source)
    if kind == "npy":
        return _checked(name, path, _load_npy(path, source))
    if kind == "npz":
        arrays = _archive_arrays(path, source)
        if name not in arrays and len(arrays) != 1:
            raise UsageError(f"{visible(path)} has no array named {name}",
                             hint=f"its arrays: {', '.join(sorted(arrays)) or 'none'}")
        return arrays[name] if name in arrays else next(iter(arrays.values()))
    return _checked(name, path, _load_csv(path, source))


def read_arrays(path: str) -> dict[str, Any]:
    """Every array of an ``.npz`` archive, by name (``--values data.npz``)."""
    source = _contents(path)
    kind = kind_of(source)
    if kind != "npz":
        what = "one array (.npy)" if kind == "npy" else "not a NumPy archive"
        raise UsageError(f"{visible(path)} is {what}",
                         hint="--values reads a JSON, TOML or .npz file; give one array to "
                              "its variable as --NAME FILE.npy")
    return _archive_arrays(path, source)


def _archive_arrays(path: str, source: str | io.BytesIO) -> dict[str, Any]:
    import numpy as np

    try:
        with np.load(source, allow_pickle=False) as archive:
            for key in archive.files:  # the size each header claims, and the archive's
                with archive.zip.open(f"{key}.npy") as member:
                    _refuse_large(key, path, _claimed_elements(np, member))
                _refuse_large(key, path, archive.zip.getinfo(f"{key}.npy").file_size / 8)
            return {key: _checked(key, path, archive[key]) for key in archive.files}
    # zipfile's own: a damaged archive (BadZipFile, a ValueError's sibling), a member packed
    # in a way it cannot unpack (NotImplementedError) or encrypted (RuntimeError)
    except (OSError, ValueError, KeyError, EOFError, NotImplementedError, RuntimeError,
            _bad_zip()) as error:
        raise _unreadable(path, error) from None


def _bad_zip() -> type[Exception]:
    import zipfile  # NumPy's npz reader imports it already

    return zipfile.BadZipFile


def _load_npy(path: str, source: str | io.BytesIO) -> Any:
    import numpy as np

    try:  # the header's size before the data is read, then the data read whole (copying it
        # from a mapped file, fault by fault, took ten times as long: 15 ms for 8 MB)
        with open(source, "rb") if isinstance(source, str) else source as file:
            _refuse_large("the array", path, _claimed_elements(np, file))
            file.seek(0)
            return np.lib.format.read_array(file, allow_pickle=False)
    except (OSError, ValueError, EOFError) as error:
        raise _unreadable(path, error) from None


def _claimed_elements(np: Any, file: Any) -> int:
    """The elements an .npy header says the array has (0 for a header version NumPy's
    ``read_array`` will name as unknown): checked before NumPy allocates them."""
    form = np.lib.format
    # 3.0's header differs from 2.0's in its field names' encoding only
    header = {(1, 0): form.read_array_header_1_0, (2, 0): form.read_array_header_2_0,
              (3, 0): form.read_array_header_2_0}.get(form.read_magic(file))
    return 0 if header is None else math.prod(header(file)[0])


def _load_csv(path: str, source: str | io.BytesIO) -> Any:
    import numpy as np

    size = os.path.getsize(source) if isinstance(source, str) else len(source.getvalue())
    _refuse_large("the table", path, size / 2)  # a number and a comma
    try:
        with warnings.catch_warnings():  # "input contained no data": said below, once
            warnings.simplefilter("ignore")
            table = np.loadtxt(source, delimiter=",", ndmin=2, encoding="utf-8-sig", comments="#")
    except UnicodeDecodeError:
        raise UsageError(f"{visible(path)} is neither CSV text nor a NumPy file",
                         hint="save the array with numpy.save (.npy) or as numbers separated "
                              "by commas") from None
    except (OSError, ValueError) as error:
        reason = str(error).splitlines()[0].partition("; use `usecols`")[0]  # NumPy's option
        raise UsageError(f"{visible(path)} is not a CSV table of numbers: {reason}",
                         hint="one row per line, numbers separated by commas, no header "
                              "(or start it with #)") from None
    if table.size == 0:
        raise UsageError(f"{visible(path)} has no numbers", hint="write one row per line")
    return table.ravel() if 1 in table.shape else table  # one row or one column: a vector


def _refuse_large(name: str, path: str, elements: float) -> None:
    if elements > MAX_ARRAY_ELEMENTS:
        raise UsageError(f"{name} in {visible(path)} has {math.ceil(elements):,} elements, over "
                         f"the limit of {MAX_ARRAY_ELEMENTS:,}",
                         hint="gradcli holds every node's value in memory: use a smaller array")


def _checked(name: str, path: str, array: Any) -> Any:
    """A float array of finite numbers (an integer array is converted), a 0-d one as a float;
    a UsageError names the file and the first element that is not a finite number."""
    from gradcli.engine.arrays import checked_array

    array = checked_array(array, f"{name} in {visible(path)}")
    return float(array) if array.ndim == 0 else array


def _unreadable(path: str, error: Exception) -> UsageError:
    return UsageError(f"cannot read {visible(path)} as a NumPy file: {str(error).splitlines()[0]}",
                      hint="write it with numpy.save or numpy.savez (no pickled objects)")


def npz_bytes(arrays: Mapping[str, Any]) -> bytes:
    """``arrays`` as the bytes of an ``.npz`` archive (``eval --save``; the CLI writes them)."""
    import io

    import numpy as np

    buffer = io.BytesIO()
    np.savez(buffer, **{key: np.asarray(value) for key, value in arrays.items()})
    return buffer.getvalue()
