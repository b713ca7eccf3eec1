"""A value has one JSON text whatever else its row or its write holds: a key value is
one record key, which Kafka's log compaction merges."""

from __future__ import annotations

import math
import re

import pyarrow as pa
import pytest

from tablelog.formats import RecordCodec
from tablelog.options import LogFormat
from tablelog.records import RowKind


@pytest.mark.parametrize("log_format", [LogFormat.DEBEZIUM_JSON, LogFormat.JSON])
def test_a_float_has_one_text_whatever_else_its_row_or_write_holds(log_format: LogFormat) -> None:
    schema = pa.schema([("k", pa.float32()), ("x", pa.float64()), ("y", pa.float32())])
    codec = RecordCodec(schema, ("k",), log_format)
    plain = pa.table({"k": [0.1, 1e10], "x": [1.0, 2.0], "y": [0.3, 0.3]}, schema=schema)
    special = pa.table({"k": [0.1, 1e10], "x": [math.nan, 2.0], "y": [0.3, -math.inf]}, schema=schema)
    plain_out = codec.encode(plain, [RowKind.INSERT] * 2, 0)
    special_out = codec.encode(special, [RowKind.INSERT] * 2, 0)
    # one record key per key value: Kafka's log compaction merges them
    assert special_out.keys == plain_out.keys
    assert plain_out.keys[0] == b'{"k":0.1}'
    def text(column: bytes, value: bytes) -> bytes:
        found = re.search(b'"' + column + b'":([^,}]*)', value)
        assert found is not None
        return found[1]

    for column in (b"k", b"y"):
        assert text(column, special_out.values[0]) == text(column, plain_out.values[0])
    assert [text(b"k", v) for v in special_out.values] == [b"0.1", b"10000000000.0"]
    assert [text(b"y", v) for v in special_out.values] == [b"0.3", b'"-Infinity"']
