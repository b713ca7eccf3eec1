"""A secret given in options never appears in logs, errors, reprs, stored files,
snapshot properties or CLI output."""

import logging
from pathlib import Path
from types import SimpleNamespace

import attrs
import pyarrow as pa
import pytest
from click.testing import CliRunner

import tablelog
from tablelog.cli import cli
from tablelog.hookspecs import hookimpl
from tablelog.logs import discovery
from tablelog.logs.filesystem import FileLog
from tablelog.records import LogConfig
from tablelog.table import internals

SENTINEL = "SENTINEL-s3cr3t-9f2c"


class SecretAwareFileLog:
    """The filesystem log behind a system that takes credentials (like a broker would)."""

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return getattr(FileLog, name)

    @hookimpl
    def open_log(self, config: LogConfig):  # type: ignore[no-untyped-def]
        assert config.options["sasl.password"] == SENTINEL  # the plugin does receive it
        return FileLog.open_log(attrs.evolve(config, options={}))


@pytest.fixture
def secret_table(tmp_path: Path):  # type: ignore[no-untyped-def]
    plugin = SecretAwareFileLog()
    hooks = {name: getattr(FileLog, name) for name in discovery.REQUIRED_HOOKS if name != "open_log"}
    discovery.register_log_system("vault", SimpleNamespace(**hooks, open_log=plugin.open_log))
    options = {"log.system": "vault", "vault.sasl.password": SENTINEL, "vault.user": "ada"}
    table = tablelog.create_table(str(tmp_path / "wh"), "db.s", pa.schema([("id", pa.int64())]),
                                  primary_key=["id"], options=options)
    with table.writer() as writer:
        writer.write([{"id": 1}])
        writer.commit()
    yield table, options
    discovery.unregister_log_system("vault")


def test_secret_is_not_stored_in_any_table_file(secret_table) -> None:  # type: ignore[no-untyped-def]
    table, _ = secret_table
    for path in Path(table.warehouse.path).rglob("*"):
        if path.is_file():
            assert SENTINEL.encode() not in path.read_bytes(), path
    assert "vault.user" in internals(table).files.properties  # non-secret options are stored


def test_secret_is_not_in_snapshot_properties_or_reprs(secret_table) -> None:  # type: ignore[no-untyped-def]
    table, _ = secret_table
    for snapshot in table.snapshots():
        assert SENTINEL not in str(snapshot.properties)
    assert SENTINEL not in repr(table) and SENTINEL not in repr(internals(table).log_config())
    assert SENTINEL not in repr(table.options)


def test_secret_is_not_in_cli_output(secret_table) -> None:  # type: ignore[no-untyped-def]
    table, options = secret_table
    result = CliRunner().invoke(cli, ["describe", "-w", table.warehouse.path, "db.s",
                                      "-o", f"vault.sasl.password={SENTINEL}"])
    assert result.exit_code == 0, result.output
    assert "vault.sasl.password" in result.output and SENTINEL not in result.output


def test_secret_is_not_in_logs_or_errors(secret_table, caplog) -> None:  # type: ignore[no-untyped-def]
    table, options = secret_table
    caplog.set_level(logging.DEBUG)
    with pytest.raises(tablelog.TablelogError) as err:
        tablelog.create_table(table.warehouse.path, "db.s", pa.schema([("id", pa.int64())]), options=options)
    assert SENTINEL not in str(err.value)
    reopened = tablelog.open_table(table.warehouse.path, "db.s", {"vault.sasl.password": SENTINEL})
    with reopened.reader(consistency="transactional", scan_mode="earliest") as reader:
        assert len(reader.read_all(idle_timeout_s=0.1)) == 1
    assert SENTINEL not in caplog.text


def test_a_secret_is_scrubbed_where_it_stands_as_a_value_never_inside_words(caplog, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from tablelog.plugin import SecretScrubber

    caplog.set_level(logging.WARNING)
    monkeypatch.setattr("tablelog.redaction._warned_keys", set())  # warned once per process
    short = SecretScrubber({"sasl.password": "e", "sasl.username": "ada", "sasl.mechanism": "PLAIN"}, "kafka.")
    for readable in ("Connect to ipv4#127.0.0.1:9 failed: Connection refused", "Canada e-mail ready"):
        assert short.scrub(readable) == readable
    assert short.scrub("sasl.password=e; user=ada") == "sasl.password=******; user=******"
    assert short.scrub('Invalid value "e" for "sasl.password"') == 'Invalid value "******" for "sasl.password"'
    assert short.scrub("as e (mechanism PLAIN)") == "as ****** (mechanism ******)"
    # known positions hide whatever value stands there, the configured one or not
    assert short.scrub('{"password": "other one", "token": x1}') == '{"password": "******", "token": ******}'
    assert short.scrub("redis://bob:pw@host:6379/0") == "redis://bob:******@host:6379/0"
    # a long secret is replaced wherever it is, glued to other text too
    assert SecretScrubber({"token": SENTINEL}).scrub(f"x{SENTINEL}y, {SENTINEL}.") == "x******y, ******."
    # a short credential is warned about at open, by its key, once; a user name or a mechanism is not
    SecretScrubber({"sasl.password": "e"}, "kafka.")
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warned) == 1 and "'kafka.sasl.password' holds a secret of fewer than 8 characters" in warned[0]
    assert "'e'" not in warned[0]


def test_a_short_secret_given_twice_is_named_without_garbling_the_key(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["describe", "-w", str(tmp_path), "db.t",
                                      "-o", "vault.password=a", "-o", "vault.password=b"])
    assert result.exit_code == 1
    assert "-o vault.password=****** and -o vault.password=******" in result.output, result.output
