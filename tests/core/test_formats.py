"""Record encodings: Debezium envelopes and plain JSON, with row kinds and typed values."""

import datetime as dt
import decimal

import orjson
import pyarrow as pa
import pytest

from tablelog.errors import SchemaMismatchError
from tablelog.formats import record_codec
from tablelog.formats.json_codec import JsonCodec
from tablelog.options import LogFormat
from tablelog.records import RowKind

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


#: The formats of a record per row (``arrow`` records hold batches: tests/core/test_arrow_log.py).
PER_ROW_FORMATS = [f for f in LogFormat if f is not LogFormat.ARROW]

def codec(fmt: LogFormat = LogFormat.DEBEZIUM_JSON, schema: pa.Schema = SCHEMA) -> JsonCodec:
    chosen = record_codec(schema, ("id",), fmt)
    assert isinstance(chosen, JsonCodec)
    return chosen


def test_debezium_envelopes_have_before_after_and_op() -> None:
    data = pa.table({"id": [1, 2], "name": ["a", "b"]}, schema=SCHEMA)
    encoded = codec().encode(data, [RowKind.INSERT, RowKind.DELETE], 1000)
    assert orjson.loads(encoded.values[0]) == {
        "before": None, "after": {"id": 1, "name": "a"}, "op": "c", "ts_ms": 1000, "_kind": "+I", "_schema": 0}
    assert orjson.loads(encoded.values[1]) == {
        "before": {"id": 2, "name": "b"}, "after": None, "op": "d", "ts_ms": 1000, "_kind": "-D", "_schema": 0}
    assert encoded.keys == [b'{"id":1}', b'{"id":2}']


@pytest.mark.parametrize("fmt", PER_ROW_FORMATS)
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
    c = record_codec(schema, ("id",), LogFormat.DEBEZIUM_JSON)
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
        record_codec(schema, ("id",), LogFormat.JSON)


_ALL_TYPES = pa.schema([
    pa.field("id", pa.int64(), nullable=False), ("i8", pa.int8()), ("f", pa.float64()), ("b", pa.bool_()),
    ("s", pa.string()), ("bin", pa.binary()), ("dec", pa.decimal128(10, 3)), ("d", pa.date32()),
    ("t", pa.time64("us")), ("ts", pa.timestamp("ms")), ("tz", pa.timestamp("us", tz="UTC")),
    ("ls", pa.large_string()),
])
_ALL_TYPES_ROWS = [
    {"id": 1, "i8": -3, "f": 1.0, "b": True, "s": 'line\nbreak "quoted"', "bin": b"\x00\xff",
     "dec": decimal.Decimal("1.250"), "d": dt.date(2024, 1, 2), "t": dt.time(1, 2, 3, 4),
     "ts": dt.datetime(2024, 1, 1, 1, 1, 1, 123000), "tz": dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc),
     "ls": "x"},
    {"id": 2},
    {"id": 3, "f": 2.5, "s": "ü"},
    {"id": 4, "i8": 7},
]


@pytest.mark.parametrize("fmt", PER_ROW_FORMATS)
def test_values_decoded_all_at_once_equal_values_decoded_one_by_one(fmt: LogFormat) -> None:
    codec = record_codec(_ALL_TYPES, ("id",), fmt)
    kinds = [RowKind.INSERT, RowKind.UPDATE_BEFORE, RowKind.UPDATE_AFTER, RowKind.DELETE]
    values = codec.encode(pa.Table.from_pylist(_ALL_TYPES_ROWS, schema=_ALL_TYPES), kinds, 123).values
    decoded = [codec.decode_value(v) for v in values]
    one_by_one = pa.Table.from_pylist([codec.python_row(row) for _, row in decoded], schema=_ALL_TYPES)
    one_by_one = one_by_one.add_column(0, "_kind", pa.array([k.value for k, _ in decoded], pa.string()))
    all_at_once = codec.values_to_arrow(values)
    assert all_at_once.schema == one_by_one.schema
    assert all_at_once.to_pylist() == one_by_one.to_pylist()


