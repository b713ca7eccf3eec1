"""A plugin option that names where a topic's records are stored (a database plugin's
``postgres.table``) declared with ``OptionSpec(names_topic=True)``: the core resolves the
table's topic from it and gives the projection stream its own storage (the option's value
with ``.projection``), so a table with ``log.arrow.projection`` works on such a plugin.
Declarations the core could not honour are refused when the plugin loads."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest

from tablelog.errors import OptionError, PluginUnavailableError, TopicError
from tablelog.logs import discovery
from tablelog.logs.filesystem import FileLog
from tablelog.plugin import hookimpl
from tablelog.records import LogConfig, OptionSpec
from tablelog.table import internals
from tablelog.tables import create_table, open_table

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("note", pa.string())])


class StorageNamedLog:
    """The file log as a database plugin is built: option ``storelog.table`` names the
    storage of a topic's records (here, the file log's topic directory; default: the topic
    itself), and the storage remembers the topic it holds, refusing another one."""

    def __init__(self, declared: list[OptionSpec]) -> None:
        self.declared = declared
        self.topics: dict[int, str] = {}  # connection -> the topic it was opened for

    def plugin(self) -> SimpleNamespace:
        hooks = {name: getattr(FileLog, name) for name in discovery.REQUIRED_HOOKS}
        return SimpleNamespace(**{**hooks, "open_log": self.open_log, "ensure_topic": self.ensure_topic,
                                  "option_specs": self.option_specs})

    @hookimpl
    def option_specs(self) -> list[OptionSpec]:
        return self.declared

    @hookimpl
    def open_log(self, config: LogConfig) -> Any:
        storage = config.options.get("table") or config.topic
        connection = FileLog.open_log(LogConfig(config.system, config.table, storage, config.partitions,
                                                       config.auto_register, {}, config.warehouse))
        self.topics[id(connection)] = config.topic
        return connection

    @hookimpl
    def ensure_topic(self, connection: Any) -> int:
        count = FileLog.ensure_topic(connection)
        marker = Path(connection.directory) / "holds-topic.json"
        topic = self.topics[id(connection)]
        if not marker.exists():
            marker.write_text(json.dumps(topic))
        elif (held := json.loads(marker.read_text())) != topic:
            raise TopicError(f"storage {connection.topic!r} holds topic {held!r}: give {topic!r} storage of its own",
                             topic=topic)
        return count


NAMES_TOPIC = OptionSpec("storelog.table", "The storage of the topic's records.", names_topic=True)


@pytest.fixture
def storelog() -> Iterator[StorageNamedLog]:
    log = StorageNamedLog([NAMES_TOPIC])
    discovery.register_log_system("storelog", log.plugin())
    yield log
    discovery.unregister_log_system("storelog")


def test_a_projection_stream_gets_storage_of_its_own_from_a_plugin_option_naming_the_storage(
    tmp_path: Path, storelog: StorageNamedLog
) -> None:
    table = create_table(str(tmp_path), "db.orders", SCHEMA, primary_key=["id"], bucket=2, options={
        "log.system": "storelog", "storelog.table": "orders_log", "log.format": "arrow",
        "log.arrow.projection": "name"})
    assert table.topic == "orders_log"
    assert internals(table).projection_log_config().topic == "orders_log.projection"
    assert internals(table).projection_log_config().options["table"] == "orders_log.projection"
    with table.writer() as writer:
        writer.write([{"id": i, "name": f"n{i}", "note": "x" * 50} for i in range(40)])
        writer.commit()
    log_root = tmp_path / ".tablelog" / "log"
    assert {p.name for p in log_root.iterdir()} == {"orders_log", "orders_log.projection"}
    with table.reader(consistency="transactional", scan_mode="earliest", columns=["name"]) as reader:
        projected = reader.read_all(idle_timeout_s=0.3)
    with table.reader(consistency="eventual", scan_mode="earliest") as reader:  # every record of the topic
        whole = reader.read_all(idle_timeout_s=0.3)
    assert Counter(c.row["id"] for c in projected) == Counter(range(40))
    assert Counter(c.row["id"] for c in whole) == Counter(range(40))
    assert all(c.row["note"] == "x" * 50 for c in whole)


def test_the_option_naming_the_storage_defines_the_table(tmp_path: Path, storelog: StorageNamedLog) -> None:
    create_table(str(tmp_path), "db.orders", SCHEMA, primary_key=["id"],
                 options={"log.system": "storelog", "storelog.table": "orders_log"})
    with pytest.raises(OptionError, match=r"storelog.table: the table has 'orders_log', given 'other_log'"):
        open_table(str(tmp_path), "db.orders", {"storelog.table": "other_log"})
    assert open_table(str(tmp_path), "db.orders", {"storelog.table": "orders_log"}).topic == "orders_log"


@pytest.mark.parametrize(("declared", "refusal"), [
    ([NAMES_TOPIC, OptionSpec("storelog.stream", "Another.", names_topic=True)],
     "'storelog.stream' as naming the topic, as well as 'storelog.table'"),
    ([OptionSpec("storelog.table", "With a default.", names_topic=True, default="shared")],
     "'storelog.table' as naming the topic, with a default"),
    ([OptionSpec("storelog.table", "Not defining.", names_topic=True, defines_table=False)],
     "'storelog.table' as naming the topic but not defining the table"),
    ([OptionSpec("storelog.api-token", "A secret.", defines_table=True)],
     "'storelog.api-token' as defining the table, but it is a secret"),
])
def test_a_declaration_the_core_cannot_honour_is_refused_when_the_plugin_loads(
    declared: list[OptionSpec], refusal: str
) -> None:
    discovery.register_log_system("storelog", StorageNamedLog(declared).plugin())
    try:
        with pytest.raises(PluginUnavailableError, match=f"log system 'storelog' declares option {refusal}"):
            discovery.load_log_system("storelog")
    finally:
        discovery.unregister_log_system("storelog")
