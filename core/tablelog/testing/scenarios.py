"""Exactly-once scenarios, proven by counting, for any log system.

Subclass :class:`ExactlyOnceScenarios` in a test module and provide a fixture
``log_options`` returning the table options that select and configure the log
system (``{"log.system": "kafka", "kafka.bootstrap.servers": ...}``). Each test
injects failures (attempts that die after producing, replayed commits, a process
killed after producing) and counts every record on both sides.
"""

from __future__ import annotations

import textwrap
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tablelog.normalize import Normalizer
from tablelog.reading import Change
from tablelog.table import Table, internals
from tablelog.tables import create_table, open_table
from tablelog.testing.file_layout import layout_problems
from tablelog.testing.processes import run_python
from tablelog.verify import verify

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("score", pa.float64())])
ROWS = 300


def rows(count: int = ROWS, start: int = 0, tag: str = "v1") -> list[dict[str, Any]]:
    return [{"id": i, "name": f"{tag}-{i}", "score": i * 0.5} for i in range(start, start + count)]


def ids(changes: list[Change]) -> Counter[int]:
    return Counter(c.row["id"] for c in changes)


def replay(changes: list[Change]) -> dict[int, dict[str, Any]]:
    state: dict[int, dict[str, Any]] = {}
    for change in changes:
        if change.kind.is_retraction:
            state.pop(change.row["id"], None)
        else:
            state[change.row["id"]] = change.row
    return state


def table_state(table: Table) -> dict[int, dict[str, Any]]:
    return {r["id"]: r for r in table.rows().to_pylist()}


def read_transactional(table: Table, **kwargs: Any) -> list[Change]:
    kwargs.setdefault("scan_mode", "earliest")
    with table.reader(consistency="transactional", **kwargs) as reader:
        return reader.read_all(idle_timeout_s=0.5)


class LogSystemFixtures:
    """The fixtures a suite of table scenarios asks of its subclass: ``log_options`` (to
    provide) and ``warehouse`` (a local directory unless overridden)."""

    @pytest.fixture
    def log_options(self) -> dict[str, str]:
        raise NotImplementedError("provide a `log_options` fixture with log.system and its options")

    @pytest.fixture
    def warehouse(self, tmp_path: Path) -> str:
        return str(tmp_path / "warehouse")


