"""Exactly-once through Spark, proven by counting, for any log system.

Subclass :class:`SparkExactlyOnceScenarios` (or :class:`SparkTaskFailureScenarios`, its
task-attempt scenarios alone, or :class:`SparkCombinedTaskFailures`, both task-attempt
failures in one query) in a test module and provide two
fixtures: ``log_options`` (the table options selecting the log system, as for
:class:`tablelog.testing.scenarios.ExactlyOnceScenarios`) and ``spark`` (a
SparkSession from :func:`spark_test_session`; its master must allow a task retry,
e.g. ``local[2,2]``). The input is deterministic: JSON files with inserts,
updates and deletes, two files per micro-batch, read with ``maxFilesPerTrigger``
(:mod:`tablelog.testing.spark_inputs`, with the helpers that count what was written).

Every Spark read and every table the scenarios open gets the log system's own
options from ``log_options`` (:func:`runtime_options`): secrets are not stored with
the table, so a reader needs them again, as a user's would.
"""

from __future__ import annotations

import os
import signal
import subprocess
import textwrap
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tablelog.normalize import Normalizer
from tablelog.table import Table
from tablelog.tables import open_table
from tablelog.testing.file_layout import layout_problems
from tablelog.testing.processes import start_python
from tablelog.testing.spark_inputs import (
    BATCHES,
    FILES_PER_BATCH,
    INPUT_SCHEMA,
    assert_committed_records,
    collect_stream,
    committed_identifiers,
    eventual_count,
    expected_log,
    expected_rows,
    failed_tasks_per_batch,
    input_batches,
    log_snapshots,
    replay,
    table_rows,
    write_input,
)


def spark_test_session(master: str = "local[2,2]") -> Any:
    """The SparkSession of a test run (one per process) with ``master``: fails, never skips,
    without Java, and fails when a session with another master already runs in this
    process (Spark would hand that one back, and the scenarios depend on the master:
    ``local[2,2]`` retries a failed task once)."""
    from pyspark import SparkContext

    from tablelog.spark.session import java_available, local_session

    if java_available() is None:
        pytest.fail("Spark tests need Java 17: no java on PATH or in JAVA_HOME", pytrace=False)
    running = SparkContext._active_spark_context
    if running is not None and running.master != master:
        pytest.fail(
            f"spark_test_session({master!r}): a SparkSession with master {running.master!r} is already "
            "running in this process and Spark would return it; stop it first, or ask for "
            f"{running.master!r}", pytrace=False,
        )
    return local_session(master, "tablelog-tests", log_level="ERROR")


def runtime_options(log_options: dict[str, str]) -> dict[str, str]:
    """The options of ``log_options`` a reader of the table gives again: the log system's
    own (``kafka.*``, secrets among them), not the ``log.*`` keys that define the table."""
    return {k: v for k, v in log_options.items() if not k.startswith("log.")}


