"""The file log in segments: a partition's records in several files rolled at
``filesystem.segment-bytes``, and retention deleting whole segments before the positions
the retained snapshots still need."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs
import pyarrow as pa
import pytest

import tablelog
from tablelog.commit.retention import earliest_of, needed_positions, truncate_log
from tablelog.errors import (
    CommitError,
    OptionError,
    PositionOutOfRangeError,
    ProduceError,
)
from tablelog.logs.client import LogClient
from tablelog.logs.filesystem.segments import list_bases, lock_file_name
from tablelog.records import LogConfig, LogRecord, ProduceBatch, SeekSpec
from tablelog.table import Table, internals
from tablelog.testing import NO_COMPACTION, ClientOpener, LogSystemConformance, opened_clients
from tablelog.verify import verify

SEGMENT = 600  # bytes: a few records per segment


def make_config(root: Path, partitions: int = 1, **options: str) -> LogConfig:
    return LogConfig(
        system="filesystem", table="db.orders", topic=f"t-{uuid.uuid4().hex[:12]}", partitions=partitions,
        auto_register=True, options=options, warehouse=str(root),
    )


class TestSegmentedFileLogConformance(LogSystemConformance):
    """The whole conformance suite with segments of a few records each."""

    quiet_period_s = 0.05

    @pytest.fixture
    def log_config_factory(self, tmp_path: Path) -> Callable[..., LogConfig]:
        def make(partitions: int = 2, auto_register: bool = True) -> LogConfig:
            config = make_config(tmp_path, partitions, **{"segment-bytes": str(SEGMENT)})
            return attrs.evolve(config, auto_register=auto_register)

        return make

    @pytest.fixture
    def unreachable_log_config(self, tmp_path: Path) -> LogConfig:
        blocker = tmp_path / "not-a-directory"
        blocker.write_text("")
        return make_config(tmp_path, path=str(blocker / "log"), **{"segment-bytes": str(SEGMENT)})


@pytest.fixture
def clients() -> Iterator[ClientOpener]:
    with opened_clients() as open_:
        yield open_


def topic_dir(config: LogConfig) -> Path:
    return Path(config.warehouse) / ".tablelog" / "log" / config.topic


def produce(client: LogClient, token: str, count: int, partition: int = 0) -> None:
    for seq in range(count):
        client.produce(ProduceBatch(token, partition, [f"k{seq}".encode()], [b"v" * 100], 1, seq))
    client.flush(1.0)


def fetch_all(client: LogClient, start: int, partition: int = 0) -> list[LogRecord]:
    records: list[LogRecord] = []
    position = start
    while (result := client.fetch(partition, position, 1000, 0.0)).records:
        records += result.records
        position = result.next_position
    return records


def test_a_partition_rolls_to_a_new_segment_when_the_last_reaches_segment_bytes(
    tmp_path: Path, clients: ClientOpener
) -> None:
    config = make_config(tmp_path, **{"segment-bytes": str(SEGMENT)})
    writer = clients(config)
    writer.ensure_topic()
    produce(writer, "a", 30)
    bases = list_bases(topic_dir(config), 0)
    assert len(bases) > 3 and bases[0] == 0
    records = fetch_all(clients(config), 0)
    assert [r.seq for r in records] == list(range(30))
    # Positions run on across segments: each segment starts where the one before ended.
    assert set(bases[1:]) <= {r.position for r in records}
    assert writer.end_positions([0])[0] == sum(f.stat().st_size for f in topic_dir(config).glob("partition-00000*.log"))


def test_a_reader_following_the_log_reads_on_into_segments_started_after_it(
    tmp_path: Path, clients: ClientOpener
) -> None:
    config = make_config(tmp_path, **{"segment-bytes": str(SEGMENT)})
    writer, reader = clients(config), clients(config)
    writer.ensure_topic()
    got: list[LogRecord] = []
    position = 0

    def read_on() -> None:
        nonlocal position
        while (result := reader.fetch(0, position, 1000, 0.0)).records:
            got.extend(result.records)
            position = result.next_position

    produce(writer, "a", 2)
    read_on()
    produce(writer, "b", 20)
    read_on()
    assert [r.token for r in got] == ["a"] * 2 + ["b"] * 20
    assert len(list_bases(topic_dir(config), 0)) > 2


def test_a_wait_at_the_end_of_a_full_segment_sees_the_record_a_writer_rolled_to_the_next(
    tmp_path: Path, clients: ClientOpener
) -> None:
    """The waiting reader need not know the writers' segment size: the file log looks for
    the segment a writer would start where the last one ends."""
    config = make_config(tmp_path, partitions=2, **{"segment-bytes": str(SEGMENT)})
    writer = clients(config)
    reader = clients(attrs.evolve(config, options={}))  # the default segment size, much larger
    writer.ensure_topic()
    produce(writer, "a", 10)  # two full segments
    ends = reader.end_positions([0, 1])
    assert reader.wait_for_records(ends, 0.0) == []
    bases = list_bases(topic_dir(config), 0)
    produce(writer, "b", 1)
    assert list_bases(topic_dir(config), 0) == [*bases, ends[0]]  # the record went to a new segment
    assert reader.wait_for_records(ends, 1.0) == [0]
    assert [r.token for r in fetch_all(reader, ends[0])] == ["b"]


def test_a_log_written_before_segments_is_read_and_appended_to(tmp_path: Path, clients: ClientOpener) -> None:
    config = make_config(tmp_path)
    writer = clients(config)
    writer.ensure_topic()
    produce(writer, "old", 5)
    writer.close()
    (topic_dir(config) / lock_file_name(0)).unlink()  # a log of before: one file, no lock file
    assert sorted(p.name for p in topic_dir(config).iterdir()) == ["partition-00000.log", "topic.json", "topic.lock"]
    client = clients(config)
    assert [r.token for r in fetch_all(client, 0)] == ["old"] * 5
    produce(client, "new", 2)
    assert [r.token for r in fetch_all(clients(config), 0)] == ["old"] * 5 + ["new"] * 2


def test_delete_before_deletes_whole_segments_before_the_position_and_never_the_last(
    tmp_path: Path, clients: ClientOpener
) -> None:
    config = make_config(tmp_path, **{"segment-bytes": str(SEGMENT)})
    client = clients(config)
    client.ensure_topic()
    produce(client, "a", 30)
    records = fetch_all(client, 0)
    bases = list_bases(topic_dir(config), 0)
    middle = records[15].position
    kept_from = max(b for b in bases if b <= middle)
    assert client.delete_before({0: middle}) == {0: kept_from}
    assert list_bases(topic_dir(config), 0) == [b for b in bases if b >= kept_from]
    assert client.seek(0, SeekSpec.earliest()) == kept_from
    fresh = clients(config)
    assert fresh.seek(0, SeekSpec.earliest()) == kept_from
    assert [r.seq for r in fetch_all(fresh, kept_from)] == [r.seq for r in records if r.position >= kept_from]
    with pytest.raises(PositionOutOfRangeError, match=rf"before the earliest record the log still holds \({kept_from}\)"):
        fresh.fetch(0, 0, 10, 0.0)
    # Past the end: everything but the segment writers append to.
    end = client.end_positions([0])[0]
    assert client.delete_before({0: end + 1000}) == {0: bases[-1]}
    produce(client, "b", 1)
    assert [r.token for r in fetch_all(fresh, bases[-1])][-1] == "b"
    assert client.delete_before({0: 0}) == {0: bases[-1]}  # idempotent, deletes nothing more


def test_a_segment_bytes_that_is_not_a_size_is_refused(tmp_path: Path, clients: ClientOpener) -> None:
    with pytest.raises(OptionError, match="'filesystem.segment-bytes': expected a whole number of bytes >= 1"):
        clients(make_config(tmp_path, **{"segment-bytes": "64MB"}))


# ---------------------------------------------------------------------- retention of a table

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def make_table(tmp_path: Path) -> Table:
    return tablelog.create_table(
        str(tmp_path), "db.t", SCHEMA, primary_key=["id"], bucket=1,
        options={"log.system": "filesystem", "filesystem.segment-bytes": "2000", **NO_COMPACTION},
    )


def commit_rows(table: Table, commits: int, start: int = 0) -> None:
    with table.writer() as writer:
        for i in range(start, start + commits):
            writer.write([{"id": k, "v": f"c{i}-" + "x" * 50} for k in range(i * 5, i * 5 + 5)])
            writer.commit()


def expire_snapshots_before(table: Table, snapshot_id: int) -> None:
    """What snapshot expiry leaves (another part of #16 builds it): the snapshot files
    before ``snapshot_id`` gone, the EARLIEST hint moved."""
    snapshots = Path(internals(table).files.path) / "snapshot"
    for old in range(1, snapshot_id):
        (snapshots / f"snapshot-{old}").unlink(missing_ok=True)
    (snapshots / "EARLIEST").write_text(str(snapshot_id))


def log_dir(table: Table) -> Path:
    return Path(table.warehouse.path) / ".tablelog" / "log" / table.topic


def test_the_file_log_keeps_every_segment_while_the_first_snapshot_is_retained(tmp_path: Path) -> None:
    table = make_table(tmp_path)
    commit_rows(table, 30)
    assert len(list_bases(log_dir(table), 0)) > 5
    assert list_bases(log_dir(table), 0)[0] == 0
    assert needed_positions(internals(table).files) == {0: 0}


def test_the_earliest_position_needed_is_the_oldest_retained_snapshots(tmp_path: Path) -> None:
    table = make_table(tmp_path)
    commit_rows(table, 10)
    records = {s.id: s for s in table.snapshots()}
    expire_snapshots_before(table, 6)
    from tablelog.commit.log_commit import LogCommitRecord

    sixth = LogCommitRecord.from_properties(records[6].properties)
    assert sixth is not None
    assert needed_positions(internals(table).files) == {0: sixth.ranges[0].first}
    expire_snapshots_before(table, 9)  # expiry moves on: so does what is needed
    ninth = LogCommitRecord.from_properties(records[9].properties)
    assert ninth is not None
    assert needed_positions(internals(table).files) == {0: ninth.ranges[0].first}
    assert earliest_of({0: 500, 1: 7}, {0: 300}) == {0: 300, 1: 7}


def test_after_a_commit_the_segments_no_retained_snapshot_needs_are_deleted(tmp_path: Path) -> None:
    table = make_table(tmp_path)
    commit_rows(table, 30)
    expire_snapshots_before(table, 25)
    needed = needed_positions(internals(table).files)[0]
    commit_rows(table, 1, start=30)  # the committer's retention run
    bases = list_bases(log_dir(table), 0)
    assert bases[0] > 0 and bases[0] <= needed
    assert all(b > needed for b in bases[1:]) or len(bases) == 1
    # A reader from the earliest retained snapshot reads every change it needs, once.
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        changes = reader.read_all()
    assert len(changes) == 7 * 5
    with table.reader(consistency="eventual", scan_mode="latest-full") as reader:
        assert len(reader.read_all()) == 31 * 5


def test_a_read_of_the_log_alone_at_a_deleted_position_reports_the_records_lost(tmp_path: Path) -> None:
    table = make_table(tmp_path)
    commit_rows(table, 20)
    with internals(table).open_log() as log:
        truncate_log(internals(table), log, {0: log.end_positions([0])[0]})  # what a retention shorter than the snapshots does
        held = log.seek(0, SeekSpec.earliest())
        with pytest.raises(PositionOutOfRangeError, match="retention deleted the segment that held it"):
            log.fetch(0, 0, 10, 0.0)
    # verify replays the log alone: it names what is lost. (A transactional reader gets
    # LogDataLostError too, or, where readers fall back to the table files, reads them there.)
    report = verify(table)
    assert not report.consistent
    assert "the log no longer holds them" in (report.error or "")
    assert f"before the earliest record the log still holds ({held})" in (report.error or "")


def test_a_commit_of_records_retention_deleted_meanwhile_is_refused_and_commits_nothing(tmp_path: Path) -> None:
    table = make_table(tmp_path)
    commit_rows(table, 3)
    task = table.write_task("slow-writer", 1)
    task.write([{"id": 1000 + k, "v": "y" * 100} for k in range(40)])
    receipt = task.finish()
    commit_rows(table, 1, start=3)
    with internals(table).open_log() as log:
        truncate_log(internals(table), log, {0: log.end_positions([0])[0]})
    snapshots = [s.id for s in table.snapshots()]
    with pytest.raises(CommitError, match=r"retention deleted them while the write stayed uncommitted"):
        table.commit("slow-writer", 1, [receipt])
    assert [s.id for s in table.snapshots()] == snapshots


def test_describe_shows_each_partitions_retention_and_warns_when_the_log_lost_what_a_snapshot_needs(
    tmp_path: Path,
) -> None:
    from click.testing import CliRunner

    from tablelog.cli import cli

    table = make_table(tmp_path)
    commit_rows(table, 20)
    runner = CliRunner()
    args = ["describe", "-w", str(tmp_path), "db.t"]
    result = runner.invoke(cli, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "log retention" in result.output and "warning" not in result.output
    with internals(table).open_log() as log:
        end = log.end_positions([0])[0]
        truncate_log(internals(table), log, {0: end})
        held = log.seek(0, SeekSpec.earliest())
    result = runner.invoke(cli, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "warning: the log's retention is shorter than the table's snapshots: partition(s) " \
        f"0 (holds from {held}, needed from 0)" in " ".join(result.output.split())
    result = runner.invoke(cli, [*args, "--format", "json"])
    import json

    assert json.loads(result.output)["log"]["retention"] == [
        {"partition": 0, "earliest": held, "needed": 0, "end": end, "short": True, "committed_end": end,
         "uncommitted": 0}
    ]


def test_a_retention_run_that_fails_after_a_commit_does_not_fail_the_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from tablelog.commit import retention

    table = make_table(tmp_path)

    def broken(*args: object) -> None:
        raise OSError("permission denied")

    monkeypatch.setattr(retention, "truncate_log", broken)
    commit_rows(table, 2)
    assert len(list(table.snapshots())) == 2
    assert "log retention after commit failed (the commit stands): permission denied" in caplog.text


def test_records_whose_segment_retention_deleted_before_their_flush_fail_the_flush(
    tmp_path: Path, clients: ClientOpener
) -> None:
    config = make_config(tmp_path, **{"segment-bytes": str(SEGMENT)})
    slow, other = clients(config), clients(config)
    slow.ensure_topic()
    slow.produce(ProduceBatch("slow", 0, [b"k"], [b"v" * 100], 1, 0))  # appended, not flushed
    produce(other, "other", 20)  # rolls on past the slow writer's segment
    other.delete_before({0: other.end_positions([0])[0]})
    with pytest.raises(ProduceError, match="log retention deleted the segment"):
        slow.flush(1.0)
