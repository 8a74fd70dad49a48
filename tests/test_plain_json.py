"""The one record of ``gradcli eval --json`` is written without orjson (issue 31: its import
costs more than a short run's evaluation): ``records.plain_json`` must write what orjson writes,
byte for byte, and leave to orjson whatever it does not write the same way."""

from __future__ import annotations

import math
import struct

import numpy as np
import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from gradcli.output.records import PLAIN_JSON_PARTS, dumps, plain_json

PRINTABLE = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=12)
SCALARS = (st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1)
           | st.floats(allow_nan=False, allow_infinity=False) | PRINTABLE)
JSON_LIKE = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=5)
                         | st.tuples(inner, inner) | st.dictionaries(PRINTABLE, inner, max_size=5),
                         max_leaves=40)


def _written(value: object) -> str | None:
    parts: list[str] = []
    return "".join(parts) if plain_json(value, parts) else None


@settings(max_examples=500)
@given(JSON_LIKE)
def test_it_writes_what_orjson_writes(value):
    assert _written(value) == orjson.dumps(value).decode()


@settings(max_examples=2000)
@given(st.integers(0, 2**64 - 1))
def test_every_float_is_written_as_orjson_writes_it(bits):
    """Any bit pattern: orjson writes 1.2e-05 as 0.000012 and 1.2e-06 as 1.2e-6."""
    number = struct.unpack("<d", struct.pack("<Q", bits))[0]
    if math.isfinite(number):
        assert _written(number) == orjson.dumps(number).decode()


def test_the_exponents_where_orjson_differs_from_repr():
    for number in (1e-05, -2.5e-05, 1.0000000000000003e-05, 9.99e-06, 1e-09, 1e-10, 1e16,
                   1e-4, 5e-324, -0.0):
        assert _written(number) == orjson.dumps(number).decode(), number


def test_what_it_does_not_write_is_left_to_orjson():
    """Text that is not printable ASCII, a lone surrogate, a number orjson writes otherwise
    or not at all, a NumPy number, a key that is not text, and a record too large."""
    too_many = list(range(PLAIN_JSON_PARTS))
    for value in ("é", "a\nb", "\x7f", "\ud800", math.nan, math.inf, 2**63, -(2**63) - 1,
                  np.float64(1.5), {1: 2}, too_many, {"a": [too_many]}):
        assert _written(value) is None, value
        assert _dumped({"v": value}, once=True) == _dumped({"v": value}), value


def _dumped(record: dict, once: bool = False) -> str:
    try:
        return dumps(record, once=once)
    except TypeError as error:  # an int orjson refuses: refused alike
        return f"TypeError: {error}"


def test_a_record_with_a_lazy_node_list_is_the_same_either_way():
    def record():
        return {"expression": "x", "nodes": iter([{"id": i, "value": i / 7} for i in range(9)]),
                "error": None}

    assert dumps(record(), once=True) == dumps(record())
    assert orjson.loads(dumps(record(), once=True))["nodes"][8]["value"] == 8 / 7
