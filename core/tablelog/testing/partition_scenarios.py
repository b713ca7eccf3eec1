"""Partitioned tables on a log system, proven by counting every change on both sides.

Subclass :class:`PartitionedTableScenarios` and provide ``log_options`` (as for
:class:`~tablelog.testing.scenarios.ExactlyOnceScenarios`). A test module that can read
the table files with pypaimon alone overrides ``table_files_reader`` (a callable
``(warehouse, identifier) -> (partition columns, rows)``) and every scenario checks that
such a reader sees the table tablelog's readers see; by default that check is skipped
(a plugin's tests need no Paimon of their own).
"""

from __future__ import annotations

import datetime
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

import pyarrow as pa
import pytest

from tablelog.normalize import Normalizer
from tablelog.reading import Change
from tablelog.table import Table, internals
from tablelog.tables import create_table
from tablelog.testing.scenarios import LogSystemFixtures
from tablelog.verify import verify

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])
#: Three days' partitions.
DAYS = ("2026-11-22", "2026-11-23", "2026-11-24")

TableFilesReader = Callable[[str, str], tuple[list[str], list[dict[str, Any]]]]
Written = Counter[tuple[str, str, int, str]]


def rows(count: int = 20, days: Iterable[str] = DAYS, tag: str = "v1", start: int = 0) -> list[dict[str, Any]]:
    """``count`` keys in each of ``days``."""
    return [{"dt": day, "id": i, "v": f"{tag}-{i}"} for day in days for i in range(start, start + count)]


def counted(changes: Iterable[Change]) -> Written:
    return Counter((c.kind.value, c.row["dt"], c.row["id"], c.row["v"]) for c in changes)


def as_written(data: Iterable[Any]) -> Written:
    written: Written = Counter()
    for item in data:
        kind, row = item if isinstance(item, tuple) else ("+I", item)
        written[(kind, row["dt"], row["id"], row["v"])] += 1
    return written


def state(changes: Iterable[Change]) -> dict[tuple[str, int], dict[str, Any]]:
    """The rows ``changes`` leave, by (partition, key)."""
    result: dict[tuple[str, int], dict[str, Any]] = {}
    for change in changes:
        key = (change.row["dt"], change.row["id"])
        if change.kind.is_retraction:
            result.pop(key, None)
        else:
            result[key] = change.row
    return result


def table_state(table: Table) -> dict[tuple[str, int], dict[str, Any]]:
    return {(r["dt"], r["id"]): r for r in table.rows().to_pylist()}


def read(table: Table, **kwargs: Any) -> list[Change]:
    kwargs.setdefault("consistency", "transactional")
    kwargs.setdefault("scan_mode", "earliest")
    with table.reader(**kwargs) as reader:
        return reader.read_all(idle_timeout_s=0.5)


