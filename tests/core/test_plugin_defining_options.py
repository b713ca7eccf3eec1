"""A plugin declares which of its options define the table (``OptionSpec(defines_table=True)``):
stored when the table is created (the declared default too), and refused when a table is
opened with a different value, as the core's defining options are, through every entry
point (Python, the CLI's ``-o``, Spark's options), naming the key and both values."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner

from tablelog.cli import cli
from tablelog.errors import OptionError
from tablelog.logs import discovery
from tablelog.logs.filesystem import FileLog
from tablelog.plugin import hookimpl
from tablelog.records import LogConfig, OptionSpec
from tablelog.table import Table, internals
from tablelog.tables import create_table, open_table

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


class LayoutLog:
    """The file log under another name, with an option that shapes its records
    (``layoutlog.layout``, declared defining) and a runtime one."""

    def plugin(self) -> SimpleNamespace:
        hooks = {name: getattr(FileLog, name) for name in discovery.REQUIRED_HOOKS}
        return SimpleNamespace(**{**hooks, "open_log": self.open_log, "option_specs": self.option_specs})

    @hookimpl
    def option_specs(self) -> list[OptionSpec]:
        return [
            OptionSpec("layoutlog.layout", "How records are laid out.", default="v1", defines_table=True),
            OptionSpec("layoutlog.batch-size", "Records per request.", default="500"),
        ]

    @hookimpl
    def open_log(self, config: LogConfig) -> Any:
        return FileLog.open_log(LogConfig(config.system, config.table, config.topic, config.partitions,
                                                 config.auto_register, {}, config.warehouse))


@pytest.fixture
def layoutlog() -> Iterator[None]:
    discovery.register_log_system("layoutlog", LayoutLog().plugin())
    yield
    discovery.unregister_log_system("layoutlog")


@pytest.fixture
def table(tmp_path: Path, layoutlog: None) -> Table:
    table = create_table(str(tmp_path), "db.t", SCHEMA, primary_key=["id"],
                         options={"log.system": "layoutlog", "layoutlog.layout": "v2"})
    with table.writer() as writer:
        writer.write([{"id": 1, "name": "a"}])
        writer.commit()
    return table


REFUSED = r"layoutlog.layout: the table has 'v2', given 'v3'\).*fixed when the table is created"


def test_a_plugin_option_declared_defining_is_refused_when_it_differs_at_open(table: Table) -> None:
    with pytest.raises(OptionError, match=REFUSED):
        open_table(table.warehouse.path, "db.t", {"layoutlog.layout": "v3"})
    assert internals(open_table(table.warehouse.path, "db.t", {"layoutlog.layout": "v2"})).system_options["layoutlog.layout"] == "v2"
    assert open_table(table.warehouse.path, "db.t", {"layoutlog.batch-size": "9"})  # a runtime option may differ
    assert [s.id for s in table.snapshots()] == [1]


def test_a_defining_options_declared_default_is_stored_with_the_table(tmp_path: Path, layoutlog: None) -> None:
    table = create_table(str(tmp_path), "db.d", SCHEMA, primary_key=["id"], options={"log.system": "layoutlog"})
    assert internals(table).files.properties["layoutlog.layout"] == "v1"
    assert "layoutlog.batch-size" not in internals(table).files.properties  # a runtime default follows the plugin
    with pytest.raises(OptionError, match=r"layoutlog.layout: the table has 'v1', given 'v2'"):
        open_table(str(tmp_path), "db.d", {"layoutlog.layout": "v2"})


@pytest.mark.parametrize("command", ["describe", "tail", "verify"])
def test_the_cli_refuses_a_different_plugin_defining_option(table: Table, command: str) -> None:
    result = CliRunner().invoke(cli, [command, "-w", table.warehouse.path, "db.t", "-o", "layoutlog.layout=v3"])
    assert result.exit_code == 1, result.output
    assert "layoutlog.layout: the table has 'v2', given 'v3'" in result.output


def test_the_spark_source_and_sink_refuse_a_different_plugin_defining_option(table: Table) -> None:
    from tablelog.spark.options import SourceOptions
    from tablelog.spark.sink import open_or_create
    from tablelog.spark.source_tasks import NoRows, read_partition

    options = SourceOptions.parse({"warehouse": table.warehouse.path, "table": "db.t", "layoutlog.layout": "v3"})
    with pytest.raises(OptionError, match=REFUSED):
        open_or_create(options, SCHEMA)
    with pytest.raises(OptionError, match=REFUSED):
        list(read_partition(options, NoRows(), table.schema_id))


def test_the_option_listing_marks_the_defining_option(layoutlog: None) -> None:
    result = CliRunner().invoke(cli, ["options", "--markdown", "--log-system", "layoutlog"])
    assert "| `layoutlog.layout` | `v1` |  | How records are laid out. **Defines the table's log**" in result.output
    assert "| `layoutlog.batch-size` | `500` |  | Records per request. |" in result.output
