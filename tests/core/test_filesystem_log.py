"""The built-in file log: the conformance suite, plus what only a file log can promise
(several writer processes on one partition, torn tails, corrupt bytes, file layout)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tablelog.errors import CorruptRecordError, OptionError, PositionOutOfRangeError, TopicError
from tablelog.logs.client import LogClient
from tablelog.logs.discovery import load_log_system
from tablelog.logs.filesystem import frames
from tablelog.logs.filesystem.segments import list_bases, segment_file_name
from tablelog.logs.filesystem.topic import partition_file_name
from tablelog.records import LogConfig, LogRecord, ProduceBatch, SeekSpec
from tablelog.testing import ClientOpener, LogSystemConformance, opened_clients
from tablelog.testing.partition_scenarios import TableFilesReader


def _config(
    root: Path, partitions: int = 2, auto_register: bool = True, **options: str
) -> LogConfig:
    return LogConfig(
        system="filesystem",
        table="db.orders",
        topic=f"t-{uuid.uuid4().hex[:12]}",
        partitions=partitions,
        auto_register=auto_register,
        options=options,
        warehouse=str(root),
    )


class TestFileLogConformance(LogSystemConformance):
    @pytest.fixture
    def table_files_reader(self, read_with_pypaimon: TableFilesReader) -> TableFilesReader:
        return read_with_pypaimon  # every partitioned table the suite writes, read by pypaimon alone

    quiet_period_s = 0.05  # appends are visible at once: no broker lag to wait out
    # One 64 MiB segment holds every record of a test: TestSegmentedFileLogConformance
    # (tests/core/test_file_log_segments.py) sees deletions.
    delete_before_fine_grained = False

    @pytest.fixture
    def log_config_factory(self, tmp_path: Path) -> Callable[..., LogConfig]:
        def make(partitions: int = 2, auto_register: bool = True) -> LogConfig:
            return _config(tmp_path, partitions, auto_register)

        return make

    @pytest.fixture
    def unreachable_log_config(self, tmp_path: Path) -> LogConfig:
        blocker = tmp_path / "not-a-directory"
        blocker.write_text("")  # the log's root lies below a regular file: it cannot be reached
        return _config(tmp_path, path=str(blocker / "log"))


# ---------------------------------------------------------------------- helpers


@pytest.fixture
def clients() -> Iterator[ClientOpener]:
    with opened_clients() as open_:
        yield open_


@pytest.fixture
def config(tmp_path: Path) -> LogConfig:
    return _config(tmp_path, partitions=1)


@pytest.fixture
def log(config: LogConfig, clients: Callable[[LogConfig], LogClient]) -> LogClient:
    client = clients(config)
    client.ensure_topic()
    return client


def _partition_path(config: LogConfig, partition: int = 0) -> Path:
    return (
        Path(config.warehouse) / ".tablelog" / "log" / config.topic / partition_file_name(partition)
    )


def _partition_bytes(config: LogConfig, partition: int = 0) -> int:
    """The bytes of all the partition's segment files (its length while none is deleted)."""
    directory = _partition_path(config, partition).parent
    return sum(
        (directory / segment_file_name(partition, base)).stat().st_size for base in list_bases(directory, partition)
    )


def _batch(token: str, count: int, first_seq: int = 0, partition: int = 0) -> ProduceBatch:
    return ProduceBatch(
        token,
        partition,
        [f"k{first_seq + i}".encode() for i in range(count)],
        [f"value-{token}-{first_seq + i}".encode() for i in range(count)],
        timestamp_ms=1_700_000_000_000,
        first_seq=first_seq,
    )


def _fetch_all(client: LogClient, partition: int = 0, start: int = 0) -> list[LogRecord]:
    records: list[LogRecord] = []
    position = start
    while True:
        result = client.fetch(partition, position, 10_000, 0.0)
        if not result.records:
            return records
        records += result.records
        position = result.next_position


# ---------------------------------------------------------------------- layout


def test_files_live_under_the_warehouse_by_default(log: LogClient, config: LogConfig) -> None:
    directory = Path(config.warehouse) / ".tablelog" / "log" / config.topic
    assert json.loads((directory / "topic.json").read_text())["partitions"] == 1
    assert (directory / partition_file_name(0)).exists()


def test_path_option_is_a_root_holding_one_directory_per_topic(
    tmp_path: Path, clients: Callable[[LogConfig], LogClient]
) -> None:
    config = _config(tmp_path / "unused-warehouse", path=str(tmp_path / "logs"))
    clients(config).ensure_topic()
    assert (tmp_path / "logs" / config.topic / partition_file_name(1)).exists()
    assert not (tmp_path / "unused-warehouse").exists()


