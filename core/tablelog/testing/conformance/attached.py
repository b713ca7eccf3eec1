"""Conformance tests of a log attached to a table that exists (docs/attaching.md): a
Paimon table another writer created and filled gets the log system's log by an alter
(its options from ``log_config_factory``, each under the system's prefix), and every change
after it reaches the log once; a table moves from the built-in file log to this one, and
from this one to none, while readers run: each stops with the named error and resumes
exactly. Every change is counted on both sides: what the table holds, what readers return.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tablelog.commit.log_commit import LogCommitRecord
from tablelog.errors import LogChangedError, LogDetachedError, LogMovedError
from tablelog.reading import ChangelogReader
from tablelog.records import SeekSpec
from tablelog.store import SetOption, Warehouse, commit_rows, create_paimon_table
from tablelog.table import Table, internals
from tablelog.tables import create_table, open_table
from tablelog.testing.conformance.base import ConfigFactory, ConformanceBase
from tablelog.testing.scenarios import SCHEMA, ids, replay, rows, table_state
from tablelog.topic_owners import topic_option


class AttachedLogTests(ConformanceBase):
    """The log system's log attached to a table that exists, moved to, and detached."""

    @pytest.fixture
    def attach_options(self, log_config_factory: ConfigFactory) -> dict[str, str]:
        """The log system's options (``<system>.<key>``), a topic of its own (so that the
        built-in file log moves too, to another topic), and ``log.system`` itself."""
        config = log_config_factory(partitions=2)
        return {"log.system": config.system,
                **{f"{config.system}.{key}": str(value) for key, value in config.options.items()},
                topic_option(config.system): f"attached-{uuid.uuid4().hex[:12]}"}

    @pytest.fixture
    def attach_warehouse(self, tmp_path: Path) -> str:
        return str(tmp_path / "attach-warehouse")

    def _attach(self, warehouse: str, identifier: str, options: dict[str, str]) -> Table:
        """The table opened with the log system's options (as ``-o``), then given its log
        and topic (``--set log.system=... --set <topic option>=...``), as a user does with
        ``tablelog alter``."""
        setting = ("log.system", topic_option(options["log.system"]))
        table = open_table(warehouse, identifier, {k: v for k, v in options.items() if k not in setting})
        table.alter(*(SetOption(key, options[key]) for key in setting))
        return table

    def _records_in_log(self, table: Table) -> int:
        """How many records the table's topic holds, read with the log client alone."""
        with internals(table).open_log() as log:
            partitions = list(range(table.log_partitions))
            ends = log.end_positions(partitions)
            count = 0
            for partition in partitions:
                position = log.seek(partition, SeekSpec.earliest())
                deadline = time.monotonic() + self.fetch_deadline_s
                # Up to the end positions, not a record count: a position need not count records.
                while position < ends[partition] and time.monotonic() < deadline:
                    result = log.fetch(partition, position, 1000, self.fetch_step_s)
                    self.check_result(result, position, 1000)
                    count += len(result.records)
                    position = result.next_position
            return count

    def test_a_log_attached_to_a_table_another_writer_filled_carries_every_later_change_once(
        self, attach_warehouse: str, attach_options: dict[str, str]
    ) -> None:
        identifier = f"db.t_{uuid.uuid4().hex[:10]}"
        wh = Warehouse(attach_warehouse)
        create_paimon_table(wh, identifier, SCHEMA, ["id"], bucket=2)
        commit_rows(wh, identifier, rows(40))
        commit_rows(wh, identifier, rows(10, tag="v2"))  # updates of ids 0..9
        table = self._attach(attach_warehouse, identifier, attach_options)
        latest = internals(table).files.latest_snapshot()
        assert latest is not None
        record = LogCommitRecord.from_properties(latest.properties)
        assert record is not None and record.attached and record.system == attach_options["log.system"]
        assert sorted(record.end_positions) == [0, 1], "the attaching snapshot records where the new log begins"
        # Hybrid readers started at the attaching snapshot: its rows, then the log.
        transactional = table.reader(consistency="transactional")
        eventual = table.reader(consistency="eventual")
        before = [*transactional.poll(max_records=1000), *eventual.poll(max_records=1000)]
        assert ids(before) == Counter({i: 2 for i in range(40)}), "the rows up to the attach, from the table"
        with table.writer() as writer:
            writer.write(rows(30, start=40))
            writer.write(rows(10, start=20, tag="v3"))
            writer.commit()
        after = Counter(range(40, 70)) + Counter(range(20, 30))
        for reader in (transactional, eventual):
            with reader:
                changes = reader.read_all(idle_timeout_s=1.0)
            assert ids(changes) == after, "every change after the attach from the log, once"
        state = table_state(table)
        assert len(state) == 70 and state[25]["name"] == "v3-25" and state[5]["name"] == "v2-5"
        assert self._records_in_log(table) == sum(after.values()), "the log holds nothing from before the attach"

    def test_a_writer_that_opened_the_table_before_the_attach_commits_nothing(
        self, attach_warehouse: str, attach_options: dict[str, str]
    ) -> None:
        identifier = f"db.t_{uuid.uuid4().hex[:10]}"
        create_paimon_table(Warehouse(attach_warehouse), identifier, SCHEMA, ["id"], bucket=2)
        early = open_table(attach_warehouse, identifier).writer()
        early.write(rows(5))
        table = self._attach(attach_warehouse, identifier, attach_options)
        with pytest.raises(LogChangedError, match="changed by an alter"):
            early.commit()
        early.close()
        assert table_state(table) == {}, "its rows are in no log: they are not committed either"

    def test_a_reader_of_the_file_log_stops_at_the_move_to_this_log_and_resumes_exactly(
        self, attach_warehouse: str, attach_options: dict[str, str]
    ) -> None:
        identifier = f"db.t_{uuid.uuid4().hex[:10]}"
        table = create_table(attach_warehouse, identifier, SCHEMA, primary_key=["id"], bucket=2,
                             options={"log.system": "filesystem"})
        _write(table, rows(20))
        readers = [table.reader(consistency=c, scan_mode="earliest") for c in ("transactional", "eventual")]
        returned = [reader.read_all(idle_timeout_s=0.5) for reader in readers]
        moved = self._attach(attach_warehouse, identifier, attach_options)
        _write(moved, rows(15, start=20))
        _write(moved, rows(5, tag="v2"))
        for reader, changes in zip(readers, returned, strict=True):
            with reader, pytest.raises(LogMovedError) as stopped:
                _read_until_stopped(reader, changes)
            assert stopped.value.position is not None
            reopened = open_table(attach_warehouse, identifier,
                                  {k: v for k, v in attach_options.items() if k != "log.system"})  # as stored
            with reopened.reader(stopped.value.position) as resumed:
                changes += resumed.read_all(idle_timeout_s=1.0)
            assert ids(changes) == Counter(range(35)) + Counter(range(5)), "each change once, across the move"
            assert replay(changes) == table_state(moved)

    def test_detaching_this_log_stops_its_readers_after_every_change_it_holds(
        self, attach_warehouse: str, attach_options: dict[str, str]
    ) -> None:
        identifier = f"db.t_{uuid.uuid4().hex[:10]}"
        table = create_table(attach_warehouse, identifier, SCHEMA, primary_key=["id"], bucket=2,
                             options=attach_options)
        _write(table, rows(20))
        readers = [table.reader(consistency=c, scan_mode="earliest") for c in ("transactional", "eventual")]
        _write(table, rows(10, start=20))
        table.alter(SetOption("log.system", "none"))
        _write(table, rows(5, start=30))  # in no log
        for reader in readers:
            changes: list[Any] = []
            with reader, pytest.raises(LogDetachedError, match="detached at snapshot"):
                _read_until_stopped(reader, changes)
            assert ids(changes) == Counter(range(30)), "every change of the log, once, before the error"
        assert len(table_state(table)) == 35


def _write(table: Table, data: list[dict[str, Any]]) -> None:
    with table.writer() as writer:
        writer.write(data)
        writer.commit()


def _read_until_stopped(reader: ChangelogReader, changes: list[Any]) -> None:
    """Poll into ``changes`` until the reader raises (an eventual reader looks whether the
    table's log changed once a second while idle); fails when it never does."""
    for _ in range(40):
        changes += reader.poll(timeout_s=0.3)
    pytest.fail("the reader went on reading after its log changed")
