"""One casting policy for every entry point: lossless widenings go in, values that fit
are checked one by one, anything else is a SchemaMismatchError naming column, row and
types, and nothing is written."""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

import tablelog
from tablelog.errors import SchemaMismatchError
from tablelog.table import internals
from tablelog.writing.casting import Verdict, verdict

SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False), ("name", pa.string()), ("tiny", pa.int8()),
    ("score", pa.float64()), ("ratio", pa.float32()), ("price", pa.decimal128(10, 2)),
    ("at", pa.timestamp("us")), ("at_utc", pa.timestamp("us", tz="UTC")),
])
ROW = {"id": 1, "name": "a", "tiny": 1, "score": 1.5, "ratio": 0.5, "price": decimal.Decimal("1.50"),
       "at": dt.datetime(2024, 1, 1), "at_utc": dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)}


@pytest.fixture
def table(tmp_path: Any) -> tablelog.Table:
    table = tablelog.create_table(str(tmp_path), "db.cast", SCHEMA, primary_key=["id"], bucket=2,
                                  options={"log.system": "filesystem"})
    with table.writer() as writer:
        writer.write([ROW])
        writer.commit()
    return table


def refused(table: tablelog.Table, data: Any, message: str) -> None:
    """The write fails with ``message`` and leaves table and log as they were."""
    snapshot = internals(table).files.latest_snapshot()
    with internals(table).open_log() as log:
        before = log.end_positions([0, 1])
    with table.writer() as writer, pytest.raises(SchemaMismatchError, match=message) as raised:
        writer.write(data)
    assert "db.cast" in str(raised.value)
    assert internals(table).files.latest_snapshot() == snapshot
    with internals(table).open_log() as log:
        assert log.end_positions([0, 1]) == before
    assert table.rows().to_pylist() == [ROW]


def test_a_boolean_is_not_an_integer_key_and_overwrites_nothing(table: tablelog.Table) -> None:
    refused(table, [{**ROW, "id": True, "name": "impostor"}],
            r"column 'id' has type bool \(row 0: True\), the table column is int64")


def test_a_numeric_string_is_not_converted_to_an_integer(table: tablelog.Table) -> None:
    refused(table, [{**ROW, "id": "7"}], r"column 'id' has type string \(row 0: '7'\), the table column is int64")


def test_an_integer_is_not_converted_to_a_string(table: tablelog.Table) -> None:
    refused(table, [{**ROW, "id": 2, "name": 123}], r"column 'name' has type int64 \(row 0: 123\).* string")


def test_mixed_types_in_one_column_name_the_column_and_both_rows(table: tablelog.Table) -> None:
    refused(table, [{**ROW, "id": 2}, {**ROW, "id": "x"}],
            r"column 'id' mixes types: row 0 is int \(2\), row 1 is str \('x'\)")


def test_an_integer_beyond_int64_is_refused_naming_column_and_row(table: tablelog.Table) -> None:
    refused(table, [{**ROW, "id": 2}, {**ROW, "id": 3, "tiny": 2**70}], r"column 'tiny' row 1: 1180591620717411303424")


def test_an_integer_out_of_a_narrow_columns_range_is_refused_naming_row_and_value(table: tablelog.Table) -> None:
    refused(table, [{**ROW, "id": 2}, {**ROW, "id": 3, "tiny": 300}],
            r"column 'tiny' row 1: 300 \(int64\) does not fit the table column's type int8")


def test_an_integer_a_float_column_cannot_hold_exactly_is_refused(table: tablelog.Table) -> None:
    refused(table, pa.table({**{k: [v] for k, v in ROW.items()}, "score": pa.array([2**53 + 1])}),
            r"column 'score' row 0: 9007199254740993 \(int64\) does not fit .* double")
    refused(table, [{**ROW, "score": 2.5}, {**ROW, "id": 2, "score": 2**53 + 1}], r"column 'score' row 1")


def test_a_finite_float_that_overflows_float32_is_refused(table: tablelog.Table) -> None:
    refused(table, [{**ROW, "ratio": 1e300}], r"column 'ratio' row 0: 1e\+300 .*out of the range of float")


def test_a_decimal_that_would_be_rounded_is_refused(table: tablelog.Table) -> None:
    refused(table, [{**ROW, "price": decimal.Decimal("1.234")}], r"column 'price' row 0: Decimal\('1.234'\)")


def test_a_float_is_never_converted_to_an_integer_or_a_decimal(table: tablelog.Table) -> None:
    refused(table, [{**ROW, "id": 2}, {**ROW, "id": 3.0}], r"column 'id' has type double \(row 1: 3.0\)")
    refused(table, [{**ROW, "price": 1.5}], r"column 'price' has type double \(row 0: 1.5\).*decimal128")