@pytest.mark.parametrize("path", ["relative/log", "./log", "file://otherhost/log"])
def test_a_log_path_that_is_not_one_absolute_local_directory_is_refused(tmp_path: Path, path: str) -> None:
    # Every process (a Spark executor, a second client) must reach the same files.
    with pytest.raises(OptionError, match="filesystem.path") as raised:
        load_log_system("filesystem").open(_config(tmp_path, path=path))
    assert path in str(raised.value)


def test_a_file_url_log_path_is_the_directory_it_names(
    tmp_path: Path, clients: Callable[[LogConfig], LogClient]
) -> None:
    config = _config(tmp_path / "unused-warehouse", path=f"file://{tmp_path / 'logs'}")
    clients(config).ensure_topic()
    assert (tmp_path / "logs" / config.topic / partition_file_name(0)).exists()


def test_unknown_option_is_an_error_with_a_hint(tmp_path: Path) -> None:
    with pytest.raises(OptionError, match="did you mean 'filesystem.path'"):
        load_log_system("filesystem").open(_config(tmp_path, pth="/x"))


def test_topic_that_is_not_a_directory_name_is_rejected(tmp_path: Path) -> None:
    config = LogConfig("filesystem", "db.t", "../escape", 1, True, {}, str(tmp_path))
    with pytest.raises(OptionError, match="filesystem.topic"):
        load_log_system("filesystem").open(config)


def test_fetch_from_a_topic_nobody_created_names_the_topic(
    tmp_path: Path, clients: Callable[[LogConfig], LogClient]
) -> None:
    config = _config(tmp_path)
    with pytest.raises(TopicError, match=config.topic):
        clients(config).fetch(0, 0, 10, 0.0)


def test_positions_are_byte_offsets_of_frames(log: LogClient) -> None:
    batch = _batch("w", 3)
    log.produce(batch)
    (produced,) = log.flush(1.0)
    data, offsets = frames.encode_batch(batch)
    assert [r.position for r in _fetch_all(log)] == offsets
    assert (produced.first, produced.last) == (offsets[0], offsets[-1])
    assert log.end_positions([0]) == {0: len(data)}


# ---------------------------------------------------------------------- durability


def test_positions_survive_reopen_and_appends_continue_after_them(
    config: LogConfig, log: LogClient, clients: Callable[[LogConfig], LogClient]
) -> None:
    log.produce(_batch("a", 4))
    log.flush(1.0)
    before = _fetch_all(log)
    end = log.end_positions([0])[0]
    log.close()
    reopened = clients(config)
    assert _fetch_all(reopened) == before
    assert reopened.end_positions([0]) == {0: end}
    reopened.produce(_batch("b", 2))
    (produced,) = reopened.flush(1.0)
    assert produced.first == end
    assert [r.token for r in _fetch_all(reopened)] == ["a"] * 4 + ["b"] * 2


@pytest.mark.parametrize("cut", [1, 15, 16, 20, 40, 3000, -1])
def test_torn_tail_is_never_returned_and_the_next_append_truncates_it(
    config: LogConfig, log: LogClient, clients: Callable[[LogConfig], LogClient], cut: int
) -> None:
    log.produce(_batch("a", 3))
    log.flush(1.0)
    valid_end = log.end_positions([0])[0]
    # A writer that died mid-write leaves the first bytes of a frame at the end; it
    # is bigger than what comes next, so only a truncation gets rid of all of it.
    big = ProduceBatch("dead", 0, [None], [b"x" * 4000], timestamp_ms=1)
    torn, _ = frames.encode_batch(big)
    path = _partition_path(config)
    with open(path, "ab") as handle:
        handle.write(torn[:cut])
    assert path.stat().st_size == valid_end + len(torn[:cut])

    reader = clients(config)  # a fresh connection must find the valid end by itself
    assert [r.token for r in _fetch_all(reader)] == ["a"] * 3
    assert reader.fetch(0, valid_end, 10, 0.05).records == []
    assert reader.end_positions([0]) == {0: valid_end}
    assert reader.seek(0, SeekSpec.latest()) == valid_end

    writer = clients(config)
    writer.produce(_batch("b", 2))
    (produced,) = writer.flush(1.0)
    assert produced.first == valid_end
    records = _fetch_all(reader)
    assert [(r.token, r.seq) for r in records] == [("a", 0), ("a", 1), ("a", 2), ("b", 0), ("b", 1)]
    assert path.stat().st_size == reader.end_positions([0])[0]


def _flip_byte(path: Path, offset: int) -> None:
    with open(path, "r+b") as handle:
        handle.seek(offset)
        byte = handle.read(1)
        handle.seek(offset)
        handle.write(bytes([byte[0] ^ 0x5A]))