@pytest.mark.parametrize("fmt", PER_ROW_FORMATS)
@pytest.mark.parametrize("foreign", [
    b'{"op": "x"}', b"[1]", b'{"before": null, "after": {"id": "not a number"}, "op": "c"}', b"not json",
    b'{"id": 1}', b'{"id": 1, "_kind": "+I"}\n{"id": 2, "_kind": "+I"}',
])
def test_values_decoded_all_at_once_reject_any_value_that_is_not_a_row(fmt: LogFormat, foreign: bytes) -> None:
    codec = record_codec(_ALL_TYPES, ("id",), fmt)
    good = codec.encode(pa.Table.from_pylist(_ALL_TYPES_ROWS[:1], schema=_ALL_TYPES), [RowKind.INSERT], 1).values
    with pytest.raises(ValueError):
        codec.values_to_arrow([*good, foreign])


def test_values_decoded_all_at_once_handle_values_larger_than_a_block() -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("s", pa.string())])
    codec = record_codec(schema, ("id",), LogFormat.DEBEZIUM_JSON)
    rows = pa.Table.from_pylist([{"id": i, "s": "x" * (3 << 20) if i == 1 else "y"} for i in range(3)], schema=schema)
    values = codec.encode(rows, [RowKind.INSERT] * 3, 1).values
    assert codec.values_to_arrow(values).column("s").to_pylist() == rows.column("s").to_pylist()


FLOATS = pa.schema([("id", pa.int64()), ("x", pa.float64()), ("s", pa.string())])
PER_RECORD_CASES = [
    b'{"before":null,"after":{"id":1,"x":0.5,"s":"a"},"op":"c","ts_ms":0,"_kind":"+I"}',
    b'{"before":null,"after":{"id":1,"x":0.5,"s":"a"},"op":"c","ts_ms":0,"_kind":"+U"}',
    b'{"before":{"id":1,"x":0.5,"s":"a"},"after":null,"op":"d","ts_ms":0,"_kind":"-U"}',
    b'{"before":{"id":1,"x":0.5,"s":"a"},"after":null,"op":"d","ts_ms":0,"_kind":"-D"}',
    b'{"before":null,"after":{"id":1,"x":"NaN","s":"a"},"op":"c","ts_ms":0,"_kind":"+I"}',
    b'{"before":null,"after":{"id":1,"x":"-Infinity","s":"a"},"op":"c","ts_ms":0,"_kind":"+I"}',
    b'{"before":null,"after":{"id":1,"x":1.0,"s":"BANaN\\""},"op":"c","ts_ms":0,"_kind":"+I"}',
    b'{"before":null,"after":{"s":"a","x":0.5,"id":1},"op":"c","ts_ms":0,"_kind":"+I"}',
    b'{"before":null,"after":{"id":1,"s":"a"},"op":"c","ts_ms":0,"_kind":"+I"}',
    b'{"before":null,"after":{"id":1,"x":0.5,"s":"a"},"op":"u","ts_ms":0}',
    b'{"schema":{},"payload":{"before":null,"after":{"id":1,"x":0.5,"s":"a"},"op":"r"}}',
    b'{"before":{"id":1,"x":0.5,"s":"a"},"after":null,"op":"c","ts_ms":0,"_kind":"-D"}',
    b'{"before":null,"after":[1],"op":"c","ts_ms":0,"_kind":"+I"}',
    b'[1, 2]',
]


@pytest.mark.parametrize("value", PER_RECORD_CASES)
def test_the_per_record_decoder_agrees_with_decode_value_and_python_row(value: bytes) -> None:
    c = codec(schema=FLOATS)

    def general() -> object:
        kind, row = c.decode_value(value)
        return kind, c.python_row(row)

    try:
        expected = general()
    except (ValueError, KeyError, TypeError) as err:
        with pytest.raises(type(err)):
            c.change_decoder(value)
        return
    decoded = c.change_decoder(value)
    assert repr(decoded) == repr(expected)  # repr: NaN equals itself there


def test_an_arrow_codec_has_no_per_row_encodings() -> None:
    # The per-row methods are the per-record format's own: an arrow codec cannot be asked
    # to write or read its records as Debezium JSON (the interface has no such method).
    c = record_codec(SCHEMA, ("id",), LogFormat.ARROW)
    data = pa.table({"id": [7], "name": ["x"]}, schema=SCHEMA)
    for per_row in ("encode", "decode_record", "decode_value", "values_to_arrow", "change_decoder", "python_row"):
        assert not hasattr(c, per_row)
    assert len(c.encode_batches(data, [RowKind.INSERT], 10_000)) == 1
