"""Bad writes fail on the driver before anything is written, with errors that name the problem."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import tablelog
from tablelog.store import Warehouse
from tablelog.table import internals


def write(df: Any, warehouse: Path | str, name: str, **options: str) -> None:
    writer = df.write.format("tablelog").option("warehouse", str(warehouse)).option("table", name)
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.mode("append").save()


@pytest.fixture
def rows(spark: Any) -> Any:
    return spark.createDataFrame([(1, "a", 0.5), (2, "b", 1.5)], "id long, name string, score double")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"log.system": "nosuch"}, "unknown log.system 'nosuch'"),
        ({"log.system": "kafka"}, "needs option 'kafka.bootstrap.servers'"),
        ({"log.system": "filesystem", "log.consistensy": "eventual"}, "did you mean 'log.consistency'"),
    ],
    ids=["unknown-log-system", "kafka-without-bootstrap", "misspelt-option"],
)
def test_bad_table_options_fail_before_the_table_exists(
    rows: Any, tmp_path: Path, options: dict[str, str], message: str
) -> None:
    with pytest.raises(Exception, match=message):
        write(rows, tmp_path, "db.t", **{"primary-key": "id", **options})
    assert not Warehouse(str(tmp_path)).exists("db.t")


@pytest.mark.parametrize(
    ("select", "message"),
    [
        ("name, score", r"missing columns \['id'\]"),
        ("id, name, score, 1 AS extra", r"unknown columns \['extra'\]"),
        ("id, name, CAST(score AS STRING) AS score", "column 'score' is string in the DataFrame but double"),
        ("id, name, score, 7 AS _kind", "column '_kind' must be a string of row kinds"),
    ],
    ids=["missing-column", "extra-column", "uncastable-type", "bad-kind-column"],
)
def test_dataframe_not_matching_the_table_fails_before_anything_is_written(
    rows: Any, tmp_path: Path, select: str, message: str
) -> None:
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("score", pa.float64())])
    table = tablelog.create_table(str(tmp_path), "db.t", schema, primary_key=["id"], bucket=2,
                                  options={"log.system": "filesystem"})
    with pytest.raises(Exception, match=message):
        write(rows.selectExpr(*select.split(", ")), tmp_path, "db.t")
    assert internals(table).files.latest_snapshot() is None
    with table.reader(consistency="eventual", scan_mode="earliest") as reader:
        assert reader.read_all(idle_timeout_s=0.2) == []


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"log.format": "json"}, "log.format: the table has 'debezium-json', given 'json'"),
        ({"filesystem.topic": "elsewhere"}, "filesystem.topic: the table has 'db.t', given 'elsewhere'"),
        ({"bucket": "3"}, "bucket: the table has 2, given 3"),
        ({"file.format": "orc"}, "file.format: the table has 'parquet', given 'orc'"),
    ],
    ids=["log-format", "topic", "bucket", "paimon-file-format"],
)
def test_a_write_or_read_that_changes_a_defining_option_fails_before_anything_is_written(
    spark: Any, rows: Any, tmp_path: Path, options: dict[str, str], message: str
) -> None:
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("score", pa.float64())])
    table = tablelog.create_table(str(tmp_path), "db.t", schema, primary_key=["id"], bucket=2,
                                  options={"log.system": "filesystem"})
    write(rows, tmp_path, "db.t", **{"primary-key": "id", "bucket": "2", "log.system": "filesystem"})  # equal: fine
    with pytest.raises(Exception, match=message):
        write(rows, tmp_path, "db.t", **{"primary-key": "id", **options})
    with pytest.raises(Exception, match=message):
        reader = spark.read.format("tablelog").option("warehouse", str(tmp_path)).option("table", "db.t")
        for key, value in options.items():
            reader = reader.option(key, value)
        reader.load().collect()
    assert [s.id for s in table.snapshots()] == [1]
    with table.reader(consistency="eventual", scan_mode="earliest") as log_reader:
        assert len(log_reader.read_all(idle_timeout_s=0.2)) == 2


def test_a_warehouse_url_of_an_unsupported_scheme_is_refused_not_made_a_local_folder(
    rows: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(Exception, match="scheme 'hdfs' is not supported"):
        write(rows, "hdfs://namenode/wh", "db.t", **{"primary-key": "id"})
    assert list(tmp_path.iterdir()) == []


def test_streaming_write_with_a_bad_schema_fails_the_query_before_any_task(
    spark: Any, tmp_path: Path
) -> None:
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    table = tablelog.create_table(str(tmp_path / "wh"), "db.t", schema, primary_key=["id"],
                                  options={"log.system": "filesystem"})
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.json").write_text('{"id": 1, "nom": "x"}\n')
    query = (spark.readStream.schema("id long, nom string").json(str(tmp_path / "in"))
             .writeStream.format("tablelog").option("warehouse", str(tmp_path / "wh")).option("table", "db.t")
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    with pytest.raises(Exception, match=r"missing columns \['name'\]; unknown columns \['nom'\]"):
        query.awaitTermination(120)
    assert internals(table).files.latest_snapshot() is None
    with table.reader(consistency="eventual", scan_mode="earliest") as reader:
        assert reader.read_all(idle_timeout_s=0.2) == []


def test_importing_tablelog_spark_without_pyspark_says_what_to_install() -> None:
    script = "import sys; sys.modules['pyspark'] = None\nimport tablelog.spark"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert 'pip install "tablelog[spark]"' in result.stderr


@pytest.mark.parametrize(
    ("select", "message"),
    [
        ("id > 0 AS id, name, score", r"column 'id' is bool in the DataFrame but int64 in the table"),
        ("id, name, CAST(score AS DECIMAL(10,2)) AS score", r"column 'score' is decimal128\(10, 2\) in the DataFrame"),
        ("id, name, id + 9007199254740992 AS score", r"column 'score' row \d+: 900719925474099\d \(int64\) does not fit"),
        ("CAST(id AS INT) AS id, name, CAST(score AS FLOAT) AS score", None),
    ],
    ids=["bool-into-bigint", "decimal-into-double", "long-a-double-cannot-hold", "lossless-widenings"],
)
def test_a_dataframe_follows_the_casting_policy_of_the_python_api(
    rows: Any, tmp_path: Path, select: str, message: str | None
) -> None:
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("score", pa.float64())])
    table = tablelog.create_table(str(tmp_path), "db.t", schema, primary_key=["id"], bucket=2,
                                  options={"log.system": "filesystem"})
    if message is None:
        write(rows.selectExpr(*select.split(", ")), tmp_path, "db.t")
        assert sorted(table.rows().to_pylist(), key=lambda r: r["id"]) == [
            {"id": 1, "name": "a", "score": 0.5}, {"id": 2, "name": "b", "score": 1.5}]
        return
    with pytest.raises(Exception, match=message):
        write(rows.selectExpr(*select.split(", ")), tmp_path, "db.t")
    assert internals(table).files.latest_snapshot() is None