def test_corrupt_byte_in_a_record_raises_naming_its_position(
    config: LogConfig, log: LogClient
) -> None:
    log.produce(_batch("a", 5))
    log.flush(1.0)
    positions = [r.position for r in _fetch_all(log)]
    bad = positions[2]
    _flip_byte(_partition_path(config), positions[3] - frames.TRAILER.size - 1)  # last value byte

    before_bad = log.fetch(0, 0, 100, 0.0)
    assert [r.position for r in before_bad.records] == positions[:2]
    assert before_bad.next_position == bad
    with pytest.raises(CorruptRecordError) as raised:
        log.fetch(0, bad, 100, 0.0)
    message = str(raised.value)
    assert f"position {bad}" in message and config.topic in message and "partition 0" in message
    assert [r.position for r in log.fetch(0, positions[3], 100, 0.0).records] == positions[3:]


def test_corrupt_length_in_the_middle_raises_instead_of_waiting_and_appends_go_on(
    config: LogConfig, log: LogClient, clients: Callable[[LogConfig], LogClient]
) -> None:
    log.produce(_batch("a", 3))
    log.flush(1.0)
    positions = [r.position for r in _fetch_all(log)]
    _flip_byte(_partition_path(config), positions[1] + 5)  # inside the length field
    began = time.monotonic()
    with pytest.raises(CorruptRecordError, match=f"position {positions[1]}"):
        log.fetch(0, positions[1], 100, 5.0)
    assert time.monotonic() - began < 1.0
    writer = clients(config)
    writer.produce(_batch("b", 1))
    (produced,) = writer.flush(1.0)
    assert produced.first > positions[2]
    assert [r.token for r in log.fetch(0, positions[2], 100, 0.0).records] == ["a", "b"]


def test_seek_to_a_position_that_is_not_a_frame_boundary_is_rejected(log: LogClient) -> None:
    log.produce(_batch("a", 2))
    (produced,) = log.flush(1.0)
    with pytest.raises(PositionOutOfRangeError):
        log.seek(0, SeekSpec.position(produced.last - 3))
    assert log.seek(0, SeekSpec.position(produced.last)) == produced.last


def test_fetch_past_the_end_of_the_file_is_out_of_range(log: LogClient) -> None:
    log.produce(_batch("a", 1))
    log.flush(1.0)
    with pytest.raises(PositionOutOfRangeError):
        log.fetch(0, 10_000, 10, 0.0)


def test_waiting_fetch_sees_a_produced_record_within_50_ms(
    config: LogConfig, log: LogClient, clients: Callable[[LogConfig], LogClient]
) -> None:
    writer = clients(config)
    latencies = []
    position = 0
    for i in range(7):
        seen: list[float] = []

        def wait_for_one(start: int = position, seen: list[float] = seen) -> None:
            result = log.fetch(0, start, 1, 5.0)
            if result.records:
                seen.append(time.perf_counter())

        thread = threading.Thread(target=wait_for_one)
        thread.start()
        time.sleep(0.02)
        writer.produce(_batch("w", 1, first_seq=i))
        produced_at = time.perf_counter()
        thread.join()
        assert seen, "the waiting fetch returned nothing"
        latencies.append(seen[0] - produced_at)
        position = writer.end_positions([0])[0]
    latencies.sort()
    assert latencies[len(latencies) // 2] < 0.05, latencies


# ---------------------------------------------------------------------- several writer processes

_WRITER = textwrap.dedent(
    """
    import json, os, sys, time
    from tablelog.records import LogConfig, ProduceBatch
    from tablelog.logs.discovery import load_log_system

    warehouse, topic, token, batches, go = sys.argv[1:]
    client = load_log_system("filesystem").open(
        LogConfig("filesystem", "db.t", topic, 1, True, {}, warehouse))
    client.ensure_topic()
    while not os.path.exists(go):
        time.sleep(0.001)
    ranges, seq = [], 0
    for b in range(int(batches)):
        count = 1 + b % 7
        values = [(f"{token}:{seq + i}:" + "x" * ((seq + i) % 300)).encode() for i in range(count)]
        client.produce(ProduceBatch(token, 0, [None] * count, values, 1, seq))
        seq += count
        if b % 25 == 24:
            ranges += client.flush(10.0)
    ranges += client.flush(10.0)
    client.close()
    print(json.dumps([[r.first, r.last, r.count] for r in ranges]))
    """
)


def test_writer_processes_appending_to_one_partition_lose_nothing(
    tmp_path: Path, clients: Callable[[LogConfig], LogClient]
) -> None:
    config = _config(tmp_path, partitions=1)
    reader = clients(config)
    reader.ensure_topic()
    go = tmp_path / "go"
    tokens = [f"writer-{i}" for i in range(3)]
    batches = 1500  # about 6,000 records per writer
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                _WRITER,
                str(tmp_path),
                config.topic,
                token,
                str(batches),
                str(go),
            ],
            stdout=subprocess.PIPE,
            env=env,
        )
        for token in tokens
    ]
    per_writer = sum(1 + b % 7 for b in range(batches))
    # A reader follows the partition while the writers append: it must never see a
    # half-written frame as data nor mistake one for corruption.
    tailer = clients(config)
    tailed: list[LogRecord] = []
    failures: list[BaseException] = []

    def follow() -> None:
        position, deadline = 0, time.monotonic() + 60
        try:
            while len(tailed) < per_writer * len(tokens) and time.monotonic() < deadline:
                result = tailer.fetch(0, position, 500, 0.05)
                tailed.extend(result.records)
                position = result.next_position
        except BaseException as err:  # reported by the main thread
            failures.append(err)

    follower = threading.Thread(target=follow)
    follower.start()
    time.sleep(0.5)  # let every writer get to the start line, so they append at the same time
    go.touch()
    outputs = [proc.communicate(timeout=120)[0] for proc in procs]
    follower.join()
    assert [proc.returncode for proc in procs] == [0, 0, 0]
    assert failures == []

    records = _fetch_all(reader)
    assert tailed == records
    assert len(records) == per_writer * len(tokens)
    assert len({(r.token, r.seq) for r in records}) == len(records), "a record was written twice"
    positions = {r.position for r in records}
    for token, output in zip(tokens, outputs, strict=True):
        mine = [r for r in records if r.token == token]
        assert [r.seq for r in mine] == list(range(per_writer)), (
            f"{token}: lost or reordered records"
        )
        assert all(
            r.value is not None and r.value.startswith(f"{token}:{r.seq}:".encode()) for r in mine
        )
        ranges = json.loads(output)
        assert sum(count for _, _, count in ranges) == per_writer
        assert all(first in positions and last in positions for first, last, _ in ranges)
    assert reader.end_positions([0])[0] == _partition_path(config).stat().st_size


