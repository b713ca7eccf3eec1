"""The log system's ``commit`` hook runs after the snapshot is durable: its failure does
not fail the commit, is reported, and a retried (replayed) commit runs it again."""

from __future__ import annotations

import logging
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest

from tablelog.errors import LogSystemError
from tablelog.logs import discovery
from tablelog.logs.filesystem import FileLog
from tablelog.logs.pool import LogPool
from tablelog.plugin import hookimpl
from tablelog.records import CommittedLog
from tablelog.table import Table
from tablelog.tables import create_table
from tablelog.testing.scenarios import read_transactional

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


class HookFailingFileLog:
    """The filesystem log whose ``commit`` hook fails the next ``failures`` times; it
    records every call's snapshot."""

    def __init__(self) -> None:
        self.failures = 0
        self.calls: list[CommittedLog] = []

    def plugin(self) -> SimpleNamespace:
        hooks = {name: getattr(FileLog, name) for name in (*discovery.REQUIRED_HOOKS, "option_specs")}
        return SimpleNamespace(**{**hooks, "commit": self.commit})

    @hookimpl
    def commit(self, connection: Any, committed: CommittedLog) -> None:
        self.calls.append(committed)
        if self.failures:
            self.failures -= 1
            raise LogSystemError("marker service refused the write", topic=connection.topic)


@pytest.fixture
def hook() -> Iterator[HookFailingFileLog]:
    log = HookFailingFileLog()
    discovery.register_log_system("hookfs", log.plugin())
    yield log
    discovery.unregister_log_system("hookfs")


@pytest.fixture
def table(tmp_path: Path, hook: HookFailingFileLog) -> Table:
    return create_table(str(tmp_path / "wh"), f"db.t_{uuid.uuid4().hex[:8]}", SCHEMA, primary_key=["id"],
                        bucket=2, options={"log.system": "hookfs"})


def rows(start: int, count: int, tag: str = "a") -> list[dict[str, Any]]:
    return [{"id": i, "name": f"{tag}-{i}"} for i in range(start, start + count)]


def attempt(table: Table, commit_identifier: int, data: list[dict[str, Any]], **kwargs: Any) -> Any:
    task = table.write_task("w", commit_identifier, **kwargs)
    task.write(data)
    return task.finish()


def test_a_commit_whose_hook_fails_is_committed_and_reports_the_hook_error(
    table: Table, hook: HookFailingFileLog, caplog: pytest.LogCaptureFixture
) -> None:
    hook.failures = 1
    with caplog.at_level(logging.WARNING, logger="tablelog.commit"):
        result = table.commit("w", 1, [attempt(table, 1, rows(0, 10))])
    assert result.committed and result.snapshot_id is not None and result.records == 10
    assert result.hook_error == f"LogSystemError: marker service refused the write [topic '{table.topic}']"
    assert Counter(c.row["id"] for c in read_transactional(table)) == Counter(range(10))
    warning = caplog.text
    assert table.identifier in warning and f"snapshot {result.snapshot_id}" in warning
    assert "marker service refused the write" in warning


def test_retrying_a_commit_whose_hook_failed_runs_the_hook_again_for_the_same_snapshot(
    table: Table, hook: HookFailingFileLog
) -> None:
    hook.failures = 1
    receipt = attempt(table, 1, rows(0, 10))
    first = table.commit("w", 1, [receipt])
    retry = table.commit("w", 1, [receipt])
    assert not retry.committed and retry.snapshot_id == first.snapshot_id
    assert retry.hook_error is None  # this time the hook succeeded
    assert [c.snapshot_id for c in hook.calls] == [first.snapshot_id, first.snapshot_id]
    assert hook.calls[0] == hook.calls[1]


def test_a_replayed_commit_runs_the_hook_with_what_the_snapshot_committed_not_the_replay(
    table: Table, hook: HookFailingFileLog
) -> None:
    original = attempt(table, 1, rows(0, 10))
    first = table.commit("w", 1, [original])
    replayed = attempt(table, 1, rows(0, 10, tag="replayed"))  # a new attempt, other records
    again = table.commit("w", 1, [replayed])
    assert not again.committed and again.snapshot_id == first.snapshot_id
    assert len(hook.calls) == 2
    assert hook.calls[1].ranges == original.ranges and hook.calls[1].commit_identifier == 1
    assert all(c.row["name"].startswith("a-") for c in read_transactional(table))


def test_a_hook_that_keeps_failing_is_reported_by_every_retry(table: Table, hook: HookFailingFileLog) -> None:
    hook.failures = 3
    receipt = attempt(table, 1, rows(0, 5))
    results = [table.commit("w", 1, [receipt]) for _ in range(3)]
    assert [r.committed for r in results] == [True, False, False]
    assert all(r.hook_error and "marker service refused" in r.hook_error for r in results)
    assert table.commit("w", 1, [receipt]).hook_error is None
    assert len(hook.calls) == 4


def test_a_writer_whose_commit_hook_fails_goes_on_committing(table: Table, hook: HookFailingFileLog) -> None:
    with table.writer("w") as writer:
        writer.write(rows(0, 5))
        hook.failures = 1
        failed = writer.commit()
        writer.write(rows(5, 5))
        after = writer.commit()
    assert failed.committed and failed.hook_error is not None
    assert after.committed and after.hook_error is None
    assert Counter(c.row["id"] for c in read_transactional(table)) == Counter(range(10))


def test_a_connection_whose_commit_hook_failed_is_not_returned_to_the_pool(
    table: Table, hook: HookFailingFileLog
) -> None:
    pool = LogPool()
    table.commit("w", 1, [attempt(table, 1, rows(0, 5), log_pool=pool)], log_pool=pool)
    assert pool.idle_count() == 1
    hook.failures = 1
    result = table.commit("w", 2, [attempt(table, 2, rows(5, 5), log_pool=pool)], log_pool=pool)
    assert result.committed and result.hook_error is not None
    assert pool.idle_count() == 0  # discarded: a failed hook may leave it broken
    pool.close()


def test_the_spark_committer_treats_a_durable_snapshot_whose_hook_failed_as_committed(
    table: Table, hook: HookFailingFileLog
) -> None:
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    from tablelog.spark.sink import TablelogCommitMessage, commit_messages, plan_write

    schema = StructType([StructField("id", LongType()), StructField("name", StringType())])
    options = {"warehouse": table.warehouse.path, "table": table.identifier}
    plan = plan_write(options, schema, overwrite=False, streaming=True)
    hook.failures = 1
    message = TablelogCommitMessage("spark-q", 1, attempt(table, 1, rows(0, 5)))
    result = commit_messages(plan, [message], batch_id=0)  # must not raise: Spark would replay
    assert result is not None and result.committed and result.hook_error is not None
    assert Counter(c.row["id"] for c in read_transactional(table)) == Counter(range(5))
    # Spark replays a micro-batch whose commit it did not record: the hook runs again.
    replay = commit_messages(plan, [message], batch_id=0)
    assert replay is not None and not replay.committed and replay.hook_error is None
