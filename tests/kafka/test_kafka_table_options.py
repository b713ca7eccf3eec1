"""Table options on Kafka: a reader of a table opened with the brokers of a cluster where its
topic does not exist fails naming the topic and the option (never reads the table files in
its place), and ``kafka.topic`` is declared as the option naming the topic, which defines
the table."""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

from tablelog.errors import MissingTopicError, OptionError
from tablelog.logs.discovery import load_log_system
from tablelog.table import Table
from tablelog.tables import create_table, open_table
from tablelog.testing.kafka_server import tansu_broker

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


@pytest.fixture
def table(tmp_path: Path, kafka_bootstrap: str) -> Table:
    table = create_table(str(tmp_path), f"db.t_{uuid.uuid4().hex[:8]}", SCHEMA, primary_key=["id"], bucket=2,
                         options={"log.system": "kafka", "kafka.bootstrap.servers": kafka_bootstrap,
                                  "kafka.admin-timeout-ms": "5000", "log.fetch-timeout-ms": "2000"})
    with table.writer() as writer:
        writer.write([{"id": i, "name": f"n{i}"} for i in range(20)])
        writer.commit()
    return table


def test_a_reader_pointed_at_a_cluster_without_the_topic_fails_naming_the_topic_and_the_option(
    table: Table, tmp_path: Path
) -> None:
    (tmp_path / "other").mkdir()
    with tansu_broker(tmp_path / "other") as other_cluster:
        misplaced = open_table(table.warehouse.path, table.identifier, {"kafka.bootstrap.servers": other_cluster})
        for consistency in ("transactional", "eventual"):
            with misplaced.reader(consistency=consistency, scan_mode="earliest") as reader, \
                    pytest.raises(MissingTopicError) as raised:
                reader.read_all(idle_timeout_s=0.3)
            message = str(raised.value)
            assert f"its log topic {table.topic!r} does not exist" in message
            assert f"kafka.bootstrap.servers={other_cluster!r}" in message and "'kafka.topic'" in message
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        assert Counter(c.row["id"] for c in reader.read_all(idle_timeout_s=0.3)) == Counter(range(20))


def test_kafka_topic_names_the_topic_and_defines_the_table(table: Table) -> None:
    (spec,) = [s for s in load_log_system("kafka").option_specs() if s.key == "kafka.topic"]
    assert spec.names_topic and spec.defines_table
    with pytest.raises(OptionError, match=rf"kafka.topic: the table has {table.topic!r}, given 'wrong'"):
        open_table(table.warehouse.path, table.identifier, {"kafka.topic": "wrong"})
