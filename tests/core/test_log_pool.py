"""The log connection pool (tablelog.logs.pool) with the built-in filesystem log: reuse by
the next task, exclusive use, and no record of a failed attempt in anyone's receipt."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest

from tablelog.errors import ProduceError
from tablelog.logs import discovery
from tablelog.logs import pool as log_pool
from tablelog.logs.filesystem import FileLog
from tablelog.logs.pool import LogPool
from tablelog.plugin import hookimpl
from tablelog.records import LogConfig, ProducedRange
from tablelog.table import Table
from tablelog.tables import create_table
from tablelog.testing.scenarios import read_transactional

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


class CountingFileLog:
    """The filesystem log, counting hook calls; ``fail_flushes`` / ``fail_commits`` make
    the next flushes / commit hooks fail."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.fail_flushes = 0
        self.fail_commits = 0

    def plugin(self) -> SimpleNamespace:
        hooks = {name: getattr(FileLog, name) for name in (*discovery.REQUIRED_HOOKS, "option_specs")}
        counted = {name: getattr(self, name) for name in ("open_log", "ensure_topic", "flush", "commit", "close_log")}
        return SimpleNamespace(**{**hooks, **counted})

    @hookimpl
    def open_log(self, config: LogConfig) -> Any:
        self.calls["open_log"] += 1
        return FileLog.open_log(config)

    @hookimpl
    def ensure_topic(self, connection: Any) -> int:
        self.calls["ensure_topic"] += 1
        return FileLog.ensure_topic(connection)

    @hookimpl
    def flush(self, connection: Any, timeout_s: float) -> list[ProducedRange]:
        self.calls["flush"] += 1
        if self.fail_flushes:
            self.fail_flushes -= 1
            raise ProduceError("injected flush failure", topic=connection.topic)
        return FileLog.flush(connection)

    @hookimpl
    def commit(self, connection: Any, committed: Any) -> None:
        self.calls["commit"] += 1
        if self.fail_commits:
            self.fail_commits -= 1
            raise RuntimeError("injected commit-hook failure")
        FileLog.commit(connection, committed)

    @hookimpl
    def close_log(self, connection: Any) -> None:
        self.calls["close_log"] += 1
        FileLog.close_log(connection)


@pytest.fixture
def counting() -> Iterator[CountingFileLog]:
    log = CountingFileLog()
    discovery.register_log_system("countingfs", log.plugin())
    yield log
    discovery.unregister_log_system("countingfs")


@pytest.fixture
def table(tmp_path: Path, counting: CountingFileLog) -> Table:
    table = create_table(str(tmp_path / "wh"), f"db.t_{uuid.uuid4().hex[:8]}", SCHEMA, primary_key=["id"],
                         bucket=2, options={"log.system": "countingfs"})
    counting.calls.clear()  # create_table opened the log to register the topic
    return table


def rows(start: int, count: int, tag: str) -> list[dict[str, Any]]:
    return [{"id": i, "name": f"{tag}-{i}"} for i in range(start, start + count)]


def committed_ids(table: Table) -> Counter[int]:
    return Counter(c.row["id"] for c in read_transactional(table))


def test_the_next_task_of_the_process_reuses_the_connection(table: Table, counting: CountingFileLog) -> None:
    pool = LogPool()
    receipts = []
    for attempt in range(3):
        task = table.write_task("w", attempt + 1, task=str(attempt), log_pool=pool)
        task.write(rows(attempt * 10, 10, "a"))
        receipts.append(task.finish())
        assert pool.idle_count() == 1
    assert pool.opened == 1
    assert counting.calls["open_log"] == 1 and counting.calls["ensure_topic"] == 1
    assert counting.calls["close_log"] == 0
    pool.close()
    assert counting.calls["close_log"] == 1 and pool.idle_count() == 0
    for i, receipt in enumerate(receipts):
        assert {r.token for r in receipt.ranges} == {receipt.token}
        table.commit("w", i + 1, [receipt])
    assert committed_ids(table) == Counter(range(30))