_BIG_WRITER = textwrap.dedent(
    """
    import sys
    from tablelog.records import LogConfig, ProduceBatch
    from tablelog.logs.discovery import load_log_system

    warehouse, topic = sys.argv[1:]
    client = load_log_system("filesystem").open(
        LogConfig("filesystem", "db.t", topic, 1, True, {}, warehouse))
    client.ensure_topic()
    value = b"v" * (4 << 20)  # big frames: a kill often lands inside a write
    print("started", flush=True)
    for seq in range(25):
        client.produce(ProduceBatch("big", 0, [None], [value], 1, seq))
    """
)


def test_writer_killed_while_appending_leaves_only_whole_records(
    tmp_path: Path, clients: Callable[[LogConfig], LogClient]
) -> None:
    config = _config(tmp_path, partitions=1)
    clients(config).ensure_topic()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [sys.executable, "-c", _BIG_WRITER, str(tmp_path), config.topic],
        stdout=subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"started\n"
    time.sleep(0.05)
    proc.kill()
    proc.wait()

    reader = clients(config)
    records = _fetch_all(reader)
    assert [r.seq for r in records] == list(range(len(records)))
    assert all(r.value == b"v" * (4 << 20) for r in records)
    end = reader.end_positions([0])[0]
    frame_length = frames.OVERHEAD + frames.FIXED_SIZE + len(b"big") + (4 << 20)
    assert end == (records[-1].position + frame_length if records else 0)
    assert end <= _partition_bytes(config)

    writer = clients(config)
    writer.produce(_batch("after", 1))
    (produced,) = writer.flush(1.0)
    assert produced.first == end
    assert [r.token for r in reader.fetch(0, end, 10, 1.0).records] == ["after"]
    assert _partition_bytes(config) == reader.end_positions([0])[0]


def test_forked_child_gets_its_own_files_and_reports_only_its_own_ranges(log: LogClient) -> None:
    log.produce(_batch("parent", 1))
    pid = os.fork()
    if pid == 0:  # the child: any failure becomes its exit status
        status = 1
        try:
            log.produce(_batch("child", 2))
            ranges = log.flush(1.0)
            status = 0 if [(r.token, r.count) for r in ranges] == [("child", 2)] else 2
        finally:
            os._exit(status)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert [(r.token, r.count) for r in log.flush(1.0)] == [("parent", 1)]
    assert [r.token for r in _fetch_all(log)] == ["parent", "child", "child"]


def test_a_tokens_batches_with_nothing_between_them_form_a_contiguous_range(log: LogClient) -> None:
    def produce(token: str, first_seq: int) -> None:
        log.produce(ProduceBatch(token, 0, [None] * 3, [b"v"] * 3, 1, first_seq=first_seq))

    produce("a", 0), produce("a", 3)
    assert [(r.token, r.contiguous) for r in log.flush(5)] == [("a", True)]
    produce("a", 6), produce("b", 0), produce("a", 9)  # b's batch lies inside a's range
    assert {r.token: r.contiguous for r in log.flush(5)} == {"a": False, "b": True}
