"""Every value a table holds comes back from its log exactly, in every log format and
every reader path, and verify finds table and log consistent.

Property-style: each column draws from a pool of edge values of its type (every edge
value appears at least once), rows are mixed by a seeded generator, and each row goes
through a Writer to the filesystem log, is updated and some are deleted.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import random
from typing import Any

import orjson
import pyarrow as pa
import pytest

import tablelog
from tablelog.errors import SchemaMismatchError
from tablelog.formats import record_codec
from tablelog.options import LogFormat
from tablelog.records import RowKind
from tablelog.row_equality import row_items
from tablelog.table import internals
from tablelog.verify import verify

UTC = dt.timezone.utc
F32_MAX = 3.4028234663852886e38
F32_TINY = 1.401298464324817e-45  # the smallest float32 above zero

EDGES: dict[str, tuple[pa.DataType, list[Any]]] = {
    "f64": (pa.float64(), [math.nan, math.inf, -math.inf, -0.0, 0.0, 5e-324, 1.7976931348623157e308,
                           -1.7976931348623157e308, 0.1, 2.0**53 + 2, None]),
    "f32": (pa.float32(), [math.nan, math.inf, -math.inf, -0.0, F32_MAX, -F32_MAX, F32_TINY,
                           0.10000000149011612, None]),
    "i64": (pa.int64(), [2**63 - 1, -(2**63), 2**53 + 1, 0, -1, None]),
    "i8": (pa.int8(), [127, -128, 0, None]),
    "i16": (pa.int16(), [32767, -32768, None]),
    "i32": (pa.int32(), [2**31 - 1, -(2**31), None]),
    "flag": (pa.bool_(), [True, False, None]),
    "dec": (pa.decimal128(38, 10), [decimal.Decimal("9999999999999999999999999999.9999999999"),
                                    decimal.Decimal("-0.0000000001"), decimal.Decimal("0E-10"), None]),
    "dec0": (pa.decimal128(38, 0), [decimal.Decimal("-99999999999999999999999999999999999999"), None]),
    "s": (pa.string(), ["", "a\x00b", "\U0001f600 emoji", "ünïcödé", 'quote " back\\slash \n', "\u2028", None]),
    "bin": (pa.binary(), [b"", b"\x00", b"\x00\xff\x00", bytes(range(256)), None]),
    "day": (pa.date32(), [dt.date(1, 1, 1), dt.date(9999, 12, 31), dt.date(1969, 12, 31), dt.date(1970, 1, 1),
                          None]),
    "at": (pa.timestamp("us"), [dt.datetime(1, 1, 1), dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
                                dt.datetime(9999, 12, 31, 23, 59, 59, 999999), None]),
    "at_ms": (pa.timestamp("ms"), [dt.datetime(1900, 1, 1, 0, 0, 0, 1000), None]),
    "at_ns": (pa.timestamp("ns"), [dt.datetime(1677, 9, 22), dt.datetime(2262, 4, 11), None]),
    "at_tz": (pa.timestamp("us", tz="UTC"), [dt.datetime(1901, 1, 1, tzinfo=UTC),
                                             dt.datetime(2038, 1, 19, 3, 14, 8, tzinfo=UTC), None]),
    "tod": (pa.time32("ms"), [dt.time(0, 0), dt.time(23, 59, 59, 999000), None]),
}
#: The formats of a record per row (``arrow`` values are Arrow batches, which carry every float as it is).
JSON_FORMATS = [f for f in LogFormat if f is not LogFormat.ARROW]
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False),
                    *(pa.field(name, data_type) for name, (data_type, _) in EDGES.items())])


def edge_rows(count: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    rows = []
    for i in range(count):
        row: dict[str, Any] = {"id": i}
        for name, (_, values) in EDGES.items():
            # the first rows walk through every edge value in turn; the rest mix them
            row[name] = values[i] if i < len(values) else rng.choice(values)
        rows.append(row)
    return rows


def bag(rows: list[dict[str, Any]]) -> list[Any]:
    return sorted((row_items(r) for r in rows), key=repr)


def replay(changes: list[Any]) -> dict[int, dict[str, Any]]:
    state: dict[int, dict[str, Any]] = {}
    for kind, row in changes:
        if RowKind(kind).is_retraction:
            state.pop(row["id"], None)
        else:
            state[row["id"]] = row
    return state


@pytest.mark.parametrize("log_format", ["debezium-json", "json", "arrow"])
@pytest.mark.parametrize("changelog_mode", ["upsert", "all"])
def test_every_value_round_trips_through_the_log_in_every_reader_path(
    tmp_path: Any, log_format: str, changelog_mode: str
) -> None:
    table = tablelog.create_table(
        str(tmp_path), "db.values", SCHEMA, primary_key=["id"], bucket=2,
        options={"log.system": "filesystem", "log.format": log_format, "log.changelog-mode": changelog_mode},
    )
    first, second = edge_rows(40, seed=1), edge_rows(40, seed=2)
    with table.writer() as writer:
        writer.write(first)
        writer.commit()
        writer.write([c for old, new in zip(first[:20], second[:20], strict=True)
                      for c in (("-U", old), ("+U", new))])
        writer.write([("-D", row) for row in first[30:]])
        writer.commit()
    expected = {**{r["id"]: r for r in first[:30]}, **{r["id"]: r for r in second[:20]}}
    table_rows = table.rows().to_pylist()
    assert bag(table_rows) == bag(list(expected.values()))

    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        transactional = [(c.kind.value, c.row) for c in reader.read_all(idle_timeout_s=0.2)]
    with table.reader(consistency="eventual", scan_mode="earliest") as reader:
        eventual = [(c.kind.value, c.row) for c in reader.read_all(idle_timeout_s=0.2)]
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        arrow = pa.concat_tables([reader.poll_arrow(timeout_s=0.2) for _ in range(4)]).to_pylist()
    columnar = [(r.pop("_kind"), r) for r in arrow]
    for changes in (transactional, eventual, columnar):
        assert bag(list(replay(changes).values())) == bag(table_rows)
    assert [k for k, _ in transactional] == [k for k, _ in columnar]
    assert bag([r for _, r in transactional]) == bag([r for _, r in columnar])

    report = verify(table)
    assert report.consistent, report.summary()


@pytest.mark.parametrize("fmt", JSON_FORMATS)
def test_special_floats_are_written_as_the_strings_jackson_reads(fmt: LogFormat) -> None:
    schema = pa.schema([("id", pa.float64()), ("x", pa.float32())])
    codec = record_codec(schema, ("id",), fmt)
    data = pa.table({"id": [math.nan, math.inf], "x": [-math.inf, 1.5]}, schema=schema)
    encoded = codec.encode(data, [RowKind.INSERT, RowKind.DELETE], 7)
    assert [orjson.loads(k) for k in encoded.keys] == [{"id": "NaN"}, {"id": "Infinity"}]
    docs = [orjson.loads(v) for v in encoded.values]
    rows = [d if fmt is LogFormat.JSON else (d["after"] or d["before"]) for d in docs]
    assert [(r["id"], r["x"]) for r in rows] == [("NaN", "-Infinity"), ("Infinity", 1.5)]
    # the rows without a special value are encoded by the fast path: same shape
    plain = codec.encode(pa.table({"id": [1.0], "x": [2.0]}, schema=schema), [RowKind.INSERT], 7).values[0]
    assert list(orjson.loads(plain)) == list(docs[0])


@pytest.mark.parametrize("fmt", JSON_FORMATS)
def test_special_float_strings_decode_in_every_decoding_path(fmt: LogFormat) -> None:
    schema = pa.schema([("id", pa.int64()), ("x", pa.float64()), ("y", pa.float32())])
    codec = record_codec(schema, ("id",), fmt)
    rows = [{"id": 1, "x": math.nan, "y": math.inf}, {"id": 2, "x": -math.inf, "y": 0.5}, {"id": 3, "x": 1.0}]
    values = codec.encode(pa.Table.from_pylist(rows, schema=schema), [RowKind.INSERT] * 3, 0).values
    one_by_one = [codec.python_row(codec.decode_value(v)[1]) for v in values]
    all_at_once = codec.values_to_arrow(values).drop_columns(["_kind"]).to_pylist()
    decoded = [codec.decode_value(v) for v in values]
    via_rows = codec.rows_to_arrow([k for k, _ in decoded], [codec.python_row(r) for _, r in decoded]).drop_columns(
        ["_kind"]).to_pylist()
    for decoded in (one_by_one, all_at_once, via_rows):
        assert bag(decoded) == bag([{"y": None, **r} for r in rows])


def test_a_string_that_is_no_special_float_in_a_float_column_is_not_a_row() -> None:
    codec = record_codec(pa.schema([("id", pa.int64()), ("x", pa.float64())]), ("id",), LogFormat.JSON)
    with pytest.raises(ValueError):
        codec.values_to_arrow([b'{"id": 1, "x": "NaN", "_kind": "+I"}', b'{"id": 2, "x": "nope", "_kind": "+I"}'])
    with pytest.raises(KeyError):
        codec.python_row(codec.decode_value(b'{"id": 2, "x": "nope", "_kind": "+I"}')[1])


def test_float32_values_read_from_the_log_equal_the_tables_values() -> None:
    schema = pa.schema([("id", pa.int64()), ("x", pa.float32())])
    codec = record_codec(schema, ("id",), LogFormat.DEBEZIUM_JSON)
    data = pa.table({"id": [1], "x": [0.1]}, schema=schema)
    value = codec.encode(data, [RowKind.INSERT], 0).values[0]
    assert codec.python_row(codec.decode_value(value)[1])["x"] == data.column("x")[0].as_py()


def test_a_nanosecond_the_log_cannot_carry_is_refused_naming_column_and_row(tmp_path: Any) -> None:
    schema = pa.schema([("id", pa.int64()), ("at", pa.timestamp("ns"))])
    table = tablelog.create_table(str(tmp_path), "db.ns", schema, primary_key=["id"],
                                  options={"log.system": "filesystem"})
    data = pa.table({"id": [1, 2], "at": pa.array([1_000, 1_001], pa.timestamp("ns"))})
    with table.writer() as writer, pytest.raises(SchemaMismatchError, match=r"column 'at' row 1: .*microsecond"):
        writer.write(data)
    assert internals(table).files.latest_snapshot() is None


@pytest.mark.parametrize(("data_type", "hint"), [
    (pa.list_(pa.int64()), "nested"), (pa.struct([("a", pa.int64())]), "nested"),
    (pa.map_(pa.string(), pa.int64()), "nested"), (pa.dictionary(pa.int32(), pa.string()), "dictionary"),
    (pa.uint64(), "signed integer"), (pa.float16(), "float32"), (pa.date64(), "date32"),
    (pa.large_binary(), "use binary"), (pa.binary(4), "use binary"), (pa.decimal256(50, 2), "decimal128"),
    (pa.duration("us"), "supported: boolean"), (pa.null(), "supported: boolean"),
])
def test_a_column_type_the_table_cannot_hold_is_refused_at_create_naming_it(
    tmp_path: Any, data_type: pa.DataType, hint: str
) -> None:
    schema = pa.schema([("id", pa.int64()), ("odd", data_type)])
    for options in ({"log.system": "filesystem"}, {}):
        with pytest.raises(SchemaMismatchError, match=f"column 'odd': type .* cannot be a table column.*{hint}"):
            tablelog.create_table(str(tmp_path), "db.odd", schema, primary_key=["id"], options=options)
