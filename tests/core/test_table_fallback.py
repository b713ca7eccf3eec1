"""Readers are never stranded: a transactional reader whose log positions are gone
(retention, deleted records) reads the missing snapshots' changes from the table files,
then goes on in the log, each change exactly once; only when the snapshots have expired
as well is it an error, naming what is gone and what to do.

The log is the in-memory log system with Kafka's offsets and Kafka's ``DeleteRecords``
(:meth:`MemoryLog.delete_records`): the Tansu test broker closes the connection on a
DeleteRecords request, so Kafka's retention cannot be played on it.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tablelog import registry
from tablelog.errors import LogDataLostError
from tablelog.expiry import expire_snapshots
from tablelog.reading import Change
from tablelog.table import Table, create_table, open_table
from tablelog.testing import NO_COMPACTION
from tablelog.testing.memory_log import MemoryLog
from tablelog.verify import verify

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


@pytest.fixture
def memory_log() -> Iterator[MemoryLog]:
    log = MemoryLog()
    registry.register_log_system("memory", log.plugin())
    yield log
    registry.unregister_log_system("memory")


def make_table(tmp_path: Path, primary_key: bool = True, fmt: str = "debezium-json") -> Table:
    return create_table(
        str(tmp_path / "wh"), f"db.t_{uuid.uuid4().hex[:8]}", SCHEMA, primary_key=["id"] if primary_key else [],
        bucket=2, options={"log.system": "memory", "log.fetch-timeout-ms": "300", "log.format": fmt,
                           "snapshot.num-retained.min": "1", "snapshot.time-retained": "1 h", **NO_COMPACTION},
    )


def commit_rounds(table: Table, rounds: range, per_round: int = 10) -> Counter[tuple[Any, ...]]:
    """Commit ``rounds`` (each its own keys, updates of earlier keys in odd rounds of a
    primary-key table); returns every change written, counted."""
    written: Counter[tuple[Any, ...]] = Counter()
    with table.writer("w") as writer:
        for r in rounds:
            rows: list[Any] = [{"id": r * 100 + i, "v": f"r{r}"} for i in range(per_round)]
            if table.primary_key and r % 2 and r > 0:
                rows += [("+U", {"id": (r - 1) * 100 + i, "v": f"updated-in-{r}"}) for i in range(3)]
                rows += [("-D", {"id": (r - 1) * 100 + 9, "v": f"r{r - 1}"})]
            writer.write(rows)
            writer.commit()
            for row in rows:
                kind, row = row if isinstance(row, tuple) else ("+I", row)
                written[(kind, row["id"], row["v"])] += 1
    return written


def counted(changes: list[Change]) -> Counter[tuple[Any, ...]]:
    return Counter((c.kind.value, c.row["id"], c.row["v"]) for c in changes)


def delete_log_before(memory_log: MemoryLog, table: Table, snapshot_id: int) -> None:
    """Retention: every record up to the end of snapshot ``snapshot_id`` is gone from the log."""
    ends = [s for s in table.snapshots() if s.id == snapshot_id][0].properties["tablelog.log.end-positions"]
    import json

    for partition, end in json.loads(ends).items():
        memory_log.delete_records(table.topic, int(partition), end)


@pytest.mark.parametrize("fmt", ["debezium-json", "arrow"])
@pytest.mark.parametrize("arrow", [False, True], ids=["poll", "poll_arrow"])
def test_a_reader_resumed_after_retention_removed_its_log_range_gets_every_change_once_from_the_table(
    tmp_path: Path, memory_log: MemoryLog, arrow: bool, fmt: str,
) -> None:
    table = make_table(tmp_path, fmt=fmt)
    commit_rounds(table, range(2))
    position = table.reader(consistency="transactional", scan_mode="latest").position.to_json()
    expected = commit_rounds(table, range(2, 6))  # snapshots 3..6
    delete_log_before(memory_log, table, 5)  # the log keeps only snapshot 6's records
    expected += commit_rounds(table, range(6, 8))  # snapshots 7, 8: in the log
    with table.reader(position) as reader:
        if arrow:
            batch = reader.poll_arrow(max_records=10_000, timeout_s=0.5)
            changes = [Change(reader_kind(k), {"id": i, "v": v}) for k, i, v in
                       zip(batch["_kind"].to_pylist(), batch["id"].to_pylist(), batch["v"].to_pylist(), strict=True)]
            changes += reader.read_all(idle_timeout_s=0.3)
        else:
            changes = reader.read_all(idle_timeout_s=0.3)
        assert reader.position.snapshot == 8
    assert counted(changes) == expected  # every change once: none lost, none twice
    in_order = [c.snapshot_id for c in changes if c.snapshot_id is not None]
    assert in_order == sorted(in_order)


def reader_kind(value: str) -> Any:
    from tablelog.records import RowKind

    return RowKind(value)


@pytest.mark.parametrize("fmt", ["debezium-json", "arrow"])
def test_an_append_tables_changes_come_from_the_table_exactly_as_committed(
    tmp_path: Path, memory_log: MemoryLog, fmt: str,
) -> None:
    table = make_table(tmp_path, primary_key=False, fmt=fmt)
    expected = commit_rounds(table, range(4), per_round=25)
    delete_log_before(memory_log, table, 3)
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        changes = reader.read_all(idle_timeout_s=0.3)
    assert counted(changes) == expected
    assert sum(counted(changes).values()) == 100


def test_with_the_snapshots_expired_as_well_the_reader_gets_an_error_naming_what_is_gone_and_what_to_do(
    tmp_path: Path, memory_log: MemoryLog,
) -> None:
    table = make_table(tmp_path)
    commit_rounds(table, range(2))
    position = table.reader(consistency="transactional", scan_mode="latest").position.to_json()
    commit_rounds(table, range(2, 6))
    delete_log_before(memory_log, table, 5)
    expire_snapshots(open_table(table.warehouse.path, table.identifier, {"snapshot.time-retained": "0 ms"}))
    assert [s.id for s in table.snapshots()] == [6]
    with table.reader(position) as reader, pytest.raises(Exception) as gone:
        reader.read_all(idle_timeout_s=0.3)
    message = str(gone.value)
    assert "snapshot 3 expired before this reader read it (earliest kept: 6)" in message
    assert "scan.mode=latest-full" in message and "consumer-id" in message


def test_a_snapshot_kept_in_the_table_but_whose_log_records_are_gone_and_whose_delta_files_expired_is_an_error(
    tmp_path: Path, memory_log: MemoryLog, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The snapshot is still listed when the reader reaches it, then expires before its
    # delta is read: the error says both copies are gone.
    table = make_table(tmp_path)
    commit_rounds(table, range(3))
    delete_log_before(memory_log, table, 3)
    monkeypatch.setattr(type(table.store), "read_delta", lambda self, snapshot_id, buckets: None)
    with table.reader(consistency="transactional", scan_mode="earliest") as reader, \
            pytest.raises(LogDataLostError) as lost:
        reader.read_all(idle_timeout_s=0.3)
    message = str(lost.value)
    assert "snapshot 1 has expired from the table too, so no copy of these changes is left" in message
    assert "was deleted (the log starts at" in message
    assert "consumer-id" in message


def test_verify_still_reports_a_log_that_lost_committed_records(tmp_path: Path, memory_log: MemoryLog) -> None:
    table = make_table(tmp_path)
    commit_rounds(table, range(3))
    delete_log_before(memory_log, table, 2)
    report = verify(table)
    assert not report.consistent
    assert "log data lost" in (report.error or "")


@pytest.mark.parametrize("arrow", [False, True], ids=["poll", "poll_arrow"])
def test_changes_read_before_a_missing_record_was_found_are_dropped_and_the_table_gives_them_once(
    tmp_path: Path, memory_log: MemoryLog, arrow: bool,
) -> None:
    table = make_table(tmp_path, primary_key=False)
    expected = commit_rounds(table, range(3), per_round=40)
    log = memory_log.topics[table.topic][0]
    middle = [r.position for r in log if r is not None][len([r for r in log if r is not None]) // 2]
    log[middle] = None  # a damaged log: one committed record gone from the middle of a range
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        if arrow:
            batch = reader.poll_arrow(max_records=10_000, timeout_s=0.5)
            changes = [Change(reader_kind(k), {"id": i, "v": v}) for k, i, v in
                       zip(batch["_kind"].to_pylist(), batch["id"].to_pylist(), batch["v"].to_pylist(), strict=True)]
        else:
            changes = reader.poll(max_records=10_000, timeout_s=0.5)
        changes += reader.read_all(idle_timeout_s=0.3)
    assert counted(changes) == expected


def test_a_dense_range_whose_positions_now_hold_another_writes_records_is_read_from_the_table(
    tmp_path: Path, memory_log: MemoryLog,
) -> None:
    table = make_table(tmp_path, primary_key=False)
    expected = commit_rounds(table, range(2), per_round=20)
    # The topic is recreated: the old records are gone and new writes take their positions.
    for partition in memory_log.topics[table.topic]:
        partition.clear()
    expected += commit_rounds(table, range(2, 4), per_round=20)
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        changes = reader.read_all(idle_timeout_s=0.3)
    assert counted(changes) == expected  # no record of snapshots 3, 4 taken for one of 1, 2
