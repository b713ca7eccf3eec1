"""Transactional reads of dense committed ranges (every position between a write's first
and last record is one of its records): values only, all partitions prefetched, and a
missing record still reported as lost.

The log here is a small in-memory log system with consecutive integer positions (as
Kafka offsets are), registered like a third-party plugin; the built-in file log has
byte-offset positions, whose ranges are never dense.
"""

from __future__ import annotations

import re
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tablelog.errors import ForeignRecordError, LogDataLostError
from tablelog.logs import discovery
from tablelog.reading.committed import dense as _dense
from tablelog.records import ProducedRange
from tablelog.table import Table
from tablelog.tables import create_table
from tablelog.testing.memory_log import MemoryLog

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


@pytest.fixture
def memory_log() -> Iterator[MemoryLog]:
    log = MemoryLog()
    discovery.register_log_system("memory", log.plugin())
    yield log
    discovery.unregister_log_system("memory")


@pytest.fixture
def table(tmp_path: Path, memory_log: MemoryLog) -> Table:
    return create_table(str(tmp_path / "wh"), f"db.t_{uuid.uuid4().hex[:8]}", SCHEMA, primary_key=["id"],
                        bucket=2, options={"log.system": "memory", "log.fetch-timeout-ms": "300"})


def _rows(count: int, start: int = 0) -> list[dict[str, Any]]:
    return [{"id": i, "name": f"n{i}"} for i in range(start, start + count)]


def _commit(table: Table, commit_id: int, data: list[dict[str, Any]], attempts: int = 1) -> None:
    receipts = []
    for attempt in range(attempts):
        task = table.write_task("w", commit_id, f"t-{attempt}")
        task.write(data)
        receipts.append(task.finish())
    table.commit("w", commit_id, receipts[-1:])


def _read(table: Table, **options: Any) -> list[Any]:
    with table.reader(consistency="transactional", scan_mode="earliest", **options) as reader:
        return reader.read_all(idle_timeout_s=0.2)


def _interleaved(table: Table) -> None:
    """Two writes of one commit whose records interleave in partition 0: a sparse read."""
    first, second = table.write_task("w", 1, "a"), table.write_task("w", 1, "b")
    first.write(_rows(10)), second.write(_rows(10, start=10)), first.write(_rows(10, start=20))
    table.commit("w", 1, [first.finish(), second.finish()])


def _replace(memory_log: MemoryLog, table: Table, partition: int, position: int, **fields: Any) -> None:
    log = memory_log.topics[table.topic][partition]
    record = log[position]
    assert record is not None
    log[position] = record._replace(**fields)


def _first_position(memory_log: MemoryLog, table: Table, partition: int) -> int:
    return next(r.position for r in memory_log.topics[table.topic][partition] if r is not None)


def test_ranges_are_dense_when_each_count_equals_its_length_and_none_overlap() -> None:
    def r(first: int, last: int, count: int) -> ProducedRange:
        return ProducedRange("t", 0, first, last, count)

    assert _dense([r(0, 9, 10)])
    assert _dense([r(0, 9, 10), r(15, 19, 5)])  # other writes' records between ranges are fine
    assert not _dense([r(0, 9, 9)])  # a position in the range holds something else
    assert not _dense([r(0, 9, 10), r(5, 14, 10)])  # overlapping: two writers interleaved


def test_contiguous_ranges_are_dense_whatever_their_positions() -> None:
    sparse = ProducedRange("t", 0, 1_000, 9_000, 3)  # positions that are not consecutive
    assert not _dense([sparse])
    assert _dense([ProducedRange("t", 0, 1_000, 9_000, 3, contiguous=True)])


def test_the_contiguous_flag_survives_the_snapshot_properties() -> None:
    from tablelog.commit import LogCommitRecord

    ranges = (ProducedRange("a", 0, 5, 90, 3, contiguous=True), ProducedRange("b", 1, 0, 9, 10))
    record = LogCommitRecord("w", 1, "memory", "topic", ranges, {0: 91, 1: 10})
    assert LogCommitRecord.from_properties(record.to_properties()) == record


def test_dense_committed_ranges_are_read_as_values_only(table: Table, memory_log: MemoryLog) -> None:
    _commit(table, 1, _rows(40))
    _commit(table, 2, _rows(40, start=40))
    changes = _read(table)
    assert Counter(c.row["id"] for c in changes) == Counter(range(80))
    # Values only, but for the first record of each partition: a reader checks its writer
    # token once (a log replaced since reuses positions for other writes' records).
    assert memory_log.calls["fetch_values"] > 0 and memory_log.calls["fetch"] == 2


