"""Results and errors as JSON-ready dicts: the ``--json`` format (no Rich, so it starts fast)."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

from gradcli.errors import GradcliError, UsageError, listed
from gradcli.gradcheck.evaluation import FreeResult, Result

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any


def result_arrays(result: Any) -> dict[str, Any]:
    """What ``eval --save FILE.npz`` writes: ``value``, ``point/NAME``, ``grad/NAME``,
    ``hessian/A/B``, ``check_ok`` and ``check_max_abs_error``; of several outputs
    ``value/LABEL`` and ``jacobian/LABEL/NAME``."""
    if isinstance(result, FreeResult):
        raise UsageError(f"--save writes numbers, and {listed(result.free)} "
                         f"{'has' if len(result.free) == 1 else 'have'} no value",
                         hint="give every variable a value")
    arrays: dict[str, Any] = {f"point/{name}": value for name, value in result.point.items()}
    if isinstance(result, Result):
        arrays["value"] = result.value
        arrays.update({f"grad/{name}": value for name, value in result.gradients.items()})
        if result.hessian is not None:
            arrays.update({f"hessian/{a}/{b}": block for a, row in result.hessian.matrix.items()
                           for b, block in row.items()})
    else:  # several outputs, or an array output: a JacobianResult
        arrays.update({f"value/{label}": value for label, value in result.values.items()})
        arrays.update({f"jacobian/{label}/{name}": block
                       for label, row in result.jacobian.items() for name, block in row.items()})
    check = result.check
    if check is not None:
        arrays["check_ok"] = bool(check.ok)
        arrays["check_max_abs_error"] = getattr(check, "max_abs_error", None) or getattr(
            check, "max_error", 0.0)
    return arrays


def result_record(
    result: Result | FreeResult, source: str, line: int | None = None, nodes: bool = True,
    full: bool = False,
) -> dict[str, Any]:
    """``{"expression", "value", "gradients", "nodes", "check", "error": null}``, plus the
    ``"hessian"`` and ``"hvp"`` keys when asked for; with free variables ``"symbolic"``.

    ``"nodes"`` is an iterator of dicts (``json_pieces`` writes it a piece at a time), left out
    without ``nodes``. Arrays not asked for (all but the value, the gradients, the Hessian and
    H·v) are written by ``json_array``."""
    if not isinstance(result, (Result, FreeResult)):  # several outputs: a JacobianResult
        return jacobian_record(result, source, line, nodes, full)
    if isinstance(result, FreeResult):  # value and gradients as texts under "symbolic"
        checked = result.checked
        return _record(source, line, point=result.point, symbolic={
            "free": result.free, "value": result.value, "gradients": result.gradients,
            "notes": [note.one_line() for note in result.notes]},
            check=None if checked is None else {
                "ok": True if checked.confirmed else None, **checked.record()}, error=None)
    check = result.check
    arrays = result.program.arrays  # arrays as json_array writes them, and every node's shape
    listed = None  # an iterator: dumps and json_pieces write it in chunks
    if nodes:
        listed = ({**node, "value": json_array(node["value"], full),
                   "grad": json_array(node["grad"], full)} for node in result.node_records()
                  ) if arrays else result.node_records()
    record = _record(
        source, line,
        point=_lists(result.point, full) if arrays else result.point,
        value=_listed(result.value),  # what was asked for: whole, as the gradients
        gradients=_lists(result.gradients, True) if arrays else result.gradients,
        nodes=listed,
        check=None if check is None else check.record(),
        error=None,
    )
    if not nodes:
        del record["nodes"]
    if result.hessian is not None:
        hessian_check = result.hessian.check
        matrix = result.hessian.matrix
        record["hessian"] = ({a: _lists(row, True) for a, row in matrix.items()} if arrays
                             else matrix)  # asked for: whole (MAX_HESSIAN_ENTRIES bounds it)
        record["hessian_check"] = None if hessian_check is None else hessian_check.record()
    if result.hvp is not None:  # an array program's H·v (gradcheck/hessian.py)
        record["hvp"] = _lists(result.hvp.product, True)  # asked for: whole
        record["hvp_direction"] = _lists(result.hvp.direction, full)
        record["hvp_check"] = None if result.hvp.check is None else result.hvp.check.record()
    return record


def _lists(values: dict[str, Any], full: bool = False) -> dict[str, Any]:
    return {name: json_array(value, full) for name, value in values.items()}


def _listed(value: Any) -> Any:
    """An array as nested lists (a 0-d array as a number)."""
    return value.tolist() if hasattr(value, "tolist") else value


# NumPy's print threshold: a larger array is written as its summary. Programs whose arrays are
# this small get every element everywhere, as NumPy prints them whole.
JSON_SHOWN_ELEMENTS = 1000


def json_array(value: Any, full: bool = False) -> Any:
    """A number as itself, an array as nested lists, or past ``JSON_SHOWN_ELEMENTS`` elements
    (unless ``full``) as ``array_summary``: a 1000x1000 input is a few hundred bytes, not 20 MB
    of text per place it appears."""
    if full or getattr(value, "size", 0) <= JSON_SHOWN_ELEMENTS:
        return _listed(value)
    return array_summary(value)


def array_summary(array: Any) -> dict[str, Any]:
    """``{"summarised": true, "shape", "min", "max", "mean", "norm", "nan", "inf"}``: the
    statistics of the finite elements (scaled by the largest magnitude, so that they do not
    overflow), and how many are NaN or infinite."""
    import numpy as np

    values = np.asarray(array, dtype=float)
    nan, inf = int(np.isnan(values).sum()), int(np.isinf(values).sum())
    finite = values.ravel() if nan + inf == 0 else values[np.isfinite(values)]
    stats: dict[str, Any] = dict.fromkeys(("min", "max", "mean", "norm"))
    if finite.size:
        low, high = float(finite.min()), float(finite.max())
        scale = max(-low, high) or 1.0
        scaled = finite / scale
        stats.update(min=low, max=high, mean=float(scaled.mean()) * scale,
                     norm=float(np.linalg.norm(scaled)) * scale)
    return {"summarised": True, "shape": list(values.shape), **stats, "nan": nan, "inf": inf}


def _record(source: str, line: int | None = None, **fields: Any) -> dict[str, Any]:
    """The keys every record has, in order (``line`` in a batch), null unless given."""
    record: dict[str, Any] = {} if line is None else {"line": line}
    record.update(expression=source, point=None, value=None, gradients=None, nodes=None,
                  check=None)
    record.update(fields)
    return record


def error_record(error: GradcliError, source: str, line: int | None = None) -> dict[str, Any]:
    """The same keys as a result, all null but ``expression`` and ``error``."""
    return _record(source, line, error=error.fields())


def dumps(record: dict[str, Any], once: bool = False) -> str:
    """One line of JSON (values are finite by construction); ``once``: see ``json_pieces``."""
    if _lazy_key(record) is None:  # a batch line's lean record: a third quicker than the pieces
        return _text(record, once)
    return "".join(json_pieces(record, once))


# A record's values of these types are no iterator: tested first (the exact type, a set
# lookup), since isinstance of an ABC (Iterator) is a Python call, seven per batch record.
_PLAIN = frozenset((str, float, int, dict, list, type(None)))
NODES_PER_PIECE = 1024  # W3 --json: 2.8 MB less at the peak than 4,096, the same speed


def _lazy_key(record: dict[str, Any]) -> str | None:
    """The key of the record's iterator value (a result's nodes), if it has one."""
    for key, value in record.items():
        if type(value) not in _PLAIN and isinstance(value, Iterator):
            return key
    return None


def json_pieces(record: dict[str, Any], once: bool = False) -> Iterator[str]:
    """The JSON text of ``record`` in pieces; an iterator value (a result's nodes) is written
    ``NODES_PER_PIECE`` at a time, so that a 10^6-node record holds one piece at once. orjson:
    five times faster than the json module on a batch's records. ``once``: the one record of
    the process (``gradcli eval --json``), which ``plain_json`` writes when it is small."""
    lazy = _lazy_key(record)
    chunk = [] if lazy is None else list(itertools.islice(record[lazy], NODES_PER_PIECE))
    if len(chunk) < NODES_PER_PIECE:  # all of it (a batch line's nodes): one dumps, quicker
        yield _text(record if lazy is None else {**record, lazy: chunk}, once)
        return
    keys = list(record)
    at = keys.index(lazy)
    after = _text({key: record[key] for key in keys[at + 1:]}, once)
    yield _text({key: record[key] for key in keys[:at]} | {lazy: []}, once)[:-2]  # {..."nodes":[
    separator = ""
    while chunk:
        yield separator + _text(chunk, once)[1:-1]
        separator, chunk = ",", list(itertools.islice(record[lazy], NODES_PER_PIECE))
    yield "]" + ("," + after[1:] if at + 1 < len(keys) else "}")


def _text(value: Any, once: bool = False) -> str:
    if once:
        parts: list[str] = []
        if plain_json(value, parts):
            return "".join(parts)
    import orjson

    try:
        text = orjson.dumps(value, default=_plain).decode()
    except TypeError:  # a lone surrogate: argv bytes that were not UTF-8 (`gradcli eval $'\xff'`)
        text = orjson.dumps(_without_surrogates(value), default=_plain).decode()
    if not text.isascii() or "\x7f" in text:  # only in strings: user text an error quotes
        text = re.sub(_NOT_PRINTABLE, _escaped, text)
    return text


# A record of a short run is written without orjson, whose import (with json, datetime, uuid
# and platform, which it loads) costs more than the run's evaluation; orjson takes a record of
# more pieces of text than this (about three a value), which it writes several times faster.
PLAIN_JSON_PARTS = 6000


def plain_json(value: Any, parts: list[str]) -> bool:
    """Appends to ``parts`` the JSON text orjson writes for ``value``, if it holds at most
    ``PLAIN_JSON_PARTS`` pieces and only dicts of string keys, lists, tuples, printable ASCII
    text, bools, None, ints of 64 bits and finite floats; False (``parts`` then holds a part of
    it) for anything else, which orjson writes. Recursive: a record is a few levels deep."""
    kind = type(value)
    if kind is float:
        if value - value != 0:  # inf or nan
            return False
        text = repr(value)
        if text.endswith("e-05"):  # orjson: 0.000012 for 1.2e-05, then 1.2e-6 down to e-9
            digits = text[:-4].replace(".", "")
            text = "-0.0000" + digits[1:] if digits[0] == "-" else "0.0000" + digits
        parts.append(text.replace("e-0", "e-"))
    elif kind is str:
        if not (value.isascii() and value.isprintable()):
            return False
        parts.append('"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"')
    elif value is None or kind is bool:
        parts.append("null" if value is None else "true" if value else "false")
    elif kind is int:
        if not -(2**63) <= value < 2**63:
            return False
        parts.append(str(value))
    elif kind is dict:
        return _plain_items(value.items(), "{", "}", parts)
    elif kind is list or kind is tuple:
        return _plain_items(value, "[", "]", parts)
    else:
        return False
    return True


def _plain_items(items: Any, opening: str, closing: str, parts: list[str]) -> bool:
    """A dict's ``items()`` (key, value pairs) or a list's values as JSON, for ``plain_json``."""
    parts.append(opening)
    separator = ""
    for item in items:
        if len(parts) > PLAIN_JSON_PARTS:
            return False
        parts.append(separator)
        if opening == "{":
            key, item = item
            if type(key) is not str or not plain_json(key, parts):
                return False
            parts.append(":")
        if not plain_json(item, parts):
            return False
        separator = ","
    parts.append(closing)
    return True


def _plain(value: Any) -> Any:
    """A NumPy scalar or array as the Python number or nested lists it holds: orjson writes
    neither a ``numpy.float64`` nor a 0-d array."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _without_surrogates(value: Any) -> Any:
    """``value`` with each string's undecodable bytes (lone surrogates) read as U+FFFD, as a
    batch reads bytes that are not UTF-8 on stdin."""
    if isinstance(value, str):
        if not re.search(_SURROGATE, value):
            return value
        try:
            return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        except UnicodeEncodeError:  # a surrogate that stands for no byte
            return re.sub(_SURROGATE, "\ufffd", value)
    if isinstance(value, dict):
        return {_without_surrogates(key): _without_surrogates(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_without_surrogates(item) for item in value]
    return value


# Patterns compiled when first used (re caches them): rarely, and 3 M instructions at import
_SURROGATE = "[\ud800-\udfff]"

# The output stays printable ASCII, as the json module's is: a U+2028 or NEL left raw inside a
# string would split the record for readers that use str.splitlines, and DEL reaches terminals.
_NOT_PRINTABLE = r"[^\x00-\x7e]"


def _escaped(match: re.Match) -> str:
    """``\\uXXXX`` as the json module writes it; a surrogate pair above U+FFFF."""
    code = ord(match.group())
    if code > 0xFFFF:
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def jacobian_record(result: Any, source: str, line: int | None = None,
                    nodes: bool = True, full: bool = False) -> dict[str, Any]:
    """``{"expression", "point", "outputs", "jacobian": {output: {input: nested lists}},
    "mode", "passes", "check", "error": null, "nodes"}``; each node record gains each output's
    ``"gradients"`` (null where the output does not use the node)."""
    record: dict[str, Any] = {} if line is None else {"line": line}
    record.update(
        expression=source,
        point=_lists(result.point, full),
        outputs=_lists(result.values, True),
        jacobian={label: _lists(row, True) for label, row in result.jacobian.items()},
        mode=result.mode,
        passes=result.passes,
        check=None if result.check is None else jacobian_check_record(result.check),
        error=None,
    )
    if nodes:
        record["nodes"] = [{**row, "value": json_array(row["value"], full),
                            "gradients": {label: json_array(grad, full)
                                          for label, grad in row["gradients"].items()}}
                           for row in result.node_records()]
    return record


def jacobian_check_record(check: Any) -> dict[str, Any]:
    return {
        "ok": check.ok, "max_abs_error": check.max_error, "rtol": check.rtol,
        "atol": check.atol, "checked": check.checked, "failed": check.failed,
        "perturbed": check.columns, "inputs": check.inputs, "method": "central",
        "blocks": {label: {name: {"checked": entry.checked, "size": entry.size,
                                  "failed": entry.failed, "max_abs_error": entry.max_error,
                                  "where": list(entry.where), "analytic": entry.analytic,
                                  "numeric": entry.numeric, "tolerance": entry.tolerance}
                           for name, entry in row.items()}
                   for label, row in check.blocks.items()},
    }
