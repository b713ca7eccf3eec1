"""Test-only fault injection (the ``testing.*`` options) lives in one module with one hook
point; the sink calls it once per stage and knows nothing else about it. And what a task
attempt that dies after its flush leaves behind: its writer lease on the log."""

from __future__ import annotations

import ast
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import tablelog
from tablelog.commit import WriteReceipt
from tablelog.errors import OptionError
from tablelog.records import ProducedRange
from tablelog.spark import faults, sink
from tablelog.spark.faults import InjectedFailure, Stage
from tablelog.spark.options import SourceOptions


class _Task:
    rows, token = 3, "tok-1"


def _receipt() -> WriteReceipt:
    return WriteReceipt("tok-2", "p0-a0", 5, (ProducedRange("tok-2", 0, 5, 9, 5),), [])


def test_without_testing_options_no_stage_injects_anything() -> None:
    for stage in Stage:
        faults.at({}, stage, 1, 0, 0, _Task())


def test_fail_mid_write_fails_attempt_zero_of_the_named_batch_and_partition_only() -> None:
    testing = {"testing.fail-mid-write": "2:1"}
    with pytest.raises(InjectedFailure, match=r"testing.fail-mid-write: task attempt b2-p1-a0 fails after "
                       r"producing its first 3 row\(s\), before finish \(token tok-1\)"):
        faults.at(testing, Stage.MID_WRITE, 2, 1, 0, _Task())
    faults.at(testing, Stage.MID_WRITE, 2, 1, 1, _Task())  # the retry succeeds
    faults.at(testing, Stage.MID_WRITE, 3, 1, 0, _Task())  # another micro-batch
    faults.at(testing, Stage.MID_WRITE, 2, 0, 0, _Task())  # another partition
    faults.at(testing, Stage.AFTER_FINISH, 2, 1, 0, _receipt())  # another stage


def test_fail_after_finish_names_the_records_the_attempt_made_durable() -> None:
    with pytest.raises(InjectedFailure, match=r"testing.fail-after-finish: task attempt p0-a0 fails after "
                       r"producing 5 records \(token tok-2\)"):
        faults.at({"testing.fail-after-finish": "0"}, Stage.AFTER_FINISH, None, 0, 0, _receipt())


def test_pause_after_commit_sleeps_after_the_named_micro_batch_only() -> None:
    testing = {"testing.pause-after-commit": "4:0.3"}
    start = time.monotonic()
    faults.at(testing, Stage.AFTER_COMMIT, 3)
    faults.at(testing, Stage.AFTER_COMMIT, None)
    assert time.monotonic() - start < 0.2
    faults.at(testing, Stage.AFTER_COMMIT, 4)
    assert time.monotonic() - start >= 0.3


def test_an_unknown_testing_option_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(OptionError, match=r"unknown testing option\(s\) \['testing.fail-early'\]; known: "):
        SourceOptions.parse({"warehouse": "/tmp/wh", "table": "db.t", "testing.fail-early": "1"})


def test_the_sink_calls_the_fault_hook_once_per_stage_and_names_no_testing_option() -> None:
    tree = ast.parse(Path(sink.__file__).read_text())
    strings = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    assert not [s for s in strings if "testing." in s]
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and ast.unparse(n.func) == "faults.at"]
    assert sorted(ast.unparse(c.args[1]) for c in calls) == [
        "Stage.AFTER_COMMIT", "Stage.AFTER_FINISH", "Stage.MID_WRITE"
    ]
    assert not hasattr(sink, "InjectedFailure")


def test_spark_write_tasks_hold_writer_leases_that_only_a_dead_attempt_leaves_behind(
    spark: Any, tmp_path: Path
) -> None:
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    table = tablelog.create_table(str(tmp_path / "wh"), "db.t", schema, primary_key=["id"], bucket=2,
                                  options={"log.system": "filesystem", "filesystem.segment-bytes": "1"})
    df = spark.createDataFrame([(i, f"n{i}") for i in range(20)], "id long, name string")  # 2 slices: 0..9, 10..19
    (df.write.format("tablelog").option("warehouse", str(tmp_path / "wh")).option("table", "db.t")
     .option("testing.fail-after-finish", "0").mode("append").save())
    # The executors wrote a lease per attempt; the driver's commit removed those it committed.
    leases = list((Path(table.store.path) / "log-lease").glob("lease-*"))
    assert len(leases) == 1, leases  # the attempt that died after its flush: it may be alive yet
    with table.reader(consistency="eventual", scan_mode="earliest") as reader:
        changes = reader.read_all()
    assert Counter(c.row["id"] for c in changes) == Counter({**{i: 2 for i in range(10)}, **{i: 1 for i in range(10, 20)}})