class PartitionedTableScenarios(LogSystemFixtures):
    """A primary-key table partitioned by day, on the log system of ``log_options``."""

    @pytest.fixture
    def table_files_reader(self) -> TableFilesReader | None:
        return None

    @pytest.fixture
    def partitioned(self, warehouse: str, log_options: dict[str, str]) -> Table:
        return create_table(warehouse, f"db.p_{uuid.uuid4().hex[:10]}", SCHEMA, primary_key=["dt", "id"],
                            partition_keys=["dt"], bucket=2, options=log_options)

    def _write(self, table: Table, rounds: list[list[Any]], writer_id: str = "w") -> Written:
        written: Written = Counter()
        with table.writer(writer_id) as writer:
            for data in rounds:
                writer.write(data)
                writer.commit()
                written += as_written(data)
        return written

    def _changes(self) -> list[list[Any]]:
        """Inserts in three days, then updates and deletes in two of them, then more inserts."""
        return [
            rows(),
            [("+U", {"dt": DAYS[0], "id": i, "v": "updated"}) for i in range(5)]
            + [("-D", {"dt": DAYS[1], "id": i, "v": f"v1-{i}"}) for i in range(3)],
            rows(5, days=DAYS[1:], tag="v2", start=100),
        ]

    def _check_files(self, table: Table, reader: TableFilesReader | None) -> None:
        if reader is None:
            return
        partitions, found = reader(table.warehouse.path, table.identifier)
        assert partitions == ["dt"]
        assert {(r["dt"], r["id"]): r["v"] for r in found} == {k: r["v"] for k, r in table_state(table).items()}

    def test_changes_in_every_partition_reach_a_transactional_reader_exactly_once(
        self, partitioned: Table, table_files_reader: TableFilesReader | None
    ) -> None:
        # A write attempt that dies after producing: its records are in the log, never read.
        dead = partitioned.write_task("w", 1, task="dead")
        dead.write(rows(tag="dead"))
        dead.finish()
        written = self._write(partitioned, self._changes())
        changes = read(partitioned)
        assert counted(changes) == written
        assert state(changes) == table_state(partitioned)
        assert len(table_state(partitioned)) == 3 * 20 - 3 + 2 * 5
        report = verify(partitioned)
        assert report.consistent, report.summary()
        self._check_files(partitioned, table_files_reader)

    def test_a_keys_changes_stay_in_one_log_partition_in_write_order(
        self, partitioned: Table, table_files_reader: TableFilesReader | None
    ) -> None:
        updates = [[("+U", {"dt": day, "id": 7, "v": f"u{n}"}) for day in DAYS] for n in range(3)]
        self._write(partitioned, [rows(10), *updates])
        with partitioned.reader(consistency="eventual", scan_mode="earliest") as reader:
            changes = reader.read_all()
        log_partitions = {c.partition for c in changes if c.row["id"] == 7}
        assert len(log_partitions) == 1  # the key's log partition does not depend on its day
        for day in DAYS:
            assert [c.row["v"] for c in changes if c.row["id"] == 7 and c.row["dt"] == day] == ["v1-7", "u0", "u1", "u2"]
        self._check_files(partitioned, table_files_reader)

    def test_an_eventual_reader_normalized_gives_the_table_rows(
        self, partitioned: Table, table_files_reader: TableFilesReader | None
    ) -> None:
        written = self._write(partitioned, self._changes())
        with partitioned.reader(consistency="eventual", scan_mode="earliest") as reader:
            changes = reader.read_all()
        assert counted(changes) == written  # every write attempt committed: each change once
        normalizer = Normalizer(partitioned.primary_key)
        normalizer.apply(changes)
        assert {k: dict(v) for k, v in normalizer.state.items()} == table_state(partitioned)
        self._check_files(partitioned, table_files_reader)

    def test_a_hybrid_read_of_every_partition_has_no_gap_and_no_overlap(
        self, partitioned: Table, table_files_reader: TableFilesReader | None
    ) -> None:
        first, *later = self._changes()
        self._write(partitioned, [first])
        with partitioned.reader(consistency="transactional") as reader:  # latest-full
            full = reader.poll(max_records=10_000)
            assert len(full) == len(first) and all(c.position is None for c in full)
            written = self._write(partitioned, later)
            after = reader.read_all()
        assert counted(after) == written
        assert state(full + after) == table_state(partitioned)
        self._check_files(partitioned, table_files_reader)

    def test_a_reader_of_some_partitions_gets_exactly_their_changes(
        self, partitioned: Table, table_files_reader: TableFilesReader | None
    ) -> None:
        first, *later = self._changes()
        self._write(partitioned, [first])
        wanted = [{"dt": DAYS[1]}, {"dt": DAYS[2]}]
        with partitioned.reader(consistency="transactional", partitions=wanted) as hybrid:
            full = hybrid.poll(max_records=10_000)
            written = self._write(partitioned, later)
            after = hybrid.read_all()
        assert {c.row["dt"] for c in full + after} == set(DAYS[1:])
        assert counted(after) == Counter({k: n for k, n in written.items() if k[1] in DAYS[1:]})
        expected = {k: r for k, r in table_state(partitioned).items() if k[0] in DAYS[1:]}
        assert state(full + after) == expected
        everything = as_written(first) + written
        for consistency in ("transactional", "eventual"):
            changes = read(partitioned, consistency=consistency, partitions=[{"dt": DAYS[0]}])
            assert counted(changes) == Counter({k: n for k, n in everything.items() if k[1] == DAYS[0]})
        self._check_files(partitioned, table_files_reader)

    def test_compaction_compacts_every_partitions_buckets_and_readers_still_agree(
        self, partitioned: Table, table_files_reader: TableFilesReader | None
    ) -> None:
        written = self._write(partitioned, self._changes())
        result = partitioned.compact()
        assert result.snapshot_id is not None and result.files_after == 2 * len(DAYS)  # one per (day, bucket)
        files = internals(partitioned).files
        latest = files.latest_snapshot()
        assert latest is not None and files.count_rows(latest) == len(table_state(partitioned))
        assert counted(read(partitioned)) == written
        report = verify(partitioned)
        assert report.consistent, report.summary()
        self._check_files(partitioned, table_files_reader)

    def test_an_expired_partition_is_dropped_with_a_delete_of_each_of_its_rows_in_the_log(
        self, warehouse: str, log_options: dict[str, str], table_files_reader: TableFilesReader | None
    ) -> None:
        today = datetime.date.today()
        old, recent, current = (str(today - datetime.timedelta(days=d)) for d in (5, 1, 0))
        table = create_table(warehouse, f"db.e_{uuid.uuid4().hex[:10]}", SCHEMA, primary_key=["dt", "id"],
                             partition_keys=["dt"], bucket=2,
                             options={**log_options, "partition.expiration-time": "2 d",
                                      "partition.expiration-check-interval": "1 ms"})  # every commit checks
        written = self._write(table, [rows(3, days=(current,), tag="v0", start=90)])
        with table.reader(consistency="transactional") as hybrid:  # the current rows, then the log
            full = hybrid.poll(max_records=10_000)
            first = rows(10, days=(old, recent))
            updates = [("+U", {"dt": old, "id": 1, "v": "updated"}), ("-D", {"dt": old, "id": 2, "v": "v1-2"})]
            written += self._write(table, [first + updates])  # the commit's expiry check drops `old`
            assert [s.commit_kind for s in table.snapshots()][-1] == "OVERWRITE"
            dropped = {("-D", old, i, "updated" if i == 1 else f"v1-{i}") for i in range(10) if i != 2}
            written += Counter(dropped)
            written += self._write(table, [rows(5, days=(recent, current), tag="v2", start=50)])
            following = full + hybrid.read_all()
        assert {dt for dt, _ in table_state(table)} == {recent, current}
        for changes in (read(table), following):
            assert counted(changes) == written
            assert state(changes) == table_state(table)
        report = verify(table)
        assert report.consistent, report.summary()
        assert table.expire_partitions(dry_run=True).dropped == ()  # nothing else is old enough
        self._check_files(table, table_files_reader)
