"""A plugin's declared options (``option_specs``): listed by ``tablelog options`` per log
system, and their defaults handed to the plugin when the user gives none."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner

from tablelog.cli import cli
from tablelog.logs import discovery
from tablelog.logs.filesystem import FileLog
from tablelog.plugin import hookimpl
from tablelog.records import LogConfig, OptionSpec
from tablelog.table import internals
from tablelog.tables import create_table, open_table


class DefaultsFileLog:
    """The filesystem log under another name, declaring options with defaults and
    recording the options ``open_log`` receives."""

    def __init__(self) -> None:
        self.received: list[dict[str, str]] = []

    def plugin(self) -> SimpleNamespace:
        hooks = {name: getattr(FileLog, name) for name in discovery.REQUIRED_HOOKS}
        return SimpleNamespace(**{**hooks, "open_log": self.open_log, "option_specs": self.option_specs})

    @hookimpl
    def option_specs(self) -> list[OptionSpec]:
        return [
            OptionSpec("deflog.endpoint", "Where the log lives.", required=True),
            OptionSpec("deflog.batch-size", "Records per request.", default="500"),
            OptionSpec("deflog.api-key", "Key of the log's API.", secret=True),
        ]

    @hookimpl
    def open_log(self, config: LogConfig) -> Any:
        self.received.append(dict(config.options))
        return FileLog.open_log(LogConfig(config.system, config.table, config.topic, config.partitions,
                                                 config.auto_register, {}, config.warehouse))


@pytest.fixture
def deflog() -> Iterator[DefaultsFileLog]:
    log = DefaultsFileLog()
    discovery.register_log_system("deflog", log.plugin())
    yield log
    discovery.unregister_log_system("deflog")


def options_output(*args: str) -> str:
    result = CliRunner().invoke(cli, ["options", *args], terminal_width=200)
    assert result.exit_code == 0, result.output
    return result.output


def test_options_lists_every_installed_log_systems_options_in_the_terminal(deflog: DefaultsFileLog) -> None:
    output = options_output()
    assert "log.system = kafka" in output and "kafka.bootstrap.servers" in output
    assert "pulsar.batching-max-messages" in output and "filesystem.path" in output
    line = next(line for line in output.splitlines() if "deflog.batch-size" in line)
    assert "500" in line  # the declared default is shown
    assert "required" in next(line for line in output.splitlines() if "deflog.endpoint" in line)
    assert "yes" in next(line for line in output.splitlines() if "deflog.api-key" in line)


def test_options_markdown_has_a_table_per_log_system_with_defaults_and_secrets(deflog: DefaultsFileLog) -> None:
    output = options_output("--markdown")
    assert output.startswith("| key | default | meaning |")  # the table options come first
    section = output.split("### `log.system = deflog`")[1].split("### ")[0]
    assert "| `deflog.endpoint` | required |  | Where the log lives. |" in section
    assert "| `deflog.batch-size` | `500` |  | Records per request. |" in section
    assert "| `deflog.api-key` | — | yes | Key of the log's API. |" in section
    assert "### `log.system = kafka`" in output and "`kafka.linger.ms`" in output


def test_options_of_chosen_log_systems_only(deflog: DefaultsFileLog) -> None:
    output = options_output("--markdown", "--log-system", "deflog")
    assert "### `log.system = deflog`" in output and "log.system = kafka" not in output


def test_options_of_a_log_system_that_is_not_installed_is_an_error_naming_the_installed_ones() -> None:
    result = CliRunner().invoke(cli, ["options", "--log-system", "nats"])
    assert result.exit_code == 2
    assert "'nats': not installed" in result.output and "filesystem" in result.output


def test_a_declared_default_reaches_the_plugin_when_the_user_gives_none(
    tmp_path: Path, deflog: DefaultsFileLog
) -> None:
    table = create_table(str(tmp_path / "wh"), "db.t", pa.schema([("id", pa.int64())]), primary_key=["id"],
                         options={"log.system": "deflog", "deflog.endpoint": "log://here"})
    internals(table).open_log().close()
    assert deflog.received[-1] == {"endpoint": "log://here", "batch-size": "500"}
    # Not stored with the table: a later release's default applies to old tables too.
    assert "deflog.batch-size" not in internals(table).files.properties


def test_an_option_given_by_the_user_wins_over_the_declared_default(
    tmp_path: Path, deflog: DefaultsFileLog
) -> None:
    create_table(str(tmp_path / "wh"), "db.t", pa.schema([("id", pa.int64())]), primary_key=["id"],
                 options={"log.system": "deflog", "deflog.endpoint": "log://here", "deflog.batch-size": "20"})
    internals(open_table(str(tmp_path / "wh"), "db.t")).open_log().close()
    assert deflog.received[-1]["batch-size"] == "20"
