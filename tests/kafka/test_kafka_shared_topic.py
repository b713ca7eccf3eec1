"""Two tables on one Kafka topic: refused at create within a warehouse; across
warehouses (allowed), every reader returns only its own table's rows."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tablelog.errors import OptionError
from tablelog.table import Table
from tablelog.tables import create_table

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def _options(bootstrap: str, topic: str) -> dict[str, str]:
    return {"log.system": "kafka", "kafka.bootstrap.servers": bootstrap, "kafka.topic": topic}


def _table(warehouse: Path, name: str, options: dict[str, str]) -> Table:
    return create_table(str(warehouse), name, SCHEMA, primary_key=["id"], bucket=2, options=options)


def _write(table: Table, ids: range, name: str) -> None:
    with table.writer() as writer:
        writer.write([{"id": i, "name": name} for i in ids])
        writer.commit()


def _read(table: Table, consistency: str) -> tuple[list[Any], int]:
    with table.reader(consistency=consistency, scan_mode="earliest") as reader:
        changes = reader.read_all(idle_timeout_s=1.0)
        return changes, reader.other_tables_skipped


def test_a_second_table_on_the_same_kafka_topic_is_refused_at_create(tmp_path: Path, kafka_bootstrap: str) -> None:
    topic = f"shared-{uuid.uuid4().hex[:8]}"
    _table(tmp_path / "wh", "db.first", _options(kafka_bootstrap, topic))
    with pytest.raises(OptionError, match=f"kafka topic '{topic}' is already the log of table 'db.first'"):
        _table(tmp_path / "wh", "db.second", _options(kafka_bootstrap, topic))


def test_tables_of_two_warehouses_on_one_kafka_topic_read_only_their_own_rows(
    tmp_path: Path, kafka_bootstrap: str,
) -> None:
    options = _options(kafka_bootstrap, f"shared-{uuid.uuid4().hex[:8]}")
    mine = _table(tmp_path / "wh1", "db.t", options)
    theirs = _table(tmp_path / "wh2", "db.t", options)
    _write(mine, range(10), "mine")
    _write(theirs, range(20), "theirs")
    _write(mine, range(10, 15), "mine")

    changes, skipped = _read(mine, "eventual")
    assert {c.row["name"] for c in changes} == {"mine"} and len(changes) == 15
    assert skipped == 20

    changes, _ = _read(mine, "transactional")  # committed tokens are per snapshot: safe already
    assert {c.row["name"] for c in changes} == {"mine"}
    assert sorted(c.row["id"] for c in changes) == list(range(15))

    changes, skipped = _read(theirs, "eventual")
    assert {c.row["name"] for c in changes} == {"theirs"} and len(changes) == 20 and skipped == 15
