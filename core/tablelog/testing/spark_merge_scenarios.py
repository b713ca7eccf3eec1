"""Merge engines through the Spark sink and source, with failures, proven by counting.

Subclass :class:`SparkMergeEngineScenarios` in a test module and provide the fixtures
``log_options`` and ``spark`` (as for :class:`tablelog.testing.spark_scenarios.SparkExactlyOnceScenarios`).
Five streaming queries run at once (:data:`tablelog.testing.spark_merge_inputs.MERGE_TABLES`):
two filling different columns of one partial-update table, and one each into an
aggregation, a first-row and a sequence-field table, which the sink creates from its
options. Both Spark tasks of a micro-batch write some of the same keys of the last three,
and the two partial-update queries the same keys, so the committer computes those
commits' changes again. The driver is killed with SIGKILL after committing micro-batch 0
to the tables, before Spark's commit log records it; restarted from the checkpoints,
the queries replay it, and a task attempt of micro-batch 1 dies after producing. Then, per table:

- each of its snapshots holds one micro-batch of one query, once;
- a transactional reader returns, snapshot by snapshot, the changes the reference
  (:class:`~tablelog.testing.spark_merge_inputs.Reference`) computes for that micro-batch;
- the Spark source, from ``earliest``, returns those changes (counted row by row), and
  their replay is the table's rows, which are the reference's;
- ``verify`` is consistent, and the normalized eventual log ends with the table's rows.
"""

from __future__ import annotations

import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

from tablelog.commit import log_commits
from tablelog.normalize import Normalizer
from tablelog.table import Table, internals
from tablelog.tables import create_table, open_table
from tablelog.testing.spark_inputs import (
    collect_streams,
    failed_tasks_per_batch,
    log_snapshots,
    table_rows,
)
from tablelog.testing.spark_merge_inputs import (
    MERGE_TABLES,
    MergeTable,
    Reference,
    Row,
    write_stream_input,
)
from tablelog.testing.spark_scenarios import SparkTaskFailureScenarios, kill_driver_when
from tablelog.verify import verify


def _counted(changes: list[tuple[str, Row]]) -> Counter[tuple[str, tuple[tuple[str, Any], ...]]]:
    return Counter((kind, tuple(sorted(row.items()))) for kind, row in changes)


