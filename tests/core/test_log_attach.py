"""A log attached to a table that exists, moved to another, detached (``tablelog alter --set
log.system=...``, docs/attaching.md), on the file log: the alter and its refusals, the
attaching snapshot, writers that opened the table before, positions across a move. The
conformance group ``AttachedLogTests`` runs the readers' side on every log system."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner

import tablelog
from tablelog import SetOption, log_change
from tablelog.cli import cli
from tablelog.commit import log_commits
from tablelog.commit.log_commit import LogCommitRecord
from tablelog.errors import (
    LogChangedError,
    LogMovedError,
    LogUnavailableError,
    OptionError,
    PluginNotFoundError,
    ReaderPositionError,
    SchemaChangeError,
)
from tablelog.records import SeekSpec
from tablelog.store import Warehouse, commit_rows, create_paimon_table
from tablelog.table import Table, internals
from tablelog.testing.scenarios import ids, replay, table_state

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()), ("score", pa.float64())])


def rows(count: int, start: int = 0, tag: str = "v1") -> list[dict[str, Any]]:
    return [{"id": i, "name": f"{tag}-{i}", "score": i * 0.5} for i in range(start, start + count)]


def paimon_alone(warehouse: Path, *batches: list[dict[str, Any]]) -> None:
    """Table db.t created and written by pypaimon alone: no tablelog property, no table id."""
    wh = Warehouse(str(warehouse))
    create_paimon_table(wh, "db.t", SCHEMA, ["id"], bucket=2)
    for batch in batches:
        commit_rows(wh, "db.t", batch)


def write(table: Table, data: list[dict[str, Any]]) -> None:
    with table.writer() as writer:
        writer.write(data)
        writer.commit()


def state(warehouse: Path) -> tuple[int, list[int], dict[str, str]]:
    """What a refused alter leaves as it was: the schema id, the snapshots, the options."""
    fresh = tablelog.open_table(str(warehouse), "db.t")
    files = internals(fresh).files
    return files.latest_schema_id(), [s.id for s in fresh.snapshots()], files.properties


def test_tablelog_alter_gives_a_log_to_a_table_pypaimon_alone_created_and_filled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paimon_alone(tmp_path, rows(30), rows(5, tag="v2"))
    monkeypatch.setenv("TABLELOG_WAREHOUSE", str(tmp_path))
    result = CliRunner().invoke(cli, ["alter", "db.t", "--set", "log.system=filesystem"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "log: filesystem topic 'db.t', from snapshot 3 on (before: no log (log.system=none))" in result.output
    table = tablelog.open_table(str(tmp_path), "db.t")
    assert table.options.log_system == "filesystem"
    files = internals(table).files
    attaching, before = files.snapshot(3), files.snapshot(2)
    assert attaching is not None and before is not None
    assert attaching.total_record_count == before.total_record_count, "the attaching snapshot adds no file"
    record = LogCommitRecord.from_properties(attaching.properties)
    assert record is not None and record.attached and record.end_positions == {0: 0, 1: 0} and not record.ranges
    hybrid = table.reader()  # latest-full: the rows up to the attach, then the log
    assert hybrid.position.snapshot == 3  # taken now, before the write
    write(table, rows(10, start=25, tag="v3"))
    with hybrid:
        changes = hybrid.read_all(idle_timeout_s=0.5)
    assert ids(changes) == Counter(range(30)) + Counter(range(25, 35)), "no gap, no overlap"
    assert replay(changes) == table_state(table)
    with internals(table).open_log() as log:  # the log alone: what a consumer of the topic gets
        records = [r for p in (0, 1) for r in log.fetch(p, log.seek(p, SeekSpec.earliest()), 1000, 0.5).records]
    assert sorted(json.loads(r.value)["after"]["id"] for r in records) == list(range(25, 35))


def test_a_transactional_reader_from_earliest_gets_the_changes_before_the_attach_from_the_table_files(
    tmp_path: Path,
) -> None:
    paimon_alone(tmp_path, rows(30))
    table = tablelog.open_table(str(tmp_path), "db.t")
    write(table, rows(5, tag="v2"))  # tablelog's own commit while the table had no log
    table.alter(SetOption("log.system", "filesystem"))
    write(table, rows(10, start=25, tag="v3"))
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        changes = reader.read_all(idle_timeout_s=0.5)
    assert ids(changes) == Counter(range(30)) + Counter(range(5)) + Counter(range(25, 35))
    assert replay(changes) == table_state(table)


def test_the_options_of_the_log_records_are_set_with_the_log_and_fixed_after_it(tmp_path: Path) -> None:
    paimon_alone(tmp_path, rows(3))
    table = tablelog.open_table(str(tmp_path), "db.t")
    table.alter(SetOption("log.system", "filesystem"), SetOption("log.format", "json"),
                SetOption("log.system.partitions", "4"))
    write(table, rows(3, start=3))
    fresh = tablelog.open_table(str(tmp_path), "db.t")
    assert fresh.options.log_format.value == "json" and fresh.log_partitions == 4
    before = state(tmp_path)
    with pytest.raises(SchemaChangeError, match=r"log.format='arrow' is not allowed: it defines the records of the "
                                                r"table's log: it may be set only together with a new log.system"):
        fresh.alter(SetOption("log.format", "arrow"))
    assert state(tmp_path) == before


@pytest.mark.parametrize(("sets", "error", "message"), [
    ({"log.system": "kafka"}, OptionError, r"log.system='kafka' needs option 'kafka.bootstrap.servers'"),
    ({"log.system": "nosuch"}, PluginNotFoundError, r"unknown log.system 'nosuch'; installed log systems: .*filesystem"),
    ({"log.system": "filesystem", "log.system.partitions": "1"}, OptionError,
     r"log.system.partitions=1 is fewer than the table's bucket=2"),
    ({"log.system": "filesystem", "log.format": "avro"}, OptionError, r"log.format"),
])
def test_an_attach_the_log_cannot_take_is_refused_and_changes_nothing(
    tmp_path: Path, sets: dict[str, str], error: type[Exception], message: str
) -> None:
    paimon_alone(tmp_path, rows(3))
    before = state(tmp_path)
    table = tablelog.open_table(str(tmp_path), "db.t")
    with pytest.raises(error, match=message):
        table.alter(*(SetOption(k, v) for k, v in sets.items()))
    assert state(tmp_path) == before
    assert not (tmp_path / "db.db" / "t" / "log").exists() or not any((tmp_path / "db.db" / "t" / "log").iterdir())


def test_a_write_task_of_a_distributed_writer_that_wrote_to_the_old_log_is_not_committed(tmp_path: Path) -> None:
    """A Spark sink's tasks opened the table before the alter, its committer after: the
    receipts say which log their records went to."""
    table = tablelog.create_table(str(tmp_path), "db.t", SCHEMA, primary_key=["id"], bucket=2,
                                  options={"log.system": "filesystem"})
    task = table.write_task("spark-query", 1)
    task.write(rows(10))
    receipt = task.finish()
    table.alter(SetOption("filesystem.topic", "db.t.moved"))
    committer = tablelog.open_table(str(tmp_path), "db.t")
    with pytest.raises(LogChangedError, match="wrote to filesystem topic 'db.t', but the table's log is now "
                                              "filesystem topic 'db.t.moved'"):
        committer.commit("spark-query", 1, [receipt])
    assert table_state(committer) == {}


def test_after_a_move_the_commits_record_the_new_logs_ends_not_the_old_ones(tmp_path: Path) -> None:
    """Setting the topic of a table with a log moves it: the attaching snapshot and every
    later commit record where the new topic ends, and an eventual hybrid reader starts there."""
    table = tablelog.create_table(str(tmp_path), "db.t", SCHEMA, primary_key=["id"], bucket=2,
                                  options={"log.system": "filesystem"})
    write(table, rows(50))
    table.alter(SetOption("filesystem.topic", "db.t.moved"))
    write(table, rows(2, start=50))
    fresh = tablelog.open_table(str(tmp_path), "db.t")
    assert fresh.topic == "db.t.moved"
    newest = next(log_commits(internals(fresh).files, newest_first=True))[1]
    with internals(fresh).open_log() as log:
        assert newest.topic == "db.t.moved" and newest.end_positions == log.end_positions([0, 1])
    hybrid = fresh.reader(consistency="eventual")
    assert len(hybrid.poll(max_records=1000)) == 52  # the rows
    write(fresh, rows(3, start=52))
    with hybrid:
        assert ids(hybrid.read_all(idle_timeout_s=0.5)) == Counter(range(52, 55))


def test_a_transactional_position_between_snapshots_resumes_across_a_move_and_an_eventual_one_is_refused(
    tmp_path: Path,
) -> None:
    table = tablelog.create_table(str(tmp_path), "db.t", SCHEMA, primary_key=["id"], bucket=2,
                                  options={"log.system": "filesystem"})
    write(table, rows(5))
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        reader.read_all(idle_timeout_s=0.2)
        saved = reader.position.to_json()
    with table.reader(consistency="eventual", scan_mode="earliest") as reader:
        reader.read_all(idle_timeout_s=0.2)
        saved_eventual = reader.position.to_json()
    table.alter(SetOption("filesystem.topic", "db.t.moved"))
    write(table, rows(3, start=5))
    moved = tablelog.open_table(str(tmp_path), "db.t")
    with moved.reader(saved) as resumed:
        assert ids(resumed.read_all(idle_timeout_s=0.3)) == Counter(range(5, 8))
    with pytest.raises(ReaderPositionError, match="saved from log 'filesystem:db.t'"):
        moved.reader(saved_eventual)


def test_a_reader_stopped_by_a_move_first_returns_what_its_poll_took_before_it(tmp_path: Path) -> None:
    table = tablelog.create_table(str(tmp_path), "db.t", SCHEMA, primary_key=["id"], bucket=2,
                                  options={"log.system": "filesystem"})
    write(table, rows(5))
    reader = table.reader(consistency="transactional", scan_mode="earliest")
    table.alter(SetOption("filesystem.topic", "db.t.moved"))
    assert ids(reader.poll(max_records=1000)) == Counter(range(5))
    with reader, pytest.raises(LogMovedError, match="moved at snapshot 2"):
        reader.poll()


def test_an_attach_without_auto_register_to_a_topic_that_does_not_exist_is_refused_and_changes_nothing(
    tmp_path: Path,
) -> None:
    paimon_alone(tmp_path, rows(3))
    before = state(tmp_path)
    table = tablelog.open_table(str(tmp_path), "db.t", {"log.system.auto-register": "false"})
    with pytest.raises(OptionError, match=r"the filesystem topic 'db.t' of the log to attach cannot be read .* "
                                          r"with log.system.auto-register=false it must exist with 2 partition"):
        table.alter(SetOption("log.system", "filesystem"))
    assert state(tmp_path) == before


def test_an_attach_to_a_log_that_cannot_be_reached_names_it_and_changes_nothing(tmp_path: Path) -> None:
    paimon_alone(tmp_path, rows(3))
    before = state(tmp_path)
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    table = tablelog.open_table(str(tmp_path), "db.t", {"filesystem.path": str(blocker / "log")})
    with pytest.raises(LogUnavailableError, match="must be a directory this process can create and write"):
        table.alter(SetOption("log.system", "filesystem"))
    assert state(tmp_path) == before


def test_secrets_given_to_an_attach_open_the_new_log_and_are_never_stored(tmp_path: Path) -> None:
    paimon_alone(tmp_path, rows(3))
    table = tablelog.open_table(str(tmp_path), "db.t", {
        "kafka.bootstrap.servers": "broker:9092", "kafka.sasl.password": "hunter2", "kafka.security.protocol": "SASL_SSL",
    })
    change = log_change.planned_change(internals(table), {"log.system": "kafka"})
    assert change is not None and change.system_options["kafka.sasl.password"] == "hunter2"
    assert "kafka.sasl.password" not in change.stored and "hunter2" not in repr(change)
    assert change.stored["kafka.bootstrap.servers"] == "broker:9092"
    with pytest.raises(SchemaChangeError, match="'kafka.sasl.password' is a secret; secrets are never stored"):
        table.alter(SetOption("log.system", "kafka"), SetOption("kafka.sasl.password", "hunter2"))