def kill_driver_when(script: str, config: dict[str, Any], log_path: Path,
                     committed: Callable[[], tuple[bool, str]]) -> None:
    """Run the driver ``script`` (``config`` on its standard input: never on its command
    line) until ``committed()`` finds what it waits for in the table, then kill the whole
    driver (JVM and Python) with SIGKILL. ``committed`` returns whether, and why not yet."""
    with open(log_path, "wb") as log:
        driver = start_python(script, config, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        why = ""
        while time.monotonic() < deadline and driver.poll() is None:
            done, why = committed()
            if done:
                break
            time.sleep(0.2)
        else:
            raise AssertionError(f"the batch awaited was never committed ({why or 'no error opening the table'}); "
                                 f"driver log:\n{log_path.read_text()[-4000:]}")
    finally:
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait(timeout=30)
    assert driver.returncode == -signal.SIGKILL


class SparkTaskFailureScenarios:
    """The task-attempt scenarios alone, for a test module whose driver kill is proven
    elsewhere (e.g. on a cluster); provide fixtures ``log_options`` and ``spark``."""

    @pytest.fixture
    def log_options(self) -> dict[str, str]:
        raise NotImplementedError("provide a `log_options` fixture with log.system and its options")

    @pytest.fixture
    def spark(self) -> Any:
        raise NotImplementedError("provide a `spark` fixture (tablelog.testing.spark_scenarios.spark_test_session)")

    def _stream_write(self, spark: Any, inputs: Path, warehouse: Path | str, name: str, checkpoint: Path,
                      log_options: dict[str, str], schema: str = INPUT_SCHEMA, **extra: str) -> Any:
        """A streaming write of the input files (JSON of Spark schema ``schema``); ``extra``
        options with ``testing.*`` faults write through :mod:`tablelog.spark.faults`' source
        instead of the plain ``tablelog``."""
        from tablelog.spark import faults

        sink = "tablelog"
        if any(key.lower().startswith(faults.TESTING_PREFIX) for key in extra):
            faults.register(spark)
            sink = faults.FORMAT
        source = spark.readStream.schema(schema).option("maxFilesPerTrigger", FILES_PER_BATCH).json(str(inputs))
        writer = (source.writeStream.format(sink).option("warehouse", str(warehouse)).option("table", name)
                  .option("primary-key", "id").option("bucket", "2").option("checkpointLocation", str(checkpoint)))
        for key, value in {**log_options, **extra}.items():
            writer = writer.option(key, value)
        return writer.trigger(availableNow=True).start()

    def _read_stream(self, spark: Any, warehouse: Path | str, name: str, log_options: dict[str, str],
                     **options: str) -> Any:
        """A streaming read of the table through the Spark source, with the log system's options."""
        reader = spark.readStream.format("tablelog").option("warehouse", str(warehouse)).option("table", name)
        for key, value in {**runtime_options(log_options), **options}.items():
            reader = reader.option(key, value)
        return reader.load()

    def _check_exactly_once(
        self, spark: Any, table: Table, warehouse: Path, tmp_path: Path, log_options: dict[str, str]
    ) -> None:
        snapshots = log_snapshots(table)
        assert [s.commit_identifier for s in snapshots] == list(range(1, BATCHES + 1))
        assert len({s.writer for s in snapshots}) == 1 and snapshots[0].writer.startswith("spark-")
        assert_committed_records(table, snapshots)
        assert table_rows(table) == expected_rows()  # each row once, the last version
        assert layout_problems(table) == []  # the sink's files are what Paimon's options declare
        # A transactional read through the Spark source: each committed change once.
        changes = collect_stream(
            self._read_stream(spark, warehouse, table.identifier, log_options, **{"scan.mode": "earliest"}),
            tmp_path / "read-transactional")
        assert Counter((c["_kind"], c["id"], c["name"]) for c in changes) == expected_log()
        assert replay(changes) == expected_rows()
        if table.projection:  # the projection stream (log.arrow.projection), through the source: the same
            named = [c for c in table.projection if c not in table.primary_key]
            projected = collect_stream(
                self._read_stream(spark, warehouse, table.identifier, log_options,
                                  **{"scan.mode": "earliest", "columns": ",".join(named)}),
                tmp_path / "read-projection")
            kept = ["_kind", *table.projection]
            assert Counter(tuple(c[k] for k in kept) for c in projected) == Counter(
                tuple(c[k] for k in kept) for c in changes)

    def _failing_write(
        self, spark: Any, log_options: dict[str, str], tmp_path: Path, testing: dict[str, str]
    ) -> tuple[Path, str, Any]:
        """A streaming write of the input with ``testing.`` failure options
        (:mod:`tablelog.spark.faults`), run to its end (Spark retries the failed attempts);
        the query must not fail."""
        warehouse, name = tmp_path / "wh", f"db.t_{uuid.uuid4().hex[:8]}"
        query = self._stream_write(spark, write_input(tmp_path / "in"), warehouse, name, tmp_path / "ck",
                                   log_options, **testing)
        query.awaitTermination(300)
        assert query.exception() is None, query.exception()
        return warehouse, name, query

    def test_task_attempt_failing_after_producing_is_counted_once(
        self, spark: Any, log_options: dict[str, str], tmp_path: Path
    ) -> None:
        from tablelog.spark import normalize

        # attempt 0 of partition 0 of micro-batch 1 dies after its records are durable in the log
        warehouse, name, _ = self._failing_write(spark, log_options, tmp_path, {"testing.fail-after-finish": "1:0"})
        table = open_table(str(warehouse), name, log_options)
        tokens = [len(s.tokens()) for s in log_snapshots(table)]
        assert tokens == [FILES_PER_BATCH] * BATCHES, tokens  # every batch ran two tasks
        self._check_exactly_once(spark, table, warehouse, tmp_path, log_options)
        # Eventual: the failed attempt's records are there too; normalize gives the table rows.
        committed = sum(expected_log().values())
        assert eventual_count(table) > committed
        eventual = self._read_stream(spark, warehouse, name, log_options,
                                     **{"log.consistency": "eventual", "scan.mode": "earliest"})
        raw = collect_stream(eventual, tmp_path / "read-eventual")
        assert len(raw) == eventual_count(table)
        normalized = collect_stream(normalize(eventual, ["id"]), tmp_path / "read-normalized", "update")
        assert replay(normalized) == expected_rows()
        # The duplicates were dropped: the same changes as the core Normalizer makes of the
        # committed changelog alone (duplicates of one attempt come in log order per key).
        with table.reader(consistency="transactional", scan_mode="earliest") as reader:
            reference = Normalizer(["id"]).apply(reader.read_all(idle_timeout_s=0.5))
        assert Counter((c["_kind"], c["id"], c["name"]) for c in normalized) == Counter(
            (c.kind.value, c.row["id"], c.row["name"]) for c in reference)

    def test_task_attempt_failing_mid_write_is_counted_once(
        self, spark: Any, log_options: dict[str, str], tmp_path: Path
    ) -> None:
        # Attempt 0 of partition 1 in every micro-batch dies with records produced and not
        # flushed. Workers are reused and keep log connections for the next task: the dead
        # attempt's connection must not take its records into anyone's receipt.
        warehouse, name, query = self._failing_write(spark, log_options, tmp_path, {"testing.fail-mid-write": "1"})
        failed = failed_tasks_per_batch(spark, query)
        assert failed == [1] * BATCHES, failed  # one dead attempt per micro-batch, each retried
        table = open_table(str(warehouse), name, log_options)
        snapshots = log_snapshots(table)
        assert [len(s.tokens()) for s in snapshots] == [FILES_PER_BATCH] * BATCHES
        self._check_exactly_once(spark, table, warehouse, tmp_path, log_options)


class SparkCombinedTaskFailures(SparkTaskFailureScenarios):
    """Both task-attempt failures in one pipeline, one query: for a log system and format
    whose separate scenarios are proven elsewhere, at the cost of one streaming write.
    Provide fixtures ``log_options`` and ``spark``."""

    test_task_attempt_failing_after_producing_is_counted_once = None  # type: ignore[assignment]
    test_task_attempt_failing_mid_write_is_counted_once = None  # type: ignore[assignment]

    def test_attempts_failing_after_producing_and_mid_write_in_one_pipeline_are_each_counted_once(
        self, spark: Any, log_options: dict[str, str], tmp_path: Path
    ) -> None:
        # Attempt 0 of partition 0 of micro-batch 1 (the second) dies after its records are
        # durable in the log; attempt 0 of partition 1 of every micro-batch dies with records
        # not flushed.
        warehouse, name, query = self._failing_write(
            spark, log_options, tmp_path, {"testing.fail-after-finish": "1:0", "testing.fail-mid-write": "1"})
        failed = failed_tasks_per_batch(spark, query)
        assert failed == [1, 2, 1], failed  # each retried once
        table = open_table(str(warehouse), name, log_options)
        assert [len(s.tokens()) for s in log_snapshots(table)] == [FILES_PER_BATCH] * BATCHES
        assert eventual_count(table) > sum(expected_log().values())  # the dead attempt's durable records
        self._check_exactly_once(spark, table, warehouse, tmp_path, log_options)


class SparkExactlyOnceScenarios(SparkTaskFailureScenarios):
    """Every scenario: the task attempts' and the driver killed between the table commit
    and Spark's commit log. Provide fixtures ``log_options`` and ``spark``."""

    def test_driver_killed_after_a_table_commit_and_restarted_commits_each_batch_once(
        self, spark: Any, log_options: dict[str, str], tmp_path: Path
    ) -> None:
        warehouse, name = tmp_path / "wh", f"db.t_{uuid.uuid4().hex[:8]}"
        inputs, checkpoint = write_input(tmp_path / "in"), tmp_path / "ck"
        # The driver commits micro-batch 1 to the table, then sleeps before Spark's own commit
        # log records it: the test kills the whole driver (JVM and Python) with SIGKILL there.
        # The options (a plugin's password among them) go to the driver on its standard
        # input, never on its command line.
        script = textwrap.dedent("""
            from pathlib import Path
            from tablelog.testing.processes import child_config
            from tablelog.testing.spark_scenarios import SparkExactlyOnceScenarios, spark_test_session
            config = child_config()
            spark = spark_test_session("local[2,2]")
            query = SparkExactlyOnceScenarios()._stream_write(
                spark, Path(config["inputs"]), Path(config["warehouse"]), config["name"],
                Path(config["checkpoint"]), config["options"], **{"testing.pause-after-commit": "1:600"})
            query.awaitTermination()
        """)
        config = {"inputs": str(inputs), "warehouse": str(warehouse), "name": name,
                  "checkpoint": str(checkpoint), "options": log_options}

        def batch_1_committed() -> tuple[bool, str]:
            committed, why = committed_identifiers(warehouse, name, log_options)
            return 2 in committed, why

        kill_driver_when(script, config, tmp_path / "driver.log", batch_1_committed)
        assert not (checkpoint / "commits" / "1").exists()  # Spark has not recorded batch 1
        table = open_table(str(warehouse), name, log_options)
        assert [s.commit_identifier for s in log_snapshots(table)] == [1, 2]
        before_restart = eventual_count(table)

        query = self._stream_write(spark, inputs, warehouse, name, checkpoint, log_options)
        query.awaitTermination(300)
        assert query.exception() is None, query.exception()
        assert (checkpoint / "commits" / "2").exists()
        # Batch 1 was replayed: its tasks produced again (more records in the log), but its
        # commit found the snapshot already there and committed nothing.
        batch1 = sum(1 for c in input_batches()[1] if c["_kind"] != "-U")
        batch2 = sum(1 for c in input_batches()[2] if c["_kind"] != "-U")
        assert eventual_count(table) == before_restart + batch1 + batch2
        self._check_exactly_once(spark, table, warehouse, tmp_path, log_options)
