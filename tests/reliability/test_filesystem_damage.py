"""A filesystem log damaged on disk, seen through a table: a torn tail (a writer
died mid-append) and a corrupted committed record. Damage is detected and never
returned as data; a corrupt committed record fails the reader (naming topic,
partition, position) and ``verify`` (exit 1)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

import tablelog
from tablelog.cli import cli
from tablelog.errors import CorruptRecordError
from tablelog.logs.filesystem import frames
from tablelog.logs.filesystem.topic import partition_file_name
from tablelog.records import ProduceBatch
from tablelog.testing.scenarios import SCHEMA, ids, read_transactional, rows
from tablelog.verify import verify


@pytest.fixture
def table(tmp_path: Path) -> tablelog.Table:
    table = tablelog.create_table(str(tmp_path), "db.disk", SCHEMA, primary_key=["id"], bucket=2,
                                  options={"log.system": "filesystem", "log.fetch-timeout-ms": "2000"})
    with table.writer("w") as writer:
        writer.write(rows(100))
        writer.commit()
    return table


def _file(table: tablelog.Table, partition: int) -> Path:
    return Path(table.warehouse.path) / ".tablelog" / "log" / table.topic / partition_file_name(partition)


def _verify_cli(table: tablelog.Table) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["verify", "-w", table.warehouse.path, table.identifier],
                                catch_exceptions=False)
    return result.exit_code, result.output


@pytest.mark.parametrize("cut", [3, 16, 40, -4])
def test_torn_tail_after_committed_records_is_never_returned_and_the_next_write_cuts_it(
    table: tablelog.Table, cut: int
) -> None:
    path = _file(table, 0)
    valid_end = path.stat().st_size
    torn, _ = frames.encode_batch(ProduceBatch("deadbeefdeadbeef", 0, [b'{"id":999}'], [b"x" * 500], 1))
    with open(path, "ab") as handle:  # a writer that died in the middle of its append
        handle.write(torn[:cut])

    changes = read_transactional(table)
    assert ids(changes) == Counter(range(100))
    with table.reader(consistency="eventual", scan_mode="earliest") as reader:
        eventual = reader.read_all(idle_timeout_s=0.2)
    assert ids(eventual) == Counter(range(100))  # the torn frame is not data, not even for eventual reads
    assert verify(table).consistent
    assert _verify_cli(table)[0] == 0

    with table.writer("w") as writer:  # the next append cuts the torn tail off and lands after it
        writer.write(rows(20, start=100))
        writer.commit()
    assert path.stat().st_size > valid_end
    assert ids(read_transactional(table)) == Counter(range(120))
    assert verify(table).consistent


def test_corrupt_committed_record_fails_readers_and_verify_naming_topic_partition_and_position(
    table: tablelog.Table,
) -> None:
    changes = sorted((c for c in read_transactional(table) if c.partition == 0), key=lambda c: c.position)
    victim, following = changes[3], changes[4]
    assert victim.position is not None and following.position is not None
    path = _file(table, 0)
    data = bytearray(path.read_bytes())
    data[following.position - frames.TRAILER.size - 1] ^= 0x5A  # the victim's last value byte
    path.write_bytes(bytes(data))

    for consistency in ("transactional", "eventual"):
        with table.reader(consistency=consistency, scan_mode="earliest") as reader, \
                pytest.raises(CorruptRecordError) as raised:
            reader.read_all(idle_timeout_s=0.2)
        message = str(raised.value)
        assert f"position {victim.position}" in message, message
        assert repr(table.topic) in message and "partition 0" in message
        assert "not returned as data" in message
    # even log.foreign-records=skip does not turn a corrupt record into a skipped one
    with table.reader(consistency="transactional", scan_mode="earliest",
                      options={"log.foreign-records": "skip"}) as reader, pytest.raises(CorruptRecordError):
        reader.read_all(idle_timeout_s=0.2)

    report = verify(table)
    assert not report.consistent and report.error is not None
    assert f"position {victim.position}" in report.error
    code, output = _verify_cli(table)
    assert code == 1 and "INCONSISTENT" in output and f"position {victim.position}" in output
