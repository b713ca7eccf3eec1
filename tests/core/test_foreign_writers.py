"""Commits other writers make (pypaimon used directly, as a Flink or Spark Paimon job, a
``DELETE FROM`` or a procedure would) reach tablelog's readers: transactional readers take
them from the table files, exactly once, in commit order with the log's snapshots; a
relay's copy of them in the log is skipped; ``verify`` is consistent. On the file log and
on Kafka; every change is counted on both sides."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import tablelog
from tablelog.commit.log_commit import LogCommitRecord
from tablelog.positions import ReaderPosition
from tablelog.store import commit_changes
from tablelog.table import Table, internals
from tablelog.verify import verify

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


@pytest.fixture(params=["filesystem", pytest.param("kafka", marks=pytest.mark.kafka)])
def log_options(request: pytest.FixtureRequest) -> dict[str, str]:
    if request.param == "kafka":
        return {"log.system": "kafka", "kafka.bootstrap.servers": request.getfixturevalue("kafka_bootstrap")}
    return {"log.system": "filesystem"}


@pytest.fixture
def table(tmp_path: Path, log_options: dict[str, str]) -> Iterator[Table]:
    yield tablelog.create_table(str(tmp_path), f"db.t_{uuid.uuid4().hex[:8]}", SCHEMA, primary_key=["id"],
                                bucket=2, options=log_options)


def write(table: Table, changes: list[tuple[str, dict[str, Any]]]) -> None:
    """One commit through tablelog."""
    with table.writer() as writer:
        writer.write(changes)
        writer.commit()


def foreign_write(table: Table, changes: list[tuple[str, dict[str, Any]]], *, overwrite: bool = False) -> int:
    """One commit by another writer, with no log-commit record; returns its snapshot id
    (:func:`tablelog.store.commit_changes`: pypaimon alone, or the kinds in ``_VALUE_KIND``
    as a Java engine writes them)."""
    snapshot_id = commit_changes(table.warehouse, table.identifier, changes, overwrite=overwrite)
    latest = internals(table).files.snapshot(snapshot_id)
    assert latest is not None and LogCommitRecord.from_properties(latest.properties) is None
    return snapshot_id


def as_tuples(changes: list[Any]) -> list[tuple[str, int, str]]:
    return [(c.kind.value, c.row["id"], c.row["name"]) for c in changes]


def read_everything(table: Table, **options: Any) -> list[Any]:
    with table.reader(consistency="transactional", scan_mode="earliest", **options) as reader:
        return reader.read_all()


def test_another_writers_commit_reaches_a_transactional_reader_once_in_commit_order(table: Table) -> None:
    """The issue's case: two rows through tablelog, one pypaimon commit inserting id 3 and
    updating id 1, one more tablelog write: five changes, in commit order."""
    write(table, [("+I", {"id": 1, "name": "a"}), ("+I", {"id": 2, "name": "b"})])
    foreign = foreign_write(table, [("+I", {"id": 3, "name": "c"}), ("+U", {"id": 1, "name": "a2"})])
    write(table, [("+I", {"id": 4, "name": "d"})])
    changes = read_everything(table)
    assert sorted(as_tuples(changes[:2])) == [("+I", 1, "a"), ("+I", 2, "b")]
    assert sorted(as_tuples(changes[2:4])) == [("+I", 3, "c"), ("+U", 1, "a2")]
    assert {c.snapshot_id for c in changes[2:4]} == {foreign}
    assert as_tuples(changes[4:]) == [("+I", 4, "d")]
    assert len(table.rows()) == 4
    report = verify(table)
    assert report.consistent, report.summary()
    assert report.changes_replayed == 5


def alternate(table: Table) -> list[tuple[str, int, str]]:
    """Rounds of tablelog and pypaimon commits (inserts, updates, deletes, each key once
    per commit); returns every change made, in commit order."""
    made: list[tuple[str, int, str]] = []
    for round_ in range(3):
        base = round_ * 10
        ours = [("+I", {"id": base + i, "name": f"t{base + i}"}) for i in range(4)]
        if round_:
            ours += [("+U", {"id": base - 10, "name": "t-updated"}), ("-D", {"id": base - 9, "name": f"p{base - 9}"})]
        write(table, ours)
        theirs = [("+I", {"id": base + 5 + i, "name": f"p{base + 5 + i}"}) for i in range(3)]
        theirs += [("+U", {"id": base + 1, "name": "p-updated"}), ("-D", {"id": base + 2, "name": f"t{base + 2}"})]
        foreign_write(table, theirs)
        made += [(k, r["id"], r["name"]) for k, r in ours + theirs]
        if round_ == 1:
            compacted = table.compact().snapshot_id  # a COMPACT snapshot: rewritten files, no change
            assert compacted is not None and internals(table).files.snapshot(compacted).commit_kind == "COMPACT"  # type: ignore[union-attr]
    return made


def test_a_table_written_alternately_by_tablelog_and_pypaimon_is_read_once_and_resumed_anywhere(
    table: Table,
) -> None:
    made = alternate(table)
    whole = read_everything(table)
    assert sorted(as_tuples(whole)) == sorted(made)  # every change, each once
    assert [c.snapshot_id for c in whole] == sorted(c.snapshot_id for c in whole)  # commit order
    # Resumed from a saved position after every poll of one change (inside foreign
    # snapshots and between them): the same changes, none repeated, none skipped.
    position: str | None = None
    resumed: list[Any] = []
    while True:
        with table.reader(position, consistency="transactional", scan_mode=None if position else "earliest") as reader:
            batch = reader.poll(max_records=1, timeout_s=0.2)
            position = reader.position.to_json()
        if not batch and ReaderPosition.parse(position).snapshot == internals(table).files.latest_snapshot().id:
            break
        resumed += batch
    assert as_tuples(resumed) == as_tuples(whole)
    # Only some log partitions: each reader gets its share, together all.
    shares = [read_everything(table, partitions=[p]) for p in range(table.log_partitions)]
    assert sorted(t for share in shares for t in as_tuples(share)) == sorted(made)
    report = verify(table)
    assert report.consistent, report.summary()
    assert report.changes_replayed == len(made)


def test_a_hybrid_reader_starting_at_another_writers_snapshot_then_follows_theirs_and_ours(table: Table) -> None:
    write(table, [("+I", {"id": 1, "name": "a"})])
    foreign_write(table, [("+I", {"id": 2, "name": "b"})])
    with table.reader(consistency="transactional", scan_mode="latest-full") as reader:
        assert sorted(as_tuples(reader.read_all())) == [("+I", 1, "a"), ("+I", 2, "b")]
        foreign_write(table, [("-D", {"id": 1, "name": "a"})])
        write(table, [("+I", {"id": 3, "name": "c"})])
        assert as_tuples(reader.read_all()) == [("-D", 1, "a"), ("+I", 3, "c")]


def test_from_timestamp_and_a_consumer_read_another_writers_snapshots_the_same_way(table: Table) -> None:
    write(table, [("+I", {"id": 1, "name": "a"})])
    time.sleep(0.01)
    after_first = int(time.time() * 1000)
    time.sleep(0.01)
    foreign_write(table, [("+U", {"id": 1, "name": "a2"})])
    write(table, [("+I", {"id": 2, "name": "b"})])
    with table.reader(consistency="transactional", scan_mode="from-timestamp", timestamp_millis=after_first) as r:
        assert as_tuples(r.read_all()) == [("+U", 1, "a2"), ("+I", 2, "b")]
    with table.reader(consistency="transactional", scan_mode="earliest", consumer_id="c1") as reader:
        first = reader.poll(max_records=3)
    assert as_tuples(first) == [("+I", 1, "a"), ("+U", 1, "a2"), ("+I", 2, "b")]
    foreign_write(table, [("+I", {"id": 3, "name": "c"})])
    write(table, [("+I", {"id": 4, "name": "d"})])
    with table.reader(consistency="transactional", consumer_id="c1") as reader:
        assert as_tuples(reader.read_all()) == [("+I", 3, "c"), ("+I", 4, "d")]


def test_an_overwrite_by_another_writer_reads_as_the_rows_it_removed_and_added(table: Table) -> None:
    write(table, [("+I", {"id": i, "name": f"n{i}"}) for i in range(4)])
    foreign_write(table, [("+I", {"id": 1, "name": "n1"}), ("+I", {"id": 9, "name": "new"})], overwrite=True)
    assert sorted(r["id"] for r in table.rows().to_pylist()) == [1, 9]
    changes = as_tuples(read_everything(table))
    assert sorted(changes[4:]) == [("+I", 9, "new"), ("-D", 0, "n0"), ("-D", 2, "n2"), ("-D", 3, "n3")]
    assert verify(table).consistent


def test_a_relays_copy_of_another_writers_changes_in_the_log_is_skipped_by_transactional_readers(
    table: Table,
) -> None:
    """A relay (see the relay command) publishes a foreign snapshot's changes into the log
    in a snapshot of its own whose record names the snapshots relayed: transactional
    readers took those changes from the files already, and skip its ranges."""
    write(table, [("+I", {"id": 1, "name": "a"})])
    foreign = foreign_write(table, [("+I", {"id": 2, "name": "b"})])
    files = internals(table).files
    task = table.write_task("relay", 1)
    task.write([("+I", {"id": 2, "name": "b"})])
    receipt = task.finish()
    end = internals(table).open_log().end_positions(list(range(table.log_partitions)))
    relay = LogCommitRecord(writer="relay", commit_identifier=1, system=table.options.log_system,
                            topic=table.topic, ranges=receipt.ranges, end_positions=end,
                            relayed_snapshots=(foreign,))
    with files.commit_lock():
        # pypaimon makes no snapshot of an empty commit: the relay's copy of the row goes
        # to the files too (the same row again: the table's rows stay as they are).
        files.commit(receipt.paimon_messages, commit_user="relay", commit_identifier=1, properties=relay.to_properties())
    latest = files.latest_snapshot()
    assert latest is not None and latest.id == foreign + 1
    assert LogCommitRecord.from_properties(latest.properties).relayed_snapshots == (foreign,)  # type: ignore[union-attr]
    write(table, [("+I", {"id": 3, "name": "c"})])
    assert as_tuples(read_everything(table)) == [("+I", 1, "a"), ("+I", 2, "b"), ("+I", 3, "c")]
    assert verify(table).consistent
    from tablelog.cli.describe import describe_document

    entry = next(s for s in describe_document(table, 10)["snapshots"] if s["id"] == latest.id)
    assert entry["written_by"] == "relay" and entry["relayed_snapshots"] == [foreign]


def test_tail_describe_and_the_dashboard_show_another_writers_snapshot(table: Table) -> None:
    from click.testing import CliRunner

    from tablelog.cli import cli
    from tablelog.cli.describe import describe_document

    write(table, [("+I", {"id": 1, "name": "a"})])
    foreign = foreign_write(table, [("+I", {"id": 2, "name": "b"})])
    where = ["--warehouse", table.warehouse.path]
    tail = CliRunner().invoke(cli, ["tail", *where, table.identifier, "--scan-mode", "earliest", "--format", "json",
                                    "--consistency", "transactional"], catch_exceptions=False)
    assert tail.exit_code == 0, tail.output
    lines = [json.loads(line) for line in tail.stdout.splitlines()]
    assert [(d["snapshot"], d["kind"], d["row"]["id"]) for d in lines] == [(1, "+I", 1), (foreign, "+I", 2)]
    assert lines[1]["position"] is None  # read from the table files, not at a log position
    describe = CliRunner().invoke(cli, ["describe", *where, table.identifier], catch_exceptions=False)
    assert describe.exit_code == 0 and "another writer" in describe.stdout
    entries = {s["id"]: s for s in describe_document(table, 10)["snapshots"]}
    assert entries[foreign]["written_by"] == "another writer" and entries[1]["written_by"] == "tablelog"


def test_an_eventual_reader_gets_another_writers_changes_from_the_files_and_normalizes_to_the_table(
    table: Table,
) -> None:
    from tablelog.normalize import Normalizer

    made = alternate(table)
    with table.reader(consistency="eventual", scan_mode="earliest") as reader:
        changes = reader.read_all()
        assert set(as_tuples(changes)) >= set(made)  # at least once
        normalizer = Normalizer(table.primary_key)
        normalizer.apply(changes)
        expected = {r["id"]: r for r in table.rows().to_pylist()}
        assert {k[0]: dict(r) for k, r in normalizer.state.items()} == expected
        # Following: a later commit of another writer reaches it too, after the log's earlier records.
        write(table, [("+U", {"id": 0, "name": "ours"})])
        foreign_write(table, [("+U", {"id": 0, "name": "theirs"})])
        later = as_tuples(reader.read_all())
    assert later.index(("+U", 0, "ours")) < later.index(("+U", 0, "theirs"))
    with table.reader(consistency="eventual", scan_mode="latest-full") as hybrid:
        rows = hybrid.read_all()
        foreign_write(table, [("+I", {"id": 99, "name": "late"})])
        assert as_tuples(hybrid.read_all()) == [("+I", 99, "late")]
    assert len(rows) == len(expected)


def test_another_writers_commit_under_a_newer_schema_keeps_its_new_columns_values(table: Table) -> None:
    """A reader (and its table object) opened before another tool altered the table reads
    that tool's later commit with the new column's values, not nulls."""
    write(table, [("+I", {"id": 1, "name": "a"})])
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        assert as_tuples(reader.poll()) == [("+I", 1, "a")]
        tablelog.open_table(table.warehouse.path, table.identifier).alter(tablelog.AddColumn("extra", pa.string()))
        commit_changes(table.warehouse, table.identifier, [("+I", {"id": 2, "name": "b", "extra": "X"})])
        assert [c.row for c in reader.poll(timeout_s=1)] == [{"id": 2, "name": "b", "extra": "X"}]