class ExactlyOnceScenarios(LogSystemFixtures):
    """Provide fixture ``log_options``; the tests below need nothing else (``bucket``, the
    table's buckets, may be overridden: ``-1`` runs them on dynamic buckets)."""

    @pytest.fixture
    def bucket(self) -> int:
        return 2

    @pytest.fixture
    def table(self, warehouse: str, log_options: dict[str, str], bucket: int) -> Table:
        name = f"db.t_{uuid.uuid4().hex[:10]}"
        return create_table(warehouse, name, SCHEMA, primary_key=["id"], bucket=bucket, options=log_options)

    def _attempts(self, table: Table, writer: str, commit_id: int, count: int, data: list[Any]) -> list[Any]:
        receipts = []
        for attempt in range(count):
            task = table.write_task(writer, commit_id, task=f"0-attempt-{attempt}")
            task.write(data)
            receipts.append(task.finish())  # produced and durable; only the last one is committed
        return receipts

    def test_three_attempts_two_dying_after_producing_give_each_record_once_to_transactional_readers(
        self, table: Table
    ) -> None:
        receipts = self._attempts(table, "w", 1, 3, rows())
        result = table.commit("w", 1, [receipts[-1]])
        assert result.committed and result.rows == ROWS
        # A record holds one row, or (log.format=arrow) a batch of rows of one partition.
        assert result.records == sum(r.count for r in receipts[-1].ranges)
        assert result.records == ROWS or internals(table).codec.rows_per_record_vary
        changes = read_transactional(table)
        assert len(changes) == ROWS
        assert ids(changes) == Counter(range(ROWS))
        assert all(c.snapshot_id == result.snapshot_id for c in changes)

    def test_eventual_reader_sees_every_attempt_and_normalize_gives_the_table_rows(self, table: Table) -> None:
        receipts = self._attempts(table, "w", 1, 3, rows())
        table.commit("w", 1, [receipts[-1]])
        with table.reader(consistency="eventual", scan_mode="earliest") as reader:
            changes = reader.read_all()
        assert len(changes) == 3 * ROWS  # at least once: every attempt's records
        assert ids(changes) == Counter({i: 3 for i in range(ROWS)})
        normalizer = Normalizer(table.primary_key)
        normalized = normalizer.apply(changes)
        assert len(normalized) == ROWS  # duplicates dropped
        assert {k[0]: dict(v) for k, v in normalizer.state.items()} == table_state(table)

    def test_replayed_commit_with_same_identifier_changes_nothing(self, table: Table) -> None:
        first = table.commit("w", 1, self._attempts(table, "w", 1, 1, rows()))
        snapshots_before = [s.id for s in table.snapshots()]
        replay_receipts = self._attempts(table, "w", 1, 1, rows(tag="replayed"))
        again = table.commit("w", 1, replay_receipts)
        assert not again.committed and again.snapshot_id == first.snapshot_id
        assert [s.id for s in table.snapshots()] == snapshots_before
        assert {r["name"] for r in table_state(table).values()} == {f"v1-{i}" for i in range(ROWS)}
        changes = read_transactional(table)
        assert ids(changes) == Counter(range(ROWS))
        assert all(c.row["name"].startswith("v1-") for c in changes)

    def test_attempt_killed_in_another_process_after_producing_is_never_returned(
        self, table: Table, warehouse: str, log_options: dict[str, str]
    ) -> None:
        script = textwrap.dedent("""
            import os, tablelog
            from tablelog.testing.processes import child_config
            from tablelog.testing.scenarios import rows
            config = child_config()
            table = tablelog.open_table(config["warehouse"], config["table"], config["options"])
            task = table.write_task("w", 1, task="killed")
            task.write(rows(tag="killed"))
            task.finish()
            os._exit(9)  # dies after producing, before its receipt reaches the committer
        """)
        # The options (a plugin's password among them) go on standard input, never on the command line.
        config = {"warehouse": warehouse, "table": table.identifier, "options": log_options}
        killed = run_python(script, config, timeout_s=120, capture_output=True, text=True)
        assert killed.returncode == 9, killed.stderr
        with table.reader(consistency="eventual", scan_mode="earliest") as reader:
            assert len(reader.read_all()) == ROWS  # the dead attempt's records are in the log
        table.commit("w", 1, self._attempts(table, "w", 1, 1, rows()))
        changes = read_transactional(table)
        assert ids(changes) == Counter(range(ROWS))
        assert not any(c.row["name"].startswith("killed") for c in changes)

    def test_uncommitted_writes_are_invisible_to_transactional_readers_until_the_commit(self, table: Table) -> None:
        table.commit("w", 1, self._attempts(table, "w", 1, 1, rows(50)))
        with table.reader(consistency="transactional", scan_mode="latest") as reader:
            pending = self._attempts(table, "w", 2, 1, rows(40, start=50))
            assert reader.poll(timeout_s=0.3) == []
            table.commit("w", 2, pending)
            seen = reader.read_all()
        assert ids(seen) == Counter(range(50, 90))

    def test_hybrid_read_has_no_gap_and_no_overlap_across_a_snapshot_boundary(self, table: Table) -> None:
        table.commit("w", 1, self._attempts(table, "w", 1, 1, rows(100)))
        with table.reader(consistency="transactional") as reader:  # scan.mode latest-full
            full = reader.poll(max_records=10_000)
            assert len(full) == 100 and all(c.position is None for c in full)
            updates = [("+U", {**r, "name": "updated"}) for r in rows(20)]
            deletes = [("-D", r) for r in rows(10, start=90)]
            table.commit("w", 2, self._attempts(table, "w", 2, 1, updates + deletes + rows(30, start=100)))
            self._attempts(table, "w", 3, 1, rows(5, start=500))  # produced, never committed
            after = reader.read_all()
        assert len(after) == 20 + 10 + 30  # upsert mode: +U, -D, +I each once
        assert replay(full + after) == table_state(table)

    def test_reader_resumes_from_saved_position_without_gap_or_duplicate(self, table: Table) -> None:
        for commit_id in (1, 2, 3):
            data = rows(60, start=(commit_id - 1) * 60)
            table.commit("w", commit_id, self._attempts(table, "w", commit_id, 2, data)[-1:])
        with table.reader(consistency="transactional", scan_mode="earliest") as reader:
            first = reader.poll(max_records=45)
            first += reader.poll(max_records=45)
            saved = reader.position.to_json()
        reopened = open_table(table.warehouse.path, table.identifier, dict(internals(table).system_options))
        with reopened.reader(position=saved) as resumed:
            rest = resumed.read_all()
        assert 0 < len(first) < 180
        assert ids(first + rest) == Counter(range(180)), (len(first), len(rest), saved)

    def test_updates_and_deletes_round_trip_with_their_row_kinds(self, table: Table) -> None:
        table.commit("w", 1, self._attempts(table, "w", 1, 1, rows(10)))
        changes_in = [("+U", {**rows(1)[0], "name": "new"}), ("-D", rows(1, start=5)[0])]
        table.commit("w", 2, self._attempts(table, "w", 2, 1, changes_in))
        tail = read_transactional(table)[10:]
        # order holds within a partition (bucket), not across them
        assert sorted((c.kind.value, c.row["id"], c.row["name"]) for c in tail) == [("+U", 0, "new"), ("-D", 5, "v1-5")]
        assert layout_problems(table) == []  # the files are what Paimon's options declare

    def test_a_transactional_reader_following_a_writer_gets_every_commit_once(self, table: Table) -> None:
        # The reader catches up with the log between commits again and again (seen on
        # pulsar-lite: a reader that had caught up stopped delivering).
        def write() -> None:
            with table.writer("follower") as writer:
                for commit in range(10):
                    writer.write(rows(10, start=commit * 10))
                    writer.commit()
                    time.sleep(0.2)

        thread = threading.Thread(target=write)
        thread.start()
        changes: list[Change] = []
        deadline = time.monotonic() + 60
        with table.reader(consistency="transactional", scan_mode="earliest") as reader:
            while len(changes) < 100 and time.monotonic() < deadline:
                changes += reader.poll(timeout_s=0.05)
        thread.join()
        assert ids(changes) == Counter(range(100))

    def test_arrow_reads_return_exactly_the_changes_of_change_reads(self, table: Table) -> None:
        table.commit("w", 1, self._attempts(table, "w", 1, 1, rows()))
        table.commit("w", 2, self._attempts(table, "w", 2, 3, rows(tag="v2"))[-1:])  # after two dead attempts
        first, second = table.write_task("w", 3, "a"), table.write_task("w", 3, "b")
        first.write(rows(50, tag="a")), second.write(rows(50, start=50, tag="b"))  # one after the other
        table.commit("w", 3, [first.finish(), second.finish()])
        first, second = table.write_task("w", 4, "a"), table.write_task("w", 4, "b")
        first.write(rows(30, tag="a2")), second.write(rows(30, start=30, tag="b2"))
        first.write([("-D", r) for r in rows(10, start=100)])  # interleaved with the other task
        table.commit("w", 4, [first.finish(), second.finish()])
        expected = read_transactional(table)
        with table.reader(consistency="transactional", scan_mode="earliest") as reader:
            parts = []
            while (part := reader.poll_arrow(max_records=70, timeout_s=0.5)).num_rows:
                parts.append(part)
            assert pa.concat_tables(parts).to_pylist() == reader.to_arrow(expected).to_pylist()
        assert len(expected) == 2 * ROWS + 100 + 70

    def test_verify_is_consistent_after_failed_and_replayed_attempts(self, table: Table) -> None:
        receipts = self._attempts(table, "w", 1, 3, rows())
        table.commit("w", 1, [receipts[-1]])
        table.commit("w", 1, self._attempts(table, "w", 1, 1, rows(tag="replay")))
        table.commit("w", 2, self._attempts(table, "w", 2, 2, [("-D", r) for r in rows(25)])[-1:])
        report = verify(table)
        assert report.consistent, report.summary()
        assert report.table_rows == ROWS - 25 and report.changes_replayed == ROWS + 25

    def test_hybrid_reads_include_a_concurrent_writers_later_commit_of_earlier_records(self, table: Table) -> None:
        slow = self._attempts(table, "slow-writer", 1, 1, rows(40))  # produced first, committed last
        table.commit("fast-writer", 1, self._attempts(table, "fast-writer", 1, 1, rows(30, start=100)))
        readers = [table.reader(consistency=mode) for mode in ("transactional", "eventual")]
        full = [reader.poll() for reader in readers]  # rows of snapshot 1: the fast writer's
        assert all(ids(f) == Counter(range(100, 130)) for f in full)
        table.commit("slow-writer", 1, slow)
        for reader, first in zip(readers, full, strict=True):
            with reader:
                rest = reader.read_all()
            assert ids(rest) == Counter(range(40)), reader.consistency
            assert replay(first + rest) == table_state(table)

    def test_another_writers_commit_reaches_readers_once_and_verify_is_consistent(self, table: Table) -> None:
        """A snapshot committed without tablelog (as pypaimon used directly, a Flink job or a
        procedure would: data files, no log records) is read from the table files, in
        commit order with the log's snapshots; eventual readers get it too."""
        table.commit("w", 1, self._attempts(table, "w", 1, 1, rows(20)))
        theirs = [("+I", r) for r in rows(5, start=100, tag="theirs")] + [
            ("+U", {"id": 3, "name": "theirs-3", "score": 0.0}), ("-D", rows(1, start=4)[0])]
        foreign = commit_as_another_writer(table, theirs)
        table.commit("w", 2, self._attempts(table, "w", 2, 1, [("+U", {"id": 3, "name": "ours-3", "score": 1.0})]))
        changes = read_transactional(table)
        assert len(changes) == 20 + len(theirs) + 1
        assert Counter(c.snapshot_id for c in changes)[foreign] == len(theirs)
        snapshot_ids = [c.snapshot_id or 0 for c in changes]
        assert snapshot_ids == sorted(snapshot_ids)  # in commit order
        assert replay(changes) == table_state(table)
        with table.reader(consistency="eventual", scan_mode="earliest") as reader:
            normalizer = Normalizer(table.primary_key)
            normalizer.apply(reader.read_all())
        assert {k[0]: dict(v) for k, v in normalizer.state.items()} == table_state(table)
        report = verify(table)
        assert report.consistent, report.summary()


def commit_as_another_writer(table: Table, changes: list[tuple[str, dict[str, Any]]]) -> int:
    """Commit ``changes`` to the table files as a writer that does not use tablelog (data
    files, no log records, no log-commit record); returns the snapshot's id."""
    from tablelog.store import KIND_FIELD

    files = internals(table).files
    data = pa.Table.from_pylist([row for _, row in changes], schema=SCHEMA)
    if files.has_kind_field:
        data = data.append_column(KIND_FIELD, pa.array([kind for kind, _ in changes], pa.string()))
    write = files.new_write()
    try:
        write.write_arrow(data)
        messages = write.prepare_commit(1)
    finally:
        write.close()
    user = f"another-writer-{uuid.uuid4().hex[:8]}"
    with files.commit_lock():
        files.commit(messages, commit_user=user, commit_identifier=1, properties={})
    latest = files.latest_snapshot()
    assert latest is not None and latest.commit_user == user
    return latest.id
