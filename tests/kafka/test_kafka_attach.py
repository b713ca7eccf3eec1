"""A Kafka log attached to a table pypaimon alone created and filled (``tablelog alter db.t
--set log.system=kafka -o kafka.bootstrap.servers=...``), on the real broker: the topic is
created, later commits produce into it, hybrid readers have no gap or overlap, a consumer
that knows nothing of tablelog sees exactly the changes after the attach; then the table
moves to the file log while readers run. Every change is counted on both sides."""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner
from confluent_kafka.admin import AdminClient
from kafka import KafkaConsumer, TopicPartition

import tablelog
from tablelog import SetOption
from tablelog.cli import cli
from tablelog.errors import LogMovedError
from tablelog.store import Warehouse, commit_rows, create_paimon_table
from tablelog.table import Table
from tablelog.testing.scenarios import ids, replay, table_state

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string())])


def rows(count: int, start: int = 0, tag: str = "v1") -> list[dict[str, Any]]:
    return [{"id": i, "name": f"{tag}-{i}"} for i in range(start, start + count)]


def paimon_alone(warehouse: Path, identifier: str, *batches: list[dict[str, Any]]) -> None:
    wh = Warehouse(str(warehouse))
    create_paimon_table(wh, identifier, SCHEMA, ["id"], bucket=2)
    for batch in batches:
        commit_rows(wh, identifier, batch)


def write(table: Table, data: list[dict[str, Any]]) -> None:
    with table.writer() as writer:
        writer.write(data)
        writer.commit()


def raw_records(bootstrap: str, topic: str, partitions: int) -> int:
    """How many records the topic holds, read by a consumer that knows nothing of tablelog."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None,
                             consumer_timeout_ms=3_000)
    assigned = [TopicPartition(topic, p) for p in range(partitions)]
    consumer.assign(assigned)
    for tp in assigned:
        consumer.seek(tp, 0)
    count = sum(1 for _ in consumer)
    consumer.close()
    return count


@pytest.fixture
def identifier() -> str:
    return f"db.t_{uuid.uuid4().hex[:10]}"


def test_a_kafka_log_attached_to_a_table_pypaimon_alone_filled_carries_every_later_change_once(
    tmp_path: Path, kafka_bootstrap: str, identifier: str
) -> None:
    paimon_alone(tmp_path, identifier, rows(40), rows(10, tag="v2"))
    result = CliRunner().invoke(cli, [
        "alter", "--warehouse", str(tmp_path), identifier, "--set", "log.system=kafka",
        "-o", f"kafka.bootstrap.servers={kafka_bootstrap}",
    ], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    topic = identifier
    metadata = AdminClient({"bootstrap.servers": kafka_bootstrap}).list_topics(topic, timeout=10)
    assert len(metadata.topics[topic].partitions) == 2, "the alter created the topic, a partition per bucket"
    table = tablelog.open_table(str(tmp_path), identifier)  # the address is stored with the table
    hybrid = [table.reader(consistency=c) for c in ("transactional", "eventual")]
    for reader in hybrid:
        assert ids(reader.poll(max_records=1000)) == Counter(range(40)), "the rows up to the attach"
    write(table, rows(30, start=40))
    write(table, rows(10, start=20, tag="v3"))
    after = Counter(range(40, 70)) + Counter(range(20, 30))
    for reader in hybrid:
        with reader:
            assert ids(reader.read_all(idle_timeout_s=1.0)) == after, "then each later change once"
    assert raw_records(kafka_bootstrap, topic, 2) == sum(after.values()), "nothing from before the attach"
    state = table_state(table)
    assert len(state) == 70 and state[5]["name"] == "v2-5" and state[25]["name"] == "v3-25"


def test_a_transactional_reader_from_earliest_gets_the_changes_before_the_kafka_attach_from_the_table_files(
    tmp_path: Path, kafka_bootstrap: str, identifier: str
) -> None:
    paimon_alone(tmp_path, identifier, rows(40), rows(10, tag="v2"))
    table = tablelog.open_table(str(tmp_path), identifier, {"kafka.bootstrap.servers": kafka_bootstrap})
    table.alter(SetOption("log.system", "kafka"))
    write(table, rows(30, start=40))
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        changes = reader.read_all(idle_timeout_s=1.0)
    assert ids(changes) == Counter(range(70)) + Counter(range(10)), "the files' changes, then the log's, each once"
    assert replay(changes) == table_state(table)


def test_a_table_moved_from_kafka_to_the_file_log_stops_its_readers_and_they_resume_exactly(
    tmp_path: Path, kafka_bootstrap: str, identifier: str
) -> None:
    table = tablelog.create_table(str(tmp_path), identifier, SCHEMA, primary_key=["id"], bucket=2,
                                  options={"log.system": "kafka", "kafka.bootstrap.servers": kafka_bootstrap})
    write(table, rows(20))
    readers = {c: table.reader(consistency=c, scan_mode="earliest") for c in ("transactional", "eventual")}
    returned = {c: reader.read_all(idle_timeout_s=0.5) for c, reader in readers.items()}
    moved = tablelog.open_table(str(tmp_path), identifier)
    moved.alter(SetOption("log.system", "filesystem"))
    write(moved, rows(10, start=20))
    write(moved, rows(5, tag="v2"))
    for consistency, reader in readers.items():
        changes = returned[consistency]
        with reader, pytest.raises(LogMovedError, match="from kafka topic .* to filesystem topic") as stopped:
            for _ in range(40):  # an eventual reader looks once a second while idle
                changes += reader.poll(timeout_s=0.3)
        assert stopped.value.position is not None
        with tablelog.open_table(str(tmp_path), identifier).reader(stopped.value.position) as resumed:
            changes += resumed.read_all(idle_timeout_s=0.5)
        assert ids(changes) == Counter(range(30)) + Counter(range(5)), f"{consistency}: each change once"
        assert replay(changes) == table_state(moved)
    assert raw_records(kafka_bootstrap, identifier, 2) == 20, "the Kafka topic got nothing after the move"
