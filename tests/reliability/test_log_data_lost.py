"""The log loses records that a committed snapshot references: a Kafka broker
restarted on memory storage (its topic created again), a deleted and recreated topic, a
filesystem log partition file cut short. Transactional readers read those snapshots' changes from
the table files instead, each once; read from the log alone (``changes_from_table=False``)
they raise LogDataLostError naming table, topic, partition and the missing positions
instead of skipping them; ``verify`` (API and CLI), which compares the log with the
table, reports it and exits 1."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from confluent_kafka.admin import AdminClient

import tablelog
from tablelog.cli import cli
from tablelog.commit import LogCommitRecord
from tablelog.errors import LogDataLostError, MissingTopicError
from tablelog.logs.filesystem.topic import partition_file_name
from tablelog.table import internals
from tablelog.testing.scenarios import SCHEMA, ids, read_transactional, rows
from tablelog.verify import verify


def _populate(table: tablelog.Table, count: int = 100) -> None:
    with table.writer("w") as writer:
        writer.write(rows(count))
        writer.commit()
    assert ids(read_transactional(table)) == Counter(range(count))


def _committed_range(table: tablelog.Table, partition: int) -> tuple[int, int]:
    record = LogCommitRecord.from_properties(internals(table).files.snapshot(1).properties)  # type: ignore[union-attr]
    assert record is not None
    ranges = record.ranges_by_partition()[partition]
    return min(r.first for r in ranges), max(r.last for r in ranges)


def _assert_loss_is_reported(table: tablelog.Table, options: dict[str, str], partitions: set[int]) -> None:
    # Readers are never stranded: the table files hold the snapshot's changes.
    assert ids(read_transactional(table)) == Counter(range(100))
    with pytest.raises(LogDataLostError) as raised:
        read_transactional(table, changes_from_table=False)
    err = raised.value
    message = str(err)
    assert err.table == table.identifier and repr(table.identifier) in message
    assert err.topic == table.topic and repr(table.topic) in message
    assert err.partition in partitions and f"partition {err.partition}" in message
    first, last = _committed_range(table, err.partition)
    assert first <= err.first <= err.last <= last, (err.first, err.last, first, last)
    assert f"positions {err.first}..{err.last}" in message

    report = verify(table)
    assert not report.consistent and report.error is not None and "log data lost" in report.error

    args = ["verify", "-w", table.warehouse.path, table.identifier]
    for key, value in options.items():
        if key.startswith(("kafka.", "pulsar.")):
            args += ["-o", f"{key}={value}"]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 1, result.output
    assert "INCONSISTENT" in result.output and "log data lost" in result.output
    assert table.topic in result.output and f"partition {err.partition}" in result.output


def _kafka_options(bootstrap: str) -> dict[str, str]:
    return {"log.system": "kafka", "kafka.bootstrap.servers": bootstrap,
            "kafka.admin-timeout-ms": "5000", "log.fetch-timeout-ms": "3000"}


def test_kafka_broker_restarted_on_memory_storage_is_reported_as_lost_data(
    tmp_path, tansu  # type: ignore[no-untyped-def]
) -> None:
    options = _kafka_options(tansu.bootstrap)
    table = tablelog.create_table(str(tmp_path), "db.amnesia", SCHEMA, primary_key=["id"], bucket=2,
                                  options=options)
    _populate(table)
    tansu.restart()  # memory storage: every topic and record is gone
    # A missing topic looks like a log option given wrong: readers say so, and do not read
    # the table files in its place.
    with pytest.raises(MissingTopicError, match="its log topic 'db.amnesia' does not exist"):
        read_transactional(table)
    with internals(table).open_log() as log:  # as the table's next write does
        log.ensure_topic()
    _assert_loss_is_reported(table, options, {0, 1})


def test_kafka_topic_deleted_and_recreated_is_reported_as_lost_data(
    tmp_path, tansu  # type: ignore[no-untyped-def]
) -> None:
    options = _kafka_options(tansu.bootstrap)
    table = tablelog.create_table(str(tmp_path), "db.recreated", SCHEMA, primary_key=["id"], bucket=2,
                                  options=options)
    _populate(table)
    admin = AdminClient({"bootstrap.servers": tansu.bootstrap})
    admin.delete_topics([table.topic])[table.topic].result(10)
    with internals(table).open_log() as log:  # an empty topic of the same name, as an operator might recreate it
        log.ensure_topic()
    _assert_loss_is_reported(table, options, {0, 1})


@pytest.mark.parametrize("cut", ["empty", "half", "last-byte"])
def test_filesystem_partition_file_cut_short_is_reported_as_lost_data(tmp_path, cut: str) -> None:  # type: ignore[no-untyped-def]
    options = {"log.system": "filesystem", "log.fetch-timeout-ms": "2000"}
    table = tablelog.create_table(str(tmp_path), "db.truncated", SCHEMA, primary_key=["id"], bucket=2,
                                  options=options)
    _populate(table)
    path = Path(table.warehouse.path) / ".tablelog" / "log" / table.topic / partition_file_name(1)
    size = path.stat().st_size
    os.truncate(path, {"empty": 0, "half": size // 2, "last-byte": size - 1}[cut])
    _assert_loss_is_reported(table, options, {1})
