"""The Spark sink and source with a table whose schema changes: an extra DataFrame column
fails naming it unless ``mergeSchema = true`` adds it; a missing nullable column is
written as null; the source returns older records in the query's schema."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import tablelog
from tablelog import AddColumn, RenameColumn
from tablelog.table import internals
from tablelog.testing.spark_inputs import collect_stream

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def write(df: Any, warehouse: Path, **options: str) -> None:
    writer = df.write.format("tablelog").option("warehouse", str(warehouse)).option("table", "db.t")
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.mode("append").save()


@pytest.fixture
def table(tmp_path: Path) -> tablelog.Table:
    return tablelog.create_table(str(tmp_path / "wh"), "db.t", SCHEMA, primary_key=["id"], bucket=2,
                                 options={"log.system": "filesystem"})


def test_a_dataframe_with_an_extra_column_fails_naming_it_and_writes_nothing(
    spark: Any, table: tablelog.Table, tmp_path: Path
) -> None:
    df = spark.createDataFrame([(1, "a", 7)], "id long, name string, extra int")
    with pytest.raises(Exception, match=r"unknown columns \['extra'\] \(set .option\('mergeSchema', 'true'\)"):
        write(df, tmp_path / "wh")
    assert internals(table).files.latest_snapshot() is None and internals(table).files.latest_schema_id() == 0


def test_merge_schema_adds_the_extra_columns_before_the_write(spark: Any, table: tablelog.Table, tmp_path: Path) -> None:
    write(spark.createDataFrame([(1, "a")], "id long, name string"), tmp_path / "wh")
    write(spark.createDataFrame([(2, "b", 7, "x")], "id long, name string, extra int, tag string"),
          tmp_path / "wh", mergeSchema="true")
    fresh = tablelog.open_table(str(tmp_path / "wh"), "db.t")
    assert [(f.name, f.type) for f in fresh.schema] == [
        ("id", pa.int64()), ("name", pa.string()), ("extra", pa.int32()), ("tag", pa.string())]
    assert sorted(fresh.rows().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "name": "a", "extra": None, "tag": None}, {"id": 2, "name": "b", "extra": 7, "tag": "x"}]


def test_merge_schema_with_a_column_that_does_not_fit_changes_nothing(
    spark: Any, table: tablelog.Table, tmp_path: Path
) -> None:
    df = spark.createDataFrame([("x", "a", 7)], "id string, name string, extra int")
    with pytest.raises(Exception, match="column 'id' is string in the DataFrame but int64"):
        write(df, tmp_path / "wh", mergeSchema="true")
    assert internals(table).files.latest_schema_id() == 0


def test_a_dataframe_without_a_nullable_column_writes_null_there(
    spark: Any, table: tablelog.Table, tmp_path: Path
) -> None:
    write(spark.createDataFrame([(1,)], "id long"), tmp_path / "wh")
    assert table.rows().to_pylist() == [{"id": 1, "name": None}]


def test_the_spark_source_returns_records_of_older_schemas_in_the_query_s_schema(
    spark: Any, table: tablelog.Table, tmp_path: Path
) -> None:
    with table.writer() as writer:
        writer.write([{"id": 1, "name": "a"}])
        writer.commit()
    table.alter(AddColumn("note", pa.string()), RenameColumn("name", "label"))
    with table.writer() as writer:
        writer.write([{"id": 2, "label": "b", "note": "x"}])
        writer.commit()
    stream = (spark.readStream.format("tablelog").option("warehouse", str(tmp_path / "wh"))
              .option("table", "db.t").option("scan.mode", "earliest").load())
    assert stream.columns == ["_kind", "id", "label", "note"]
    rows = collect_stream(stream, tmp_path / "ck")
    assert sorted(rows, key=lambda r: r["id"]) == [
        {"_kind": "+I", "id": 1, "label": "a", "note": None}, {"_kind": "+I", "id": 2, "label": "b", "note": "x"}]


def test_a_streaming_query_keeps_its_columns_until_restarted_from_its_checkpoint(
    spark: Any, table: tablelog.Table, tmp_path: Path
) -> None:
    def read() -> list[dict[str, Any]]:
        stream = (spark.readStream.format("tablelog").option("warehouse", str(tmp_path / "wh"))
                  .option("table", "db.t").option("scan.mode", "earliest").load())
        return collect_stream(stream, tmp_path / "ck")

    with table.writer() as writer:
        writer.write([{"id": 1, "name": "a"}])
        writer.commit()
    assert read() == [{"_kind": "+I", "id": 1, "name": "a"}]
    table.alter(AddColumn("note", pa.string()), RenameColumn("name", "label"))
    with table.writer() as writer:
        writer.write([{"id": 2, "label": "b", "note": "x"}])
        writer.commit()
    # Restarted from its checkpoint: the next micro-batch has the new columns, each change once.
    assert read() == [{"_kind": "+I", "id": 2, "label": "b", "note": "x"}]
