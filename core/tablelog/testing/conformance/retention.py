"""Conformance tests of retention with concurrent writers: whole tables on the log system
(its options from ``log_config_factory``), where the core's retention runs after each
commit. On a log without ``delete_before`` they check that nothing is lost either; on a
log that deletes, that retention deletes what no one needs and never what a live write
attempt flushed and may still commit (:mod:`tablelog.commit.leases`)."""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path

import pytest

from tablelog.records import ProducedRange, SeekSpec
from tablelog.table import Table, internals
from tablelog.tables import create_table
from tablelog.testing.conformance.base import ConfigFactory, ConformanceBase
from tablelog.testing.scenarios import SCHEMA, ids, read_transactional, rows


def first_positions(ranges: tuple[ProducedRange, ...]) -> dict[int, int]:
    """Per partition, the first position of ``ranges``."""
    firsts: dict[int, int] = {}
    for produced in ranges:
        firsts[produced.partition] = min(firsts.get(produced.partition, produced.first), produced.first)
    return firsts


class RetentionTests(ConformanceBase):
    """Retention after commits, with writers that commit in another order than they wrote."""

    @pytest.fixture
    def retention_table(self, log_config_factory: ConfigFactory, tmp_path: Path) -> Table:
        """A table of two buckets on the log system, configured as ``log_config_factory``'s
        logs are (each option under the system's prefix)."""
        config = log_config_factory(partitions=2)
        options = {"log.system": config.system,
                   **{f"{config.system}.{key}": str(value) for key, value in config.options.items()}}
        return create_table(str(tmp_path / "retention-warehouse"), f"db.t_{uuid.uuid4().hex[:10]}", SCHEMA,
                            primary_key=["id"], bucket=2, options=options)

    def _earliest_held(self, table: Table) -> tuple[dict[int, int], bool]:
        with internals(table).open_log() as log:
            return {p: log.seek(p, SeekSpec.earliest()) for p in range(table.log_partitions)}, log.deletes_before

    def test_retention_keeps_what_a_slower_writer_flushed_until_it_commits(self, retention_table: Table) -> None:
        table = retention_table
        gave_up = table.write_task("gave-up", 1)  # flushed, then given up: nothing needs these
        gave_up.write(rows(20, start=1000))
        abandoned = first_positions(gave_up.finish().ranges)
        gave_up.abort()
        slow = table.write_task("slow", 1)
        slow.write(rows(40))
        slow_receipt = slow.finish()
        fast = table.write_task("fast", 1)
        fast.write(rows(30, start=100))
        assert table.commit("fast", 1, [fast.finish()]).committed  # and retention runs
        held, deletes = self._earliest_held(table)
        for partition, first in first_positions(slow_receipt.ranges).items():
            assert held[partition] <= first, (
                f"retention deleted records of partition {partition} from {first} on (the log now starts at "
                f"{held[partition]}) that a live writer flushed and had not committed yet"
            )
        if deletes and self.delete_before_fine_grained:
            assert any(held[p] > first for p, first in abandoned.items()), (
                f"retention deleted none of the records of an attempt that gave up ({abandoned}; the log "
                f"starts at {held})"
            )
        assert table.commit("slow", 1, [slow_receipt]).committed
        assert ids(read_transactional(table)) == Counter(range(40)) + Counter(range(100, 130))

    def test_an_eventual_reader_finds_every_flushed_attempt_after_retention(self, retention_table: Table) -> None:
        table = retention_table
        receipts = []
        for attempt in range(3):  # the first two die after their flush; the third commits
            task = table.write_task("w", 1, task=f"0-attempt-{attempt}")
            task.write(rows(50))
            receipts.append(task.finish())
        assert table.commit("w", 1, receipts[-1:]).committed
        with table.reader(consistency="eventual", scan_mode="earliest") as reader:
            changes = reader.read_all()
        assert ids(changes) == Counter({i: 3 for i in range(50)}), "every attempt's records, at least once"
