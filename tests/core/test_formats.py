"""Record encodings: Debezium envelopes and plain JSON, with row kinds and typed values."""

import datetime as dt
import decimal

import orjson
import pyarrow as pa
import pytest

from tablelog.errors import SchemaMismatchError
from tablelog.formats import RecordCodec
from tablelog.options import LogFormat
from tablelog.records import RowKind

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def codec(fmt: LogFormat = LogFormat.DEBEZIUM_JSON, schema: pa.Schema = SCHEMA) -> RecordCodec:
    return RecordCodec(schema, ("id",), fmt)


def test_debezium_envelopes_have_before_after_and_op() -> None:
    data = pa.table({"id": [1, 2], "name": ["a", "b"]}, schema=SCHEMA)
    encoded = codec().encode(data, [RowKind.INSERT, RowKind.DELETE], 1000)
    assert orjson.loads(encoded.values[0]) == {"before": None, "after": {"id": 1, "name": "a"}, "op": "c", "ts_ms": 1000}
    assert orjson.loads(encoded.values[1]) == {"before": {"id": 2, "name": "b"}, "after": None, "op": "d", "ts_ms": 1000}
    assert encoded.keys == [b'{"id":1}', b'{"id":2}']


@pytest.mark.parametrize("fmt", list(LogFormat))
@pytest.mark.parametrize("kind", list(RowKind))
def test_every_row_kind_round_trips(fmt: LogFormat, kind: RowKind) -> None:
    c = codec(fmt)
    value = c.encode(pa.table({"id": [7], "name": ["x"]}, schema=SCHEMA), [kind], 0).values[0]
    assert c.decode_value(value) == (kind, {"id": 7, "name": "x"})


def test_typed_values_round_trip_exactly() -> None:
    schema = pa.schema([("id", pa.int64()), ("at", pa.timestamp("us")), ("day", pa.date32()),
                        ("price", pa.decimal128(10, 2)), ("blob", pa.binary())])
    row = {"id": 1, "at": dt.datetime(2026, 11, 21, 12, 30, 1, 123456), "day": dt.date(2026, 1, 2),
           "price": decimal.Decimal("12.34"), "blob": b"\x00\xff"}
    c = RecordCodec(schema, ("id",), LogFormat.DEBEZIUM_JSON)
    value = c.encode(pa.Table.from_pylist([row], schema=schema), [RowKind.INSERT], 0).values[0]
    kind, decoded = c.decode_value(value)
    assert c.python_row(decoded) == row


def test_foreign_bytes_are_rejected() -> None:
    with pytest.raises(ValueError):
        codec().decode_value(b"not json at all")
    with pytest.raises(ValueError):
        codec().decode_value(b'{"op": "x"}')


def test_unsupported_column_type_is_named() -> None:
    schema = pa.schema([("id", pa.int64()), ("tags", pa.list_(pa.string()))])
    with pytest.raises(SchemaMismatchError, match="column 'tags'"):
        RecordCodec(schema, ("id",), LogFormat.JSON)