def test_ranges_after_a_dead_attempt_are_dense_and_skip_its_records(table: Table, memory_log: MemoryLog) -> None:
    _commit(table, 1, _rows(40), attempts=3)  # two attempts produced first and died
    changes = _read(table)
    assert Counter(c.row["id"] for c in changes) == Counter(range(40))
    assert memory_log.calls["fetch"] == 2  # the once-per-partition check of a writer token


def test_interleaved_writes_are_read_record_by_record(table: Table, memory_log: MemoryLog) -> None:
    _interleaved(table)
    assert Counter(c.row["id"] for c in _read(table)) == Counter(range(30))
    assert memory_log.calls["fetch"] > 0


def test_every_partition_of_a_snapshot_is_prefetched_at_its_start(table: Table, memory_log: MemoryLog) -> None:
    _commit(table, 1, _rows(40))
    _read(table)
    assert memory_log.prefetched[0] == {0: 0, 1: 0}


def test_a_record_missing_inside_a_dense_range_is_reported_lost(table: Table, memory_log: MemoryLog) -> None:
    _commit(table, 1, _rows(40))
    memory_log.topics[table.topic][0][3] = None
    # The log alone (by default the table files would give the snapshot's changes instead).
    with pytest.raises(LogDataLostError, match="partition 0") as lost:
        _read(table, changes_from_table=False)
    assert "only" in str(lost.value)


def test_arrow_reads_of_long_values_equal_change_reads(table: Table) -> None:
    # Long values are decoded one by one (Arrow's JSON reader is slower on long strings).
    _commit(table, 1, [{"id": i, "name": "x" * 2_000} for i in range(30)])
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        arrow = reader.poll_arrow(timeout_s=0.5)
        assert arrow.to_pylist() == reader.to_arrow(_read(table)).to_pylist()
    assert arrow.num_rows == 30


# -- values that are not the table's rows --------------------------------------------------


def test_an_undecodable_committed_record_fails_a_sparse_read_naming_its_position(table: Table, memory_log: MemoryLog) -> None:
    _interleaved(table)
    position = _first_position(memory_log, table, 0) + 2
    _replace(memory_log, table, 0, position, value=b"{not json")
    with pytest.raises(ForeignRecordError, match=f"partition 0, position {position}: its value does not decode"):
        _read(table)


def test_an_undecodable_committed_record_skipped_in_a_sparse_read_is_not_counted_as_found(table: Table, memory_log: MemoryLog) -> None:
    _interleaved(table)
    _replace(memory_log, table, 0, _first_position(memory_log, table, 0) + 2, value=b"{not json")
    with pytest.raises(LogDataLostError, match=r"partition 0, .* only \d+ of the \d+ records") as lost:
        _read(table, changes_from_table=False, options={"log.foreign-records": "skip"})
    found, committed = map(int, re.search(r"only (\d+) of the (\d+)", str(lost.value)).groups())  # type: ignore[union-attr]
    assert found == committed - 1


def test_foreign_records_of_a_sparse_read_are_reported_in_log_order(table: Table, memory_log: MemoryLog) -> None:
    _interleaved(table)
    first = _first_position(memory_log, table, 0)
    _replace(memory_log, table, 0, first + 2, value=b"{not json")  # a committed record that does not decode
    _replace(memory_log, table, 0, first + 5, token=None)  # a record without a writer token, after it
    with pytest.raises(ForeignRecordError, match=f"position {first + 2}: its value does not decode"):
        _read(table)


@pytest.mark.parametrize("arrow", [False, True], ids=["poll", "poll_arrow"])
def test_a_committed_value_with_text_in_a_float_column_is_a_foreign_record(
    tmp_path: Path, memory_log: MemoryLog, arrow: bool
) -> None:
    schema = pa.schema([("id", pa.int64()), ("x", pa.float64())])
    table = create_table(str(tmp_path / "wh"), f"db.f_{uuid.uuid4().hex[:8]}", schema, primary_key=["id"],
                         bucket=1, options={"log.system": "memory", "log.format": "json"})
    _commit(table, 1, [{"id": i, "x": i / 2} for i in range(10)])
    position = _first_position(memory_log, table, 0) + 4
    _replace(memory_log, table, 0, position, value=b'{"id": 4, "x": "nope", "_kind": "+I"}')
    with table.reader(consistency="transactional", scan_mode="earliest") as reader, \
            pytest.raises(ForeignRecordError, match=f"partition 0, position {position}: its value does not decode"):
        reader.poll_arrow(timeout_s=0.5) if arrow else reader.poll(timeout_s=0.5)
