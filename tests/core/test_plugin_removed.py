"""A table option naming a log system that is not installed fails with the discovery
error: what was asked for, what is installed, what to install.

The example plugin examples/redis-streams provides ``redis``; this suite's tox env
(`tests`) does not install it, its own env (`plugin-example`) does and checks the
other side: that `tablelog plugins` lists it.
"""

from __future__ import annotations

import importlib.metadata as metadata
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

import tablelog
from tablelog.cli import cli
from tablelog.errors import PluginNotFoundError
from tablelog.logs.discovery import ENTRY_POINT_GROUP


@pytest.fixture(autouse=True)
def _redis_example_is_not_installed() -> None:
    installed = [ep.value for ep in metadata.entry_points(group=ENTRY_POINT_GROUP) if ep.name == "redis"]
    assert not installed, f"these checks need an environment without the redis example (tox -e tests); found {installed}"

SCHEMA = pa.schema([("id", pa.int64())])


def test_create_table_with_an_uninstalled_log_system_names_it_and_the_installed_ones(tmp_path: Path) -> None:
    with pytest.raises(PluginNotFoundError) as raised:
        tablelog.create_table(str(tmp_path), "db.t", SCHEMA, primary_key=["id"], options={"log.system": "redis"})
    message = str(raised.value)
    assert message.startswith("unknown log.system 'redis'; installed log systems: ")
    assert "filesystem" in message and "install a package that provides the 'redis' log system" in message
    assert not (tmp_path / "db.db").exists()  # nothing was created


def test_the_cli_reports_it_in_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["create", "--warehouse", str(tmp_path), "db.t", "--schema", "id bigint",
                                      "-k", "id", "-o", "log.system=redis"])
    assert result.exit_code == 1
    assert "unknown log.system 'redis'; installed log systems: " in result.output
    assert "Traceback" not in result.output


def test_tablelog_plugins_does_not_list_it() -> None:
    result = CliRunner().invoke(cli, ["plugins"], terminal_width=200)
    assert result.exit_code == 0
    assert "filesystem" in result.output and " redis " not in result.output


def test_the_discovery_error_wins_over_the_missing_plugins_own_options(tmp_path: Path) -> None:
    with pytest.raises(PluginNotFoundError, match="unknown log.system 'redis'"):
        tablelog.create_table(str(tmp_path), "db.t", SCHEMA, primary_key=["id"],
                              options={"log.system": "redis", "redis.url": "redis://127.0.0.1:6379/0"})
