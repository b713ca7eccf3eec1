"""Test-only fault injection (the ``testing.*`` options) lives in one data source,
``tablelog-faults``, that wraps the sink's writers from the outside; the ``tablelog``
format refuses those options. And what a task attempt that dies after its flush leaves
behind: its writer lease on the log."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql.types import LongType, StringType, StructField, StructType

import tablelog
from tablelog.commit import WriteReceipt
from tablelog.errors import OptionError, TableNotFoundError
from tablelog.records import ProducedRange
from tablelog.spark import faults, sink
from tablelog.spark.faults import InjectedFailure
from tablelog.spark.sink import TaskAttempt
from tablelog.table import internals


class _Task:
    rows, token = 3, "tok-1"


TASK: Any = _Task()  # what a WriteTask has written so far


def _receipt() -> WriteReceipt:
    return WriteReceipt("tok-2", "p0-a0", 5, (ProducedRange("tok-2", 0, 5, 9, 5),), [])


def test_without_testing_options_no_stage_injects_anything() -> None:
    faults.mid_write({}, TaskAttempt(1, 0, 0), TASK)
    faults.after_finish({}, TaskAttempt(1, 0, 0), _receipt())
    faults.after_commit({}, 1)


def test_fail_mid_write_fails_attempt_zero_of_the_named_batch_and_partition_only() -> None:
    testing = {"testing.fail-mid-write": "2:1"}
    with pytest.raises(InjectedFailure, match=r"testing.fail-mid-write: task attempt b2-p1-a0 fails after "
                       r"producing its first 3 row\(s\), before finish \(token tok-1\)"):
        faults.mid_write(testing, TaskAttempt(2, 1, 0), TASK)
    faults.mid_write(testing, TaskAttempt(2, 1, 1), TASK)  # the retry succeeds
    faults.mid_write(testing, TaskAttempt(3, 1, 0), TASK)  # another micro-batch
    faults.mid_write(testing, TaskAttempt(2, 0, 0), TASK)  # another partition
    faults.after_finish(testing, TaskAttempt(2, 1, 0), _receipt())  # another stage


def test_fail_after_finish_names_the_records_the_attempt_made_durable() -> None:
    with pytest.raises(InjectedFailure, match=r"testing.fail-after-finish: task attempt p0-a0 fails after "
                       r"producing 5 records \(token tok-2\)"):
        faults.after_finish({"testing.fail-after-finish": "0"}, TaskAttempt(None, 0, 0), _receipt())


def test_pause_after_commit_sleeps_after_the_named_micro_batch_only() -> None:
    testing = {"testing.pause-after-commit": "4:0.3"}
    start = time.monotonic()
    faults.after_commit(testing, 3)
    faults.after_commit(testing, None)
    assert time.monotonic() - start < 0.2
    faults.after_commit(testing, 4)
    assert time.monotonic() - start >= 0.3


def test_an_unknown_testing_option_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(OptionError, match=r"unknown testing option\(s\) \['testing.fail-early'\]; known: "):
        faults.split_options({"warehouse": "/tmp/wh", "table": "db.t", "testing.fail-early": "1"})


def test_the_tablelog_format_refuses_testing_options_as_unknown_table_options(tmp_path: Path) -> None:
    schema = StructType([StructField("id", LongType()), StructField("name", StringType())])
    options = {"warehouse": str(tmp_path / "wh"), "table": "db.t", "testing.fail-after-finish": "0"}
    with pytest.raises(OptionError, match=r"unknown option 'testing.fail-after-finish'"):
        sink.plan_write(options, schema, overwrite=False, streaming=False)
    with pytest.raises(TableNotFoundError):
        tablelog.open_table(str(tmp_path / "wh"), "db.t")  # nothing was created


def test_spark_write_tasks_hold_writer_leases_that_only_a_dead_attempt_leaves_behind(
    spark: Any, tmp_path: Path
) -> None:
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    table = tablelog.create_table(str(tmp_path / "wh"), "db.t", schema, primary_key=["id"], bucket=2,
                                  options={"log.system": "filesystem", "filesystem.segment-bytes": "1"})
    df = spark.createDataFrame([(i, f"n{i}") for i in range(20)], "id long, name string")  # 2 slices: 0..9, 10..19
    faults.register(spark)
    (df.write.format(faults.FORMAT).option("warehouse", str(tmp_path / "wh")).option("table", "db.t")
     .option("testing.fail-after-finish", "0").mode("append").save())
    # The executors wrote a lease per attempt; the driver's commit removed those it committed.
    leases = list((Path(internals(table).files.path) / "log-lease").glob("lease-*"))
    assert len(leases) == 1, leases  # the attempt that died after its flush: it may be alive yet
    with table.reader(consistency="eventual", scan_mode="earliest") as reader:
        changes = reader.read_all()
    assert Counter(c.row["id"] for c in changes) == Counter({**{i: 2 for i in range(10)}, **{i: 1 for i in range(10, 20)}})


def test_a_micro_batch_whose_commit_answer_is_lost_keeps_its_files_and_is_committed_once_on_restart(
    spark: Any, tmp_path: Path
) -> None:
    # Spark aborts a batch whose commit raised; the snapshot may be in the table all the
    # same, and then the files it names must stay.
    warehouse = str(tmp_path / "wh")
    source_dir = tmp_path / "in"
    source_dir.mkdir()
    (source_dir / "b0.json").write_text("".join(f'{{"id": {i}, "name": "n{i}"}}\n' for i in range(20)))
    table = tablelog.create_table(warehouse, "db.t", pa.schema([("id", pa.int64()), ("name", pa.string())]),
                                  primary_key=["id"], bucket=2, options={"log.system": "filesystem"})
    faults.register(spark)

    def run(**testing: str) -> Any:
        writer = (spark.readStream.schema("id long, name string").json(str(source_dir)).writeStream
                  .format(faults.FORMAT).option("warehouse", warehouse).option("table", "db.t")
                  .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True))
        for key, value in testing.items():
            writer = writer.option(key, value)
        query = writer.start()
        with pytest.raises(Exception):  # noqa: B017,PT011 -- Spark wraps the error in its own
            query.awaitTermination(120)
        return query

    failed = run(**{"testing.fail-after-commit": "0"})
    assert "testing.fail-after-commit" in str(failed.exception())
    assert sorted(r["id"] for r in table.rows().to_pylist()) == list(range(20))  # every file still there
    query = (spark.readStream.schema("id long, name string").json(str(source_dir)).writeStream
             .format("tablelog").option("warehouse", warehouse).option("table", "db.t")
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    query.awaitTermination(120)
    assert query.exception() is None
    assert [s.commit_identifier for s in table.snapshots() if s.commit_kind == "APPEND"] == [1]
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        assert Counter(c.row["id"] for c in reader.read_all()) == Counter(range(20))
