"""Writer leases: log retention (here the file log's, at its finest grain: one record per
segment) never deletes what a live write attempt flushed and may still commit; a lease
goes when its attempt commits or gives up, and stops protecting once it expires."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

import tablelog
from tablelog.errors import CommitError
from tablelog.logs import discovery
from tablelog.records import SeekSpec
from tablelog.table import Table, internals
from tablelog.testing import NO_COMPACTION
from tablelog.testing.memory_log import MemoryLog
from tablelog.testing.scenarios import SCHEMA, ids, read_transactional, rows

FINEST = {"log.system": "filesystem", "filesystem.segment-bytes": "1", **NO_COMPACTION}


def make_table(tmp_path: Path, **options: str) -> Table:
    return tablelog.create_table(str(tmp_path), "db.t", SCHEMA, primary_key=["id"], bucket=2,
                                 options={**FINEST, **options})


def lease_files(table: Table) -> list[str]:
    folder = Path(internals(table).files.path) / "log-lease"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def earliest_held(table: Table) -> dict[int, int]:
    with internals(table).open_log() as log:
        return {p: log.seek(p, SeekSpec.earliest()) for p in range(table.log_partitions)}


def test_retention_never_deletes_the_flushed_records_of_a_slower_writer_not_committed_yet(tmp_path: Path) -> None:
    table = make_table(tmp_path)
    slow = table.write_task("slow", 1)
    slow.write(rows(40))
    slow_receipt = slow.finish()
    fast = table.write_task("fast", 1)
    fast.write(rows(30, start=100))
    table.commit("fast", 1, [fast.finish()])  # its retention run: no snapshot has expired
    assert table.commit("slow", 1, [slow_receipt]).committed
    changes = read_transactional(table)
    assert ids(changes) == Counter(range(40)) + Counter(range(100, 130))


def test_an_eventual_reader_sees_the_records_of_attempts_that_died_after_flushing(tmp_path: Path) -> None:
    table = make_table(tmp_path)
    receipts = []
    for attempt in range(3):  # the first two die after their flush: their writer may be alive
        task = table.write_task("w", 1, task=f"0-attempt-{attempt}")
        task.write(rows(50))
        receipts.append(task.finish())
    table.commit("w", 1, receipts[-1:])
    with table.reader(consistency="eventual", scan_mode="earliest") as reader:
        changes = reader.read_all()
    assert ids(changes) == Counter({i: 3 for i in range(50)})


def test_a_lease_past_its_expiration_time_no_longer_protects_the_records(tmp_path: Path) -> None:
    table = make_table(tmp_path, **{"log.writer.expiration-time": "1 ms"})
    slow = table.write_task("slow", 1)
    slow.write(rows(40))
    slow_receipt = slow.finish()
    assert len(lease_files(table)) == 1
    time.sleep(0.01)  # the slow writer is silent for longer than its expiration time
    fast = table.write_task("fast", 1)
    fast.write(rows(30, start=100))
    fast_receipt = fast.finish()
    time.sleep(0.01)
    table.commit("fast", 1, [fast_receipt])
    assert lease_files(table) == []  # the expired lease is deleted by the retention run
    assert min(earliest_held(table).values()) > 0  # and the records it held are gone
    with pytest.raises(CommitError, match="retention deleted them while the write stayed uncommitted"):
        table.commit("slow", 1, [slow_receipt])
    assert [s.commit_user for s in table.snapshots()] == ["fast"]


def test_a_writer_lease_is_removed_when_its_attempt_commits_or_gives_up(tmp_path: Path) -> None:
    from tablelog.commit.leases import live_leases

    table = make_table(tmp_path)
    task = table.write_task("w", 1)
    task.write(rows(5))
    lease = f"lease-{task.token}"
    assert lease_files(table) == [lease]
    (held,) = live_leases(internals(table))
    assert held.token == task.token and set(held.topic) == {0, 1}
    receipt = task.finish()
    assert lease_files(table) == [lease]
    table.commit("w", 1, [receipt])
    assert lease_files(table) == []

    aborted = table.write_task("w", 2)
    aborted.write(rows(5))
    assert lease_files(table) == [f"lease-{aborted.token}"]
    aborted.abort()
    assert lease_files(table) == []

    with table.writer("closed") as writer:  # a writer closed with a round not committed
        writer.write(rows(5))
        assert len(lease_files(table)) == 1
    assert lease_files(table) == []

    replayed = table.write_task("w", 1)  # a replay of commit 1: its records are never committed
    replayed.write(rows(5))
    assert not table.commit("w", 1, [replayed.finish()]).committed
    assert lease_files(table) == []


@pytest.fixture
def memory_log() -> Iterator[MemoryLog]:
    log = MemoryLog()
    discovery.register_log_system("memory", log.plugin())
    yield log
    discovery.unregister_log_system("memory")


def test_no_lease_is_written_for_a_log_that_keeps_its_own_retention(tmp_path: Path, memory_log: MemoryLog) -> None:
    table = tablelog.create_table(str(tmp_path), "db.t", SCHEMA, primary_key=["id"], bucket=2,
                                  options={"log.system": "memory"})
    with table.writer("w") as writer:
        writer.write(rows(5))
        writer.commit()
    assert not (Path(internals(table).files.path) / "log-lease").exists()


def test_an_expiration_time_that_is_not_a_positive_duration_is_refused(tmp_path: Path) -> None:
    with pytest.raises(tablelog.errors.OptionError,
                       match=r"invalid value '0 s' for option 'log.writer.expiration-time': expected a duration > 0"):
        make_table(tmp_path, **{"log.writer.expiration-time": "0 s"})
