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

from tablelog.errors import LogDataLostError, TablelogError
from tablelog.logs import discovery
from tablelog.reading import Change
from tablelog.records import SeekSpec
from tablelog.table import Table, internals
from tablelog.tables import create_table, open_table
from tablelog.testing import NO_COMPACTION
from tablelog.testing.memory_log import MemoryLog
from tablelog.verify import verify

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


@pytest.fixture
def memory_log() -> Iterator[MemoryLog]:
    log = MemoryLog()
    discovery.register_log_system("memory", log.plugin())
    yield log
    discovery.unregister_log_system("memory")


def make_table(tmp_path: Path, primary_key: bool = True, fmt: str = "debezium-json", **options: str) -> Table:
    return create_table(
        str(tmp_path / "wh"), f"db.t_{uuid.uuid4().hex[:8]}", SCHEMA, primary_key=["id"] if primary_key else [],
        bucket=2, options={"log.system": "memory", "log.fetch-timeout-ms": "300", "log.format": fmt,
                           "snapshot.num-retained.min": "1", "snapshot.time-retained": "1 h", **NO_COMPACTION,
                           **options},
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
    open_table(table.warehouse.path, table.identifier, {"snapshot.time-retained": "0 ms"}).expire_snapshots()
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
    monkeypatch.setattr(type(internals(table).files), "read_delta", lambda self, snapshot_id, buckets, schema_id=None: None)
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


# ------------------------------------------------------------ eventual readers


def eventual_position_now(table: Table) -> str:
    """Where an eventual reader started now (at the log's end) stands."""
    with table.reader(consistency="eventual", scan_mode="latest") as reader:
        return reader.position.to_json()


@pytest.mark.parametrize("fmt", ["debezium-json", "arrow"])
def test_an_eventual_reader_whose_log_positions_are_gone_gets_the_changes_committed_there_from_the_table(
    tmp_path: Path, memory_log: MemoryLog, fmt: str,
) -> None:
    table = make_table(tmp_path, fmt=fmt)
    commit_rounds(table, range(2))
    position = eventual_position_now(table)
    expected = commit_rounds(table, range(2, 6))  # snapshots 3..6
    delete_log_before(memory_log, table, 5)  # the log keeps only snapshot 6's records
    expected += commit_rounds(table, range(6, 8))  # snapshots 7, 8: in the log
    with table.reader(position) as reader:
        changes = reader.read_all(idle_timeout_s=0.3)
        assert reader.position.offsets == {p: len(memory_log.topics[table.topic][p]) for p in (0, 1)}
    assert counted(changes) == expected  # the lost range ends where a snapshot ends: each change once
    assert sum(expected.values()) == 6 * 10 + 3 * 4


def test_an_eventual_reader_gets_a_snapshot_the_lost_range_cuts_through_whole_from_the_table_and_its_rest_again(
    tmp_path: Path, memory_log: MemoryLog,
) -> None:
    # At least once, the eventual contract: snapshot 4's records before the log's new
    # start come from the table with the rest of snapshot 4, and its rest from the log too.
    table = make_table(tmp_path, primary_key=False)
    position = eventual_position_now(table)
    expected = commit_rounds(table, range(6), per_round=20)
    fourth = [s for s in table.snapshots() if s.id == 4][0]
    from tablelog.commit.log_commit import LogCommitRecord

    record = LogCommitRecord.from_properties(fourth.properties)
    assert record is not None
    cut = {r.partition: r.first + 2 for r in record.ranges if r.count > 2}  # 2 records of each range lost
    for partition, before in cut.items():
        memory_log.delete_records(table.topic, partition, before)
    with table.reader(position) as reader:
        changes = reader.read_all(idle_timeout_s=0.3)
    twice = counted(changes) - expected
    assert counted(changes) - twice == expected  # every committed change ...
    fourth_rows = {("+I", 300 + i, "r3") for i in range(20)}
    assert set(twice) <= fourth_rows  # ... and again only what snapshot 4 left in the log
    assert sum(twice.values()) == 20 - 2 * len(cut)


def test_records_no_snapshot_committed_in_an_eventual_readers_lost_range_are_gone(
    tmp_path: Path, memory_log: MemoryLog,
) -> None:
    table = make_table(tmp_path, primary_key=False)
    position = eventual_position_now(table)
    expected = commit_rounds(table, range(2), per_round=20)
    failed = table.write_task("w", 99, task="failed")
    failed.write([{"id": 9000 + i, "v": "failed"} for i in range(15)])
    failed.finish()  # in the log, committed by no snapshot
    expected += commit_rounds(table, range(2, 4), per_round=20)
    with table.reader(position) as reader:  # the log still holds it: an eventual reader returns it
        assert sum(c.row["v"] == "failed" for c in reader.read_all(idle_timeout_s=0.3)) == 15
    delete_log_before(memory_log, table, 3)
    with table.reader(position) as reader:
        changes = reader.read_all(idle_timeout_s=0.3)
    assert counted(changes) == expected  # every committed change once; the failed attempt's are gone


def test_an_eventual_reader_whose_lost_range_snapshots_expired_gets_an_error_naming_what_is_gone_and_what_to_do(
    tmp_path: Path, memory_log: MemoryLog,
) -> None:
    table = make_table(tmp_path)
    commit_rounds(table, range(2))
    position = eventual_position_now(table)
    commit_rounds(table, range(2, 6))
    delete_log_before(memory_log, table, 5)
    open_table(table.warehouse.path, table.identifier, {"snapshot.time-retained": "0 ms"}).expire_snapshots()
    assert [s.id for s in table.snapshots()] == [6]
    with table.reader(position) as reader, pytest.raises(LogDataLostError) as lost:
        reader.read_all(idle_timeout_s=0.3)
    message = str(lost.value)
    assert "was deleted (the log starts at" in message
    assert "snapshots before 6 have expired from the table" in message
    assert "scan.mode=latest-full" in message and "snapshot.time-retained" in message


def test_an_eventual_reader_of_the_file_log_reads_what_retention_deleted_from_the_table(tmp_path: Path) -> None:
    from tablelog.commit.retention import truncate_log

    table = create_table(
        str(tmp_path / "wh"), "db.t", SCHEMA, primary_key=[], bucket=1,
        options={"log.system": "filesystem", "filesystem.segment-bytes": "2000", **NO_COMPACTION},
    )
    position = eventual_position_now(table)
    expected = commit_rounds(table, range(20))
    with internals(table).open_log() as log:
        truncate_log(internals(table), log, {0: log.end_positions([0])[0] // 2})  # a retention shorter than the snapshots
        start = log.seek(0, SeekSpec.earliest())
    assert start > 0
    with table.reader(position) as reader:
        changes = reader.read_all(idle_timeout_s=0.3)
    twice = counted(changes) - expected
    assert counted(changes) - twice == expected
    # Only the snapshot whose records the new start cuts through comes twice.
    assert len({v for _kind, _id, v in twice}) <= 1 and sum(twice.values()) < 10


# ------------------------------------------------- a partition the reader had begun


def polled(reader: Any, arrow: bool, max_records: int) -> list[Change]:
    if not arrow:
        return list(reader.poll(max_records=max_records, timeout_s=0.5))
    batch = reader.poll_arrow(max_records=max_records, timeout_s=0.5)
    return [Change(reader_kind(k), {"id": i, "v": v}) for k, i, v in
            zip(batch["_kind"].to_pylist(), batch["id"].to_pylist(), batch["v"].to_pylist(), strict=True)]


@pytest.mark.parametrize("resumed", [False, True], ids=["same-reader", "resumed-from-its-position"])
@pytest.mark.parametrize("arrow", [False, True], ids=["poll", "poll_arrow"])
def test_a_reader_that_returned_part_of_a_partition_gets_only_the_rest_from_the_table_when_the_log_loses_it(
    tmp_path: Path, memory_log: MemoryLog, arrow: bool, resumed: bool,
) -> None:
    table = make_table(tmp_path, primary_key=False)
    expected = commit_rounds(table, range(3), per_round=40)  # snapshots 1..3
    reader = table.reader(consistency="transactional", scan_mode="earliest")
    first = polled(reader, arrow, 7)
    assert len(first) == 7 and reader.position.offsets == {0: 7}  # inside snapshot 1's partition 0 (0..14)
    if resumed:
        position = reader.position.to_json()
        reader.close()
        reader = table.reader(position)
    delete_log_before(memory_log, table, 2)  # retention: the rest of snapshot 1 and all of 2
    expected += commit_rounds(table, range(3, 5), per_round=40)  # snapshots 4, 5: in the log
    with reader:
        rest = polled(reader, arrow, 10_000) + reader.read_all(idle_timeout_s=0.3)
        assert reader.position.snapshot == 5
    assert counted(first + rest) == expected  # each committed change exactly once
    assert sum(counted(first + rest).values()) == 5 * 40


@pytest.mark.parametrize("split", [False, True], ids=["default", "split_partitions"])
def test_an_arrow_readers_begun_partition_is_finished_in_the_same_poll_so_a_lost_rest_comes_once(
    tmp_path: Path, memory_log: MemoryLog, split: bool,
) -> None:
    # A position counts records of many rows: which rows were returned the table cannot
    # tell, so a poll never stops inside the partition. With split_partitions it may, and
    # the partition then comes again whole: at least once.
    table = make_table(tmp_path, primary_key=False, fmt="arrow", **{"log.max-record-bytes": "1500"})
    expected = commit_rounds(table, range(3), per_round=300)  # snapshots 1..3, several records a partition
    reader = table.reader(consistency="transactional", scan_mode="earliest", split_partitions=split)
    first = polled(reader, False, 1)
    begun = Counter(p for p, end in reader.position.offsets.items() if end > 0)
    assert len(begun) == 1 and reader.position.snapshot == 0
    (partition,) = begun
    whole = sum(1 for c in first if c.partition == partition) == len(table_partition_rows(table, partition, "r0"))
    assert whole is not split
    delete_log_before(memory_log, table, 2)
    expected += commit_rounds(table, range(3, 5), per_round=300)
    with reader:
        rest = polled(reader, False, 100_000) + reader.read_all(idle_timeout_s=0.3)
        assert reader.position.snapshot == 5
    got = counted(first + rest)
    assert set(got) == set(expected)  # every committed change, none lost
    assert got - expected == (counted(first) if split else Counter())  # twice only the split partition's


def table_partition_rows(table: Table, partition: int, value: str) -> list[dict[str, Any]]:
    """The rows with ``v == value`` in bucket ``partition`` (log partition b is bucket b)."""
    latest = internals(table).files.latest_snapshot()
    assert latest is not None
    return [r for r in internals(table).files.read_rows(latest.id, [partition]).to_pylist() if r["v"] == value]


def interleaved_with_a_failed_attempt(table: Table) -> Counter[tuple[Any, ...]]:
    """One committed write whose records have a failed attempt's records between them in
    the log (its range is not dense)."""
    from tablelog.commit.log_commit import WriteReceipt

    task = table.write_task("w", 1, task="kept")
    task.write([{"id": i, "v": "kept"} for i in range(20)])
    failed = table.write_task("w", 1, task="failed")
    failed.write([{"id": 1000 + i, "v": "failed"} for i in range(10)])
    failed.finish()
    task.write([{"id": i, "v": "kept"} for i in range(20, 40)])
    receipt: WriteReceipt = task.finish()
    table.commit("w", 1, [receipt])
    return Counter(("+I", i, "kept") for i in range(40))


def test_a_reader_that_returned_part_of_a_sparse_partition_gets_only_the_rest_from_the_table(
    tmp_path: Path, memory_log: MemoryLog,
) -> None:
    # The failed attempt's records make the range sparse: how many were returned is the
    # reader's own count, checked against the write's sequence numbers.
    table = make_table(tmp_path, primary_key=False)
    expected = interleaved_with_a_failed_attempt(table)
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        first = reader.poll(max_records=7, timeout_s=0.5)
        assert len(first) == 7 and reader.position.offsets
        delete_log_before(memory_log, table, 1)
        rest = reader.read_all(idle_timeout_s=0.3)
    assert counted(first + rest) == expected


def test_a_reader_resumed_inside_a_sparse_partition_gets_the_whole_partition_again_from_the_table_and_says_so(
    tmp_path: Path, memory_log: MemoryLog, caplog: pytest.LogCaptureFixture,
) -> None:
    # A resumed reader cannot tell how many of a sparse range's records lie before its
    # position: the snapshot's partition comes again whole (at least once), with a warning.
    table = make_table(tmp_path, primary_key=False)
    expected = interleaved_with_a_failed_attempt(table)
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        first = reader.poll(max_records=7, timeout_s=0.5)
        position = reader.position
    partition = next(iter(position.offsets))
    delete_log_before(memory_log, table, 1)
    with table.reader(position.to_json()) as reader:
        rest = reader.read_all(idle_timeout_s=0.3)
    assert counted(rest) == expected - counted(c for c in first if c.partition != partition)
    assert counted(first + rest) - expected == counted(c for c in first if c.partition == partition)
    assert f"snapshot 1's changes in partition {partition} after the reader had returned some" in caplog.text
    assert "this snapshot's partition is read at least once" in caplog.text


def test_a_primary_key_tables_begun_partition_is_finished_in_the_same_poll_so_a_lost_rest_comes_once(
    tmp_path: Path, memory_log: MemoryLog, caplog: pytest.LogCaptureFixture,
) -> None:
    # The table's delta is one change per key in key order: which of them a reader had
    # returned it cannot tell, so a poll past max_records finishes the partition it began.
    table = make_table(tmp_path)
    expected = commit_rounds(table, range(3), per_round=40)
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        first = reader.poll(max_records=15, timeout_s=0.5)
        assert len(first) > 15  # the partition it began, whole
        delete_log_before(memory_log, table, 2)
        rest = reader.read_all(idle_timeout_s=0.3)
    assert counted(first + rest) == expected  # each change once
    assert "read at least once" not in caplog.text


def test_a_primary_key_tables_partition_split_at_max_records_comes_again_whole_and_leaves_the_tables_rows(
    tmp_path: Path, memory_log: MemoryLog, caplog: pytest.LogCaptureFixture,
) -> None:
    # split_partitions (tail --limit) lets the poll stop inside the partition: its rest
    # lost, the whole partition comes again from the table, with a warning.
    table = make_table(tmp_path)
    expected = commit_rounds(table, range(3), per_round=40)
    with table.reader(consistency="transactional", scan_mode="earliest", split_partitions=True) as reader:
        first = reader.poll(max_records=15, timeout_s=0.5)
        assert len(first) == 15
        delete_log_before(memory_log, table, 2)
        rest = reader.read_all(idle_timeout_s=0.3)
    assert counted(rest) == expected  # every change after the first poll ...
    assert counted(first + rest) - expected == counted(first)  # ... and the first poll's 15 again
    assert "this snapshot's partition is read at least once" in caplog.text
    rows: dict[int, str] = {}
    for change in first + rest:  # replayed in order, the changes leave the table's rows
        if change.kind.value == "-D":
            rows.pop(change.row["id"], None)
        else:
            rows[change.row["id"]] = change.row["v"]
    assert rows == {r["id"]: r["v"] for r in table.rows().to_pylist()}


def test_an_append_partition_holding_several_writes_is_finished_in_the_same_poll_so_a_lost_rest_comes_once(
    tmp_path: Path, memory_log: MemoryLog, caplog: pytest.LogCaptureFixture,
) -> None:
    # Several writes' files do not say how their records interleaved in the log (every
    # Spark micro-batch): the partition a poll began is finished in that poll.
    table = make_table(tmp_path, primary_key=False)
    expected: Counter[tuple[Any, ...]] = Counter()
    for snapshot in range(3):
        tasks = [table.write_task("w", snapshot + 1, task=f"t{t}") for t in range(3)]
        for round_ in range(4):  # the tasks' records interleave in each partition
            for t, task in enumerate(tasks):
                rows = [{"id": snapshot * 1000 + t * 100 + round_ * 10 + i, "v": f"s{snapshot}"} for i in range(10)]
                task.write(rows)
                expected.update(("+I", r["id"], r["v"]) for r in rows)
        table.commit("w", snapshot + 1, [task.finish() for task in tasks])
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        first = reader.poll(max_records=7, timeout_s=0.5)
        begun = {c.partition for c in first}
        assert len(first) > 7 and len(begun) == 1
        delete_log_before(memory_log, table, 2)
        rest = reader.read_all(idle_timeout_s=0.3)
    assert counted(first + rest) == expected
    assert "read at least once" not in caplog.text


def test_a_hybrid_readers_late_write_whose_records_the_log_lost_comes_from_the_table(
    tmp_path: Path, memory_log: MemoryLog,
) -> None:
    # A write produced before snapshot 2 and committed after the full scan (snapshot 3):
    # its records lie before where the log part starts, and retention removed them.
    table = make_table(tmp_path, primary_key=False)
    expected = commit_rounds(table, range(1), per_round=20)
    late = table.write_task("late", 1)
    late.write([{"id": 5000 + i, "v": "late"} for i in range(30)])
    receipt = late.finish()
    expected += commit_rounds(table, range(1, 2), per_round=20)  # snapshot 2: its end is past the late records
    with table.reader(consistency="eventual", scan_mode="latest-full") as reader:
        changes = reader.poll(max_records=10_000, timeout_s=0.5)  # the full scan: snapshot 2's rows
        assert counted(changes) == expected
        table.commit("late", 1, [receipt])  # snapshot 3
        expected += Counter(("+I", 5000 + i, "late") for i in range(30))
        delete_log_before(memory_log, table, 2)
        expected += commit_rounds(table, range(2, 3), per_round=20)  # snapshot 4: in the log
        changes += reader.read_all(idle_timeout_s=0.3)
    assert counted(changes) == expected  # the late write once, from the table


def test_a_hybrid_reader_whose_next_snapshots_expired_before_it_checked_them_for_late_writes_gets_an_error(
    tmp_path: Path, memory_log: MemoryLog,
) -> None:
    # Before, it stopped looking for late writes for good, and missed those of every later snapshot.
    table = make_table(tmp_path, primary_key=False)
    commit_rounds(table, range(2))
    with table.reader(consistency="eventual", scan_mode="latest-full") as reader:
        reader.poll(max_records=10_000, timeout_s=0.5)  # the full scan of snapshot 2
        commit_rounds(table, range(2, 6))
        open_table(table.warehouse.path, table.identifier, {"snapshot.time-retained": "0 ms"}).expire_snapshots()
        assert [s.id for s in table.snapshots()] == [6]
        with pytest.raises(TablelogError) as gone:
            reader.poll(max_records=10_000, timeout_s=0.5)
    message = str(gone.value)
    assert "snapshots 3..5 expired before this hybrid reader looked in them" in message
    assert "scan.mode=latest-full" in message and "snapshot.time-retained" in message


def test_the_rest_of_a_begun_partition_whose_rows_span_several_data_files_comes_in_log_order(
    tmp_path: Path, memory_log: MemoryLog,
) -> None:
    # The writer rolls a bucket's rows into several files: skipping what the reader returned
    # counts on the files being read in the order they were written.
    table = make_table(tmp_path, primary_key=False, **{"target-file-size": "1kb"})
    expected: Counter[tuple[Any, ...]] = Counter()
    with table.writer("w") as writer:
        for commit in range(2):
            for part in range(16):  # the writer rolls files between writes
                rows = [{"id": commit * 1000 + part * 50 + i, "v": f"c{commit}"} for i in range(50)]
                writer.write(rows)
                expected.update(("+I", row["id"], row["v"]) for row in rows)
            writer.commit()
    files = list((Path(internals(table).files.path) / "bucket-0").glob("*.parquet"))
    assert len(files) >= 6  # three or more per commit
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        first = reader.poll(max_records=150, timeout_s=0.5)
        assert set(reader.position.offsets) == {0} and 0 < reader.position.offsets[0] < 350
        delete_log_before(memory_log, table, 2)
        rest = reader.read_all(idle_timeout_s=0.3)
    assert counted(first + rest) == expected


def test_the_deletes_of_an_expired_partition_come_from_the_table_when_the_log_lost_them(
    tmp_path: Path, memory_log: MemoryLog,
) -> None:
    import datetime

    today = datetime.date.today()
    old, current = str(today - datetime.timedelta(days=5)), str(today)
    schema = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])
    table = create_table(
        str(tmp_path / "wh"), "db.p", schema, primary_key=["dt", "id"], partition_keys=["dt"], bucket=2,
        options={"log.system": "memory", "log.fetch-timeout-ms": "300", **NO_COMPACTION,
                 "partition.expiration-time": "2 d"},
    )
    position = table.reader(consistency="transactional", scan_mode="earliest").position.to_json()
    written: Counter[tuple[Any, ...]] = Counter()
    with table.writer("w") as writer:
        data = [{"dt": day, "id": i, "v": f"v{i}"} for day in (old, current) for i in range(10)]
        writer.write(data)
        writer.commit()  # and its expiry check drops `old`: snapshot 2
    written.update(("+I", r["dt"], r["id"], r["v"]) for r in data)
    written.update(("-D", old, i, f"v{i}") for i in range(10))
    assert [s.commit_kind for s in table.snapshots()] == ["APPEND", "OVERWRITE"]
    delete_log_before(memory_log, table, 2)  # retention took both snapshots' records
    with table.reader(position) as reader:
        changes = reader.read_all(idle_timeout_s=0.3)
    assert Counter((c.kind.value, c.row["dt"], c.row["id"], c.row["v"]) for c in changes) == written