class SparkMergeEngineScenarios(SparkTaskFailureScenarios):
    """The merge-engine scenarios: a driver killed between its table commits and Spark's
    commit log, then a task attempt dying after producing, in one pipeline (a Spark test
    is costly). Provide fixtures ``log_options`` and ``spark``."""

    test_task_attempt_failing_after_producing_is_counted_once = None  # type: ignore[assignment]
    test_task_attempt_failing_mid_write_is_counted_once = None  # type: ignore[assignment]

    def _start_merge_streams(self, spark: Any, base: Path, log_options: dict[str, str], **extra: str) -> list[Any]:
        """Start every query of :data:`MERGE_TABLES` (again, from its checkpoint, when
        ``base`` holds one): the warehouse, inputs and checkpoints are under ``base``."""
        queries = []
        for table in MERGE_TABLES:
            options = {**log_options, **table.options}
            if len(table.streams) > 1:  # created with every column before its streams fill some
                create_table(str(base / "wh"), table.identifier, table.columns, primary_key=["id"], bucket=2,
                             options=options, exist_ok=True)
            for stream in table.streams:
                inputs = base / "in" / table.name / stream.writer
                if not inputs.exists():
                    write_stream_input(inputs, stream)
                queries.append(self._stream_write(
                    spark, inputs, base / "wh", table.identifier, base / "ck" / table.name / stream.writer,
                    options, stream.schema, **{"writer.id": stream.writer, **extra}))
        return queries

    def _run_merge_streams(self, spark: Any, base: Path, log_options: dict[str, str], **extra: str) -> list[Any]:
        queries = self._start_merge_streams(spark, base, log_options, **extra)
        for query in queries:
            query.awaitTermination(300)
            assert query.exception() is None, query.exception()
        return queries

    def _check_merge_table(self, table: Table, spec: MergeTable, source_rows: list[Row]) -> None:
        """``source_rows``: what the Spark source returned from ``earliest``."""
        reference = Reference(spec)
        expected: dict[int, list[tuple[str, Row]]] = {}
        batches = []
        for snapshot, record in _log_commits(table):
            batches.append((record.writer, record.commit_identifier))
            expected[snapshot] = reference.commit(spec.stream(record.writer).writes(record.commit_identifier))
        assert sorted(batches) == sorted((s.writer, b + 1) for s in spec.streams for b in range(len(s.batches)))
        with table.reader(consistency="transactional", scan_mode="earliest") as reader:
            read = reader.read_all(idle_timeout_s=0.5)
        for snapshot, changes in expected.items():
            got = [(c.kind.value, dict(c.row)) for c in read if c.snapshot_id == snapshot]
            assert _counted(got) == _counted(changes), f"{spec.name}: snapshot {snapshot}"
        assert len(read) == sum(len(changes) for changes in expected.values())
        assert table_rows(table) == reference.rows, spec.name
        # The Spark source, from earliest: the same changes, counted row by row.
        changes = [(row.pop("_kind"), row) for row in source_rows]
        assert _counted(changes) == _counted([change for its in expected.values() for change in its]), spec.name
        assert replay(changes) == reference.rows, spec.name
        assert verify(table).consistent, spec.name
        with table.reader(consistency="eventual", scan_mode="earliest") as reader:
            normalizer = Normalizer(["id"])
            normalizer.apply(reader.read_all(idle_timeout_s=0.5))
        assert {row["id"]: dict(row) for row in normalizer.rows()} == reference.rows, spec.name

    def _check_merge_tables(self, spark: Any, base: Path, log_options: dict[str, str]) -> None:
        reads = [(self._read_stream(spark, base / "wh", spec.identifier, log_options, **{"scan.mode": "earliest"}),
                  base / "read" / spec.name) for spec in MERGE_TABLES]
        for spec, rows in zip(MERGE_TABLES, collect_streams(reads), strict=True):
            self._check_merge_table(open_table(str(base / "wh"), spec.identifier, log_options), spec, rows)

    def test_merge_tables_fed_by_spark_through_a_driver_kill_and_a_dead_task_attempt_hold_the_reference_changelog(
        self, spark: Any, log_options: dict[str, str], tmp_path: Path
    ) -> None:
        # Each query's driver thread commits micro-batch 0 to its table, then sleeps before
        # Spark's commit log records it: the test kills the driver there, and restarts the
        # queries from their checkpoints, which replay micro-batch 0 (its tasks write again,
        # its commit is there) and run micro-batch 1, where attempt 0 of partition 0 dies
        # after its records (its changes) are durable in the log.
        script = textwrap.dedent("""
            from pathlib import Path
            from tablelog.testing.processes import child_config
            from tablelog.testing.spark_merge_scenarios import SparkMergeEngineScenarios
            from tablelog.testing.spark_scenarios import spark_test_session
            config = child_config()
            spark = spark_test_session("local[2,2]")
            SparkMergeEngineScenarios()._start_merge_streams(
                spark, Path(config["base"]), config["options"], **{"testing.pause-after-commit": "0:600"})
            spark.streams.awaitAnyTermination()
        """)
        wanted = {(spec.identifier, stream.writer) for spec in MERGE_TABLES for stream in spec.streams}

        def every_batch_0_committed() -> tuple[bool, str]:
            done = set()
            for spec in MERGE_TABLES:
                try:
                    table = open_table(str(tmp_path / "wh"), spec.identifier, log_options)
                except Exception as err:  # not (completely) created yet: looked at again later
                    return False, f"{type(err).__name__}: {err}"
                done |= {(spec.identifier, r.writer) for r in log_snapshots(table) if r.commit_identifier == 1}
            return done == wanted, f"committed: {sorted(done)}"

        kill_driver_when(script, {"base": str(tmp_path), "options": log_options}, tmp_path / "driver.log",
                         every_batch_0_committed)
        for checkpoint in (tmp_path / "ck").glob("*/*"):
            assert not (checkpoint / "commits" / "0").exists(), checkpoint  # Spark has not recorded batch 0
        queries = self._run_merge_streams(spark, tmp_path, log_options, **{"testing.fail-after-finish": "1:0"})
        for checkpoint in (tmp_path / "ck").glob("*/*"):
            assert (checkpoint / "commits" / "1").exists(), checkpoint
        failed = [failed_tasks_per_batch(spark, query) for query in queries]
        assert failed == [[0, 1]] * len(queries), failed  # each retried once
        self._check_merge_tables(spark, tmp_path, log_options)


def replay(changes: list[tuple[str, Row]]) -> dict[Any, Row]:
    """The rows a consumer applying ``changes`` in their order ends with."""
    rows: dict[Any, Row] = {}
    for kind, row in changes:
        if kind in ("-U", "-D"):
            rows.pop(row["id"], None)
        else:
            rows[row["id"]] = row
    return rows


def _log_commits(table: Table) -> list[tuple[int, Any]]:
    return [(snapshot.id, record) for snapshot, record in log_commits(internals(table).files)]
