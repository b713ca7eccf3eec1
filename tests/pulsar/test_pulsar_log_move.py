"""A table moved from Kafka to Pulsar (``tablelog alter --set log.system=pulsar -o
pulsar.service-url=...``) while a transactional and an eventual reader follow it, on the
real brokers: each stops at the move with ``LogMovedError`` and resumes exactly on the table
opened again; every change counted once (docs/attaching.md)."""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner

import tablelog
from tablelog.cli import cli
from tablelog.errors import LogMovedError
from tablelog.table import Table
from tablelog.testing.scenarios import ids, replay, table_state

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def write(table: Table, data: list[dict[str, Any]]) -> None:
    with table.writer() as writer:
        writer.write(data)
        writer.commit()


def rows(count: int, start: int = 0, tag: str = "v1") -> list[dict[str, Any]]:
    return [{"id": i, "name": f"{tag}-{i}"} for i in range(start, start + count)]


def test_a_table_moved_from_kafka_to_pulsar_stops_its_readers_and_they_resume_exactly(
    tmp_path: Path, kafka_bootstrap: str, pulsar_service_url: str
) -> None:
    identifier = f"db.t_{uuid.uuid4().hex[:10]}"
    table = tablelog.create_table(str(tmp_path), identifier, SCHEMA, primary_key=["id"], bucket=2,
                                  options={"log.system": "kafka", "kafka.bootstrap.servers": kafka_bootstrap})
    write(table, rows(20))
    readers = {c: table.reader(consistency=c, scan_mode="earliest") for c in ("transactional", "eventual")}
    returned = {c: reader.read_all(idle_timeout_s=0.5) for c, reader in readers.items()}
    result = CliRunner().invoke(cli, [
        "alter", "--warehouse", str(tmp_path), identifier, "--set", "log.system=pulsar",
        "-o", f"pulsar.service-url={pulsar_service_url}",
    ], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert f"log: pulsar topic '{identifier}'" in result.output
    moved = tablelog.open_table(str(tmp_path), identifier)  # the service URL is stored with the table
    write(moved, rows(10, start=20))
    write(moved, rows(5, tag="v2"))
    for consistency, reader in readers.items():
        changes = returned[consistency]
        with reader, pytest.raises(LogMovedError, match="from kafka topic .* to pulsar topic") as stopped:
            for _ in range(40):  # an eventual reader looks once a second while idle
                changes += reader.poll(timeout_s=0.3)
        assert stopped.value.position is not None
        with tablelog.open_table(str(tmp_path), identifier).reader(stopped.value.position) as resumed:
            changes += resumed.read_all(idle_timeout_s=1.0)
        assert ids(changes) == Counter(range(30)) + Counter(range(5)), f"{consistency}: each change once"
        assert replay(changes) == table_state(moved)
