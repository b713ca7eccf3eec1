"""An option a log system declares secret (``OptionSpec(secret=True)``) is a secret
everywhere the built-in name patterns apply: never stored, redacted in reprs, errors,
``describe`` and CLI output, absent from snapshot properties."""

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import attrs
import pyarrow as pa
import pytest
from click.testing import CliRunner

import tablelog
from tablelog.cli import cli
from tablelog.errors import TablelogError
from tablelog.hookspecs import hookimpl
from tablelog.logs import discovery
from tablelog.logs.filesystem import FileLog
from tablelog.options import REDACTED, is_secret
from tablelog.records import LogConfig, OptionSpec
from tablelog.table import internals

SENTINEL = "SENTINEL-apikey-7d41"
OTHER = "SENTINEL-other-key-2b90"


@hookimpl
def option_specs() -> list[OptionSpec]:
    return [
        OptionSpec("pgx.dsn", "Where the database is.", required=True),
        OptionSpec("pgx.apikey", "API key of the service (by its name, no built-in pattern matches it).",
                   secret=True),
    ]


@hookimpl
def open_log(config: LogConfig):  # type: ignore[no-untyped-def]
    assert config.options["apikey"] == SENTINEL  # the plugin does receive it
    return FileLog.open_log(attrs.evolve(config, options={}))


@pytest.fixture
def pgx(tmp_path: Path) -> Iterator[tuple[tablelog.Table, dict[str, str]]]:
    hooks = {name: getattr(FileLog, name) for name in discovery.REQUIRED_HOOKS if name != "open_log"}
    discovery.register_log_system("pgx", SimpleNamespace(**hooks, open_log=open_log, option_specs=option_specs))
    options = {"log.system": "pgx", "pgx.dsn": "postgresql://db/x", "pgx.apikey": SENTINEL}
    table = tablelog.create_table(str(tmp_path / "wh"), "db.p", pa.schema([("id", pa.int64())]),
                                  primary_key=["id"], options=options)
    with table.writer() as writer:
        writer.write([{"id": 1}])
        writer.commit()
    yield table, options
    discovery.unregister_log_system("pgx")


def test_the_key_is_a_secret_by_its_declaration_alone() -> None:
    # A fresh process: no built-in name pattern makes "pgx.apikey" a secret.
    script = "from tablelog.options import is_secret; assert not is_secret('pgx.apikey')"
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
    discovery.register_log_system("pgx", SimpleNamespace(option_specs=option_specs))
    try:
        discovery.learn_declared_secrets(["pgx.apikey"])
    finally:
        discovery.unregister_log_system("pgx")
    assert is_secret("pgx.apikey") and is_secret("PGX.ApiKey") and not is_secret("pgx.dsn")


def test_a_declared_secret_is_not_stored_in_any_table_file(pgx: tuple[tablelog.Table, dict[str, str]]) -> None:
    table, _ = pgx
    for path in Path(table.warehouse.path).rglob("*"):
        if path.is_file():
            assert SENTINEL.encode() not in path.read_bytes(), path
    assert internals(table).files.properties["pgx.dsn"] == "postgresql://db/x"  # non-secret options are stored
    assert "pgx.apikey" not in internals(table).files.properties


def test_a_declared_secret_is_not_in_snapshot_properties_or_reprs(pgx: tuple[tablelog.Table, dict[str, str]]) -> None:
    table, _ = pgx
    for snapshot in table.snapshots():
        assert SENTINEL not in str(snapshot.properties)
    assert SENTINEL not in repr(table) and SENTINEL not in repr(internals(table).log_config())


def test_a_declared_secret_is_redacted_by_describe(pgx: tuple[tablelog.Table, dict[str, str]]) -> None:
    table, _ = pgx
    result = CliRunner().invoke(cli, ["describe", "-w", table.warehouse.path, "db.p",
                                      "-o", f"pgx.apikey={SENTINEL}"])
    assert result.exit_code == 0, result.output
    assert "pgx.apikey" in result.output and REDACTED in result.output
    assert SENTINEL not in result.output


def test_a_declared_secret_is_not_in_error_messages(pgx: tuple[tablelog.Table, dict[str, str]]) -> None:
    table, options = pgx
    with pytest.raises(TablelogError) as exists:
        tablelog.create_table(table.warehouse.path, "db.p", pa.schema([("id", pa.int64())]), options=options)
    with pytest.raises(TablelogError) as twice:
        tablelog.open_table(table.warehouse.path, "db.p", {"pgx.apikey": SENTINEL, "PGX.APIKEY": OTHER})
    assert "given twice" in str(twice.value)
    for error in (exists.value, twice.value):
        assert SENTINEL not in str(error) and OTHER not in str(error)
    result = CliRunner().invoke(cli, ["describe", "-w", table.warehouse.path, "db.p",
                                      "-o", f"pgx.apikey={SENTINEL}", "-o", f"pgx.apikey={OTHER}"])
    assert result.exit_code == 1 and "given twice" in result.output
    assert SENTINEL not in result.output and OTHER not in result.output


def test_a_table_opened_again_with_the_secret_reads_its_log(pgx: tuple[tablelog.Table, dict[str, str]]) -> None:
    table, _ = pgx
    reopened = tablelog.open_table(table.warehouse.path, "db.p", {"pgx.apikey": SENTINEL})
    with reopened.reader(consistency="transactional", scan_mode="earliest") as reader:
        assert len(reader.read_all(idle_timeout_s=0.1)) == 1