def test_a_writer_opens_the_log_once_for_all_its_write_and_commit_rounds(
    table: Table, counting: CountingFileLog
) -> None:
    with table.writer("w") as writer:
        for round_ in range(3):
            writer.write(rows(round_ * 10, 10, "a"))
            assert writer.commit().committed
    assert counting.calls["open_log"] == 1 and counting.calls["close_log"] == 1
    assert committed_ids(table) == Counter(range(30))


def test_commits_through_a_pool_share_one_connection_and_a_failed_commit_closes_its_own(
    table: Table, counting: CountingFileLog
) -> None:
    pool = LogPool()
    for i in range(2):
        task = table.write_task("w", i + 1, log_pool=pool)
        task.write(rows(i * 10, 10, "a"))
        table.commit("w", i + 1, [task.finish()], log_pool=pool)
    assert pool.opened == 1 and pool.idle_count() == 1
    task = table.write_task("w", 3, log_pool=pool)
    task.write(rows(20, 10, "a"))
    receipt = task.finish()
    counting.fail_commits = 1
    result = table.commit("w", 3, [receipt], log_pool=pool)  # the snapshot is durable: committed
    assert result.committed and result.hook_error == "RuntimeError: injected commit-hook failure"
    assert pool.idle_count() == 0 and counting.calls["close_log"] == 1
    pool.close()


def test_a_task_that_fails_mid_write_does_not_return_its_connection(
    table: Table, counting: CountingFileLog
) -> None:
    pool = LogPool()
    dead = table.write_task("w", 1, task="0-a0", log_pool=pool)
    dead.write(rows(0, 10, "dead"))  # produced, never flushed
    dead.abort()  # what the Spark sink does when the task raises
    assert pool.idle_count() == 0 and counting.calls["close_log"] == 1
    retry = table.write_task("w", 1, task="0-a1", log_pool=pool)
    retry.write(rows(0, 10, "retry"))
    receipt = retry.finish()
    assert pool.opened == 2
    assert {r.token for r in receipt.ranges} == {retry.token}
    table.commit("w", 1, [receipt])
    changes = read_transactional(table)
    assert sorted(c.row["name"] for c in changes) == sorted(f"retry-{i}" for i in range(10))


def test_a_task_whose_flush_fails_does_not_return_its_connection(
    table: Table, counting: CountingFileLog
) -> None:
    pool = LogPool()
    task = table.write_task("w", 1, log_pool=pool)
    task.write(rows(0, 5, "a"))
    counting.fail_flushes = 1
    with pytest.raises(ProduceError):
        task.finish()
    assert pool.idle_count() == 0 and counting.calls["close_log"] == 1


def test_records_left_unflushed_on_a_connection_never_reach_another_receipt(
    table: Table, counting: CountingFileLog, caplog: pytest.LogCaptureFixture
) -> None:
    # Defence in depth: even if a dead attempt's connection came back to the pool with
    # records pending (it never should), the next task's receipt holds its own token only.
    pool = LogPool()
    dead = table.write_task("w", 1, task="0-a0", log_pool=pool)
    dead.write(rows(0, 10, "dead"))
    leaked = dead._log
    assert leaked is not None
    pool.checkin(leaked)  # the bug being defended against: no flush, no abort
    task = table.write_task("w", 1, task="0-a1", log_pool=pool)
    with caplog.at_level(logging.WARNING, logger="tablelog.writer"):
        task.write(rows(100, 10, "live"))
        assert task._log is leaked  # it did get the leaked connection
        receipt = task.finish()
    assert {r.token for r in receipt.ranges} == {task.token}
    assert sum(r.count for r in receipt.ranges) == 10
    assert dead.token in caplog.text
    assert pool.idle_count() == 0 and leaked.closed  # not handed on again
    table.commit("w", 1, [receipt])
    assert committed_ids(table) == Counter(range(100, 110))