def test_a_timestamp_with_a_time_zone_and_one_without_do_not_mix(table: tablelog.Table) -> None:
    refused(table, [{**ROW, "at": dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)}],
            r"column 'at' has type timestamp\[us, tz=UTC\].*an instant, one without a wall-clock time")
    refused(table, [{**ROW, "at_utc": dt.datetime(2024, 1, 1)}], r"column 'at_utc' has type timestamp\[us\]")


def test_a_key_only_in_a_later_row_is_an_unknown_column(table: tablelog.Table) -> None:
    refused(table, [{**ROW, "id": 2}, {**ROW, "id": 3, "nmae": "typo"}], r"unknown columns \['nmae'\]")


def test_a_pandas_column_of_mixed_objects_is_refused_naming_its_rows(table: tablelog.Table) -> None:
    refused(table, pd.DataFrame([{**ROW, "id": 2}, {**ROW, "id": "x"}]), r"column 'id' mixes types: row 0 .* row 1")


def test_lossless_widenings_and_values_that_fit_are_written(table: tablelog.Table) -> None:
    data = pa.table({
        "id": pa.array([2, 3], pa.int32()), "name": pa.array(["b", "c"], pa.large_string()),
        "tiny": pa.array([-128, 127], pa.int64()), "score": pa.array([1.5, 2.5], pa.float32()),
        "ratio": pa.array([0.1, 2.0], pa.float64()), "price": pa.array([7, -3], pa.int64()),
        "at": pa.array([dt.date(2024, 1, 2), None], pa.date32()),
        "at_utc": pa.array([0, 1], pa.timestamp("s", tz="Europe/Berlin")),
    })
    with table.writer() as writer:
        writer.write(data)
        writer.commit()
    rows = {r["id"]: r for r in table.rows().to_pylist()}
    assert rows[2]["tiny"] == -128 and rows[3]["price"] == decimal.Decimal("-3.00")
    assert rows[2]["at"] == dt.datetime(2024, 1, 2) and rows[3]["at_utc"].timestamp() == 1
    assert rows[2]["ratio"] == pytest.approx(0.1) and rows[3]["score"] == 2.5


@pytest.mark.parametrize(("given", "target", "expected"), [
    (pa.int8(), pa.int64(), Verdict.ALWAYS), (pa.int32(), pa.int64(), Verdict.ALWAYS),
    (pa.uint32(), pa.int64(), Verdict.ALWAYS), (pa.uint64(), pa.int64(), Verdict.CHECKED),
    (pa.int64(), pa.int8(), Verdict.CHECKED), (pa.float32(), pa.float64(), Verdict.ALWAYS),
    (pa.float64(), pa.float32(), Verdict.CHECKED), (pa.int32(), pa.float64(), Verdict.ALWAYS),
    (pa.int64(), pa.float64(), Verdict.CHECKED), (pa.int16(), pa.float32(), Verdict.ALWAYS),
    (pa.int32(), pa.float32(), Verdict.CHECKED), (pa.decimal128(5, 2), pa.decimal128(10, 3), Verdict.ALWAYS),
    (pa.decimal128(10, 3), pa.decimal128(10, 2), Verdict.CHECKED), (pa.int32(), pa.decimal128(10, 0), Verdict.ALWAYS),
    (pa.int64(), pa.decimal128(10, 2), Verdict.CHECKED), (pa.date32(), pa.timestamp("us"), Verdict.ALWAYS),
    (pa.date32(), pa.timestamp("us", tz="UTC"), Verdict.NEVER), (pa.timestamp("ms"), pa.timestamp("us"), Verdict.ALWAYS),
    (pa.timestamp("ns"), pa.timestamp("us"), Verdict.CHECKED),
    (pa.timestamp("us", tz="UTC"), pa.timestamp("us"), Verdict.NEVER),
    (pa.timestamp("us", tz="Asia/Tokyo"), pa.timestamp("us", tz="UTC"), Verdict.ALWAYS),
    (pa.time64("us"), pa.time32("ms"), Verdict.CHECKED), (pa.null(), pa.int64(), Verdict.ALWAYS),
    (pa.large_string(), pa.string(), Verdict.ALWAYS), (pa.bool_(), pa.int64(), Verdict.NEVER),
    (pa.int64(), pa.bool_(), Verdict.NEVER), (pa.string(), pa.int64(), Verdict.NEVER),
    (pa.int64(), pa.string(), Verdict.NEVER), (pa.float64(), pa.int64(), Verdict.NEVER),
    (pa.float64(), pa.decimal128(10, 2), Verdict.NEVER), (pa.decimal128(10, 2), pa.float64(), Verdict.NEVER),
    (pa.string(), pa.binary(), Verdict.NEVER), (pa.binary(), pa.string(), Verdict.NEVER),
    (pa.date32(), pa.string(), Verdict.NEVER),
])
def test_the_policy_of_each_pair_of_types(given: pa.DataType, target: pa.DataType, expected: Verdict) -> None:
    assert verdict(given, target) is expected