def test_a_connection_serves_one_task_at_a_time(table: Table, counting: CountingFileLog) -> None:
    pool = LogPool()
    first = table.write_task("w", 1, task="0", log_pool=pool)
    second = table.write_task("w", 1, task="1", log_pool=pool)
    first.write(rows(0, 5, "a"))
    second.write(rows(5, 5, "b"))  # while the first task holds its connection
    assert first._log is not None and second._log is not None and first._log is not second._log
    table.commit("w", 1, [first.finish(), second.finish()])
    assert pool.opened == 2 and pool.idle_count() == 2
    assert committed_ids(table) == Counter(range(10))


def test_tables_with_another_log_config_get_their_own_connection(
    tmp_path: Path, table: Table, counting: CountingFileLog
) -> None:
    other = create_table(str(tmp_path / "wh"), "db.other", SCHEMA, primary_key=["id"], bucket=2,
                         options={"log.system": "countingfs"})
    pool = LogPool(max_idle=1)
    for target in (table, other, table):
        task = target.write_task("w", 1, log_pool=pool)
        task.write(rows(0, 3, "a"))
        task.finish()
    # max_idle=1: each check-in closed the other table's idle connection
    assert pool.opened == 3 and pool.idle_count() == 1


def test_a_connection_idle_too_long_is_closed_not_reused(table: Table, counting: CountingFileLog) -> None:
    pool = LogPool(max_idle_s=0.0)
    for commit in (1, 2):
        task = table.write_task("w", commit, log_pool=pool)
        task.write(rows(0, 3, "a"))
        task.finish()
    assert pool.opened == 2 and counting.calls["ensure_topic"] == 2
    assert counting.calls["close_log"] == 1


def test_after_close_a_checked_in_connection_is_closed(table: Table, counting: CountingFileLog) -> None:
    pool = LogPool()
    task = table.write_task("w", 1, log_pool=pool)
    task.write(rows(0, 3, "a"))
    pool.close()
    task.finish()
    assert pool.idle_count() == 0 and counting.calls["close_log"] == 1


def test_a_forked_child_neither_uses_nor_closes_the_parents_connections(
    table: Table, counting: CountingFileLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    pool = LogPool()
    task = table.write_task("w", 1, log_pool=pool)
    task.write(rows(0, 3, "a"))
    task.finish()
    parent = pool.opened
    monkeypatch.setattr(log_pool.os, "getpid", lambda: -1)  # as seen from a forked child
    child = table.write_task("w", 2, log_pool=pool)
    child.write(rows(3, 3, "b"))
    child.finish()
    assert pool.opened == parent + 1  # a connection of its own
    assert counting.calls["close_log"] == 0  # the parent's was forgotten, not closed
    assert pool.idle_count() == 1


def test_idle_connections_of_the_shared_pool_are_closed_at_exit(tmp_path: Path) -> None:
    script = textwrap.dedent(f"""
        import pyarrow as pa
        from types import SimpleNamespace
        from tablelog.logs import discovery
        from tablelog.logs.filesystem import FileLog
        from tablelog.logs.pool import shared_pool
        from tablelog.plugin import hookimpl
        from tablelog.tables import create_table

        def close_log(connection):
            print("closed", connection.topic, flush=True)
            FileLog.close_log(connection)

        hooks = {{n: getattr(FileLog, n) for n in discovery.REQUIRED_HOOKS if n != "close_log"}}
        discovery.register_log_system("exitfs", SimpleNamespace(**hooks, close_log=hookimpl(close_log)))
        table = create_table({str(tmp_path / "wh")!r}, "db.exit", pa.schema([("id", pa.int64())]),
                             primary_key=["id"], options={{"log.system": "exitfs"}})
        print("created", flush=True)
        task = table.write_task("w", 1, log_pool=shared_pool())
        task.write([{{"id": 1}}])
        task.finish()
        assert shared_pool() is shared_pool() and shared_pool().idle_count() == 1
        print("finished", flush=True)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.split()
    assert done.stdout.splitlines()[-2:] == ["finished", "closed db.exit"], lines
