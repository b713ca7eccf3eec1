"""A sentinel secret given in the options of a real Kafka or Pulsar table appears
nowhere: not in log records or anything written to stdout/stderr (librdkafka and
the Pulsar C++ client included), exceptions with their tracebacks, reprs, table
files, snapshot properties, or the output of `tablelog describe | tail | verify |
plugins`."""

from __future__ import annotations

import logging
import traceback
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import tablelog
from tablelog.cli import cli
from tablelog.errors import TablelogError
from tablelog.table import internals
from tablelog.testing.scenarios import SCHEMA, rows

SENTINEL = "SENTINEL-zq9-s3cr3t"


def _secret_options(system: str, broker: Any) -> tuple[dict[str, str], dict[str, str]]:
    """(options with the secret, the secret options alone) for a table on ``broker``."""
    if system == "kafka":
        secrets = {"kafka.sasl.password": SENTINEL, "kafka.ssl.key.password": SENTINEL}
        return {"log.system": "kafka", "kafka.bootstrap.servers": broker.bootstrap,
                "kafka.sasl.username": "ada", "kafka.admin-timeout-ms": "3000",
                "log.flush-timeout-ms": "3000", **secrets}, secrets
    secrets = {"pulsar.token": SENTINEL}
    return {"log.system": "pulsar", "pulsar.service-url": broker.service_url,
            "pulsar.operation-timeout-seconds": "3", "log.flush-timeout-ms": "3000", **secrets}, secrets


def _unreachable(system: str, options: dict[str, str]) -> dict[str, str]:
    if system == "kafka":
        return {**options, "kafka.bootstrap.servers": "127.0.0.1:9"}
    return {**options, "pulsar.service-url": "pulsar://127.0.0.1:9"}


def _exception_text(err: BaseException) -> str:
    return "".join(traceback.format_exception(type(err), err, err.__traceback__)) + repr(err)


@pytest.fixture(params=["kafka", "pulsar"])
def system_and_broker(request: pytest.FixtureRequest) -> tuple[str, Any]:
    fixture = "tansu" if request.param == "kafka" else "pulsar_broker"
    return request.param, request.getfixturevalue(fixture)


def test_sentinel_secret_never_appears_anywhere_with_a_real_broker(
    tmp_path: Path, system_and_broker: tuple[str, Any], caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    system, broker = system_and_broker
    caplog.set_level(logging.DEBUG)
    options, secrets = _secret_options(system, broker)
    warehouse = str(tmp_path / "wh")
    seen: list[str] = []  # every text that must not hold the secret

    table = tablelog.create_table(warehouse, "db.secret", SCHEMA, primary_key=["id"], bucket=2,
                                  options=options)
    with table.writer("w") as writer:
        writer.write(rows(20))
        writer.commit()
    reopened = tablelog.open_table(warehouse, "db.secret", secrets)
    with reopened.reader(consistency="transactional", scan_mode="earliest") as reader:
        assert len(reader.read_all()) == 20
        seen += [repr(reader.position), reader.position.to_json()]
        with internals(reopened).open_log() as log:
            seen += [repr(log), repr(log.connection), str(log.connection)]
    seen += [repr(table), str(table), repr(table.options), repr(internals(table).log_config()), str(internals(table).log_config()),
             repr(reopened), repr(internals(reopened).log_config())]
    seen += [str(s.properties) for s in reopened.snapshots()]
    seen += [str(internals(table).files.properties)]

    # errors, with their tracebacks and chained causes
    failures: list[BaseException] = []
    for action in (
        lambda: tablelog.create_table(warehouse, "db.secret", SCHEMA, options=options),  # exists
        lambda: tablelog.create_table(warehouse, "db.other", SCHEMA, options={**options, "log.consistency": "x"}),
        lambda: tablelog.create_table(warehouse, "db.other", SCHEMA, options={**options, "log.sytem": "x"}),
        lambda: tablelog.open_table(warehouse, "db.secret", secrets).reader(scan_mode="sideways"),
        lambda: _write_unreachable(warehouse, system, secrets, options),
    ):
        with pytest.raises(TablelogError) as raised:
            action()
        failures.append(raised.value)
    seen += [_exception_text(err) for err in failures]

    # the CLI, with the secret given as -o options; the last one fails (unreachable broker)
    runner = CliRunner()
    args = [arg for key, value in secrets.items() for arg in ("-o", f"{key}={value}")]
    down = _unreachable(system, {})
    for command, code in (
        (["describe", "-w", warehouse, "db.secret", "--tokens", *args], 0),
        (["tail", "-w", warehouse, "db.secret", "--scan-mode", "earliest", "--idle-timeout", "0.5", *args], 0),
        (["verify", "-w", warehouse, "db.secret", *args], 0),
        (["plugins"], 0),
        (["tail", "-w", warehouse, "db.secret", "--consistency", "eventual", "--scan-mode", "earliest",
          *args, *[a for key, value in down.items() for a in ("-o", f"{key}={value}")]], 3),  # 3: log unreachable
    ):
        result = runner.invoke(cli, command)
        assert result.exit_code == code, result.output
        seen.append(result.output + repr(result.exception))
        if command[0] == "describe":
            assert all(key in result.output for key in secrets)  # the key is shown ...
            assert "******" in result.output  # ... with its value redacted
    assert "error:" in seen[-1]

    # stored files, log records and everything written to the terminal
    for path in Path(warehouse).rglob("*"):
        if path.is_file():
            assert SENTINEL.encode() not in path.read_bytes(), path
    out, err = capfd.readouterr()
    seen += [out, err, caplog.text]
    seen += [r.getMessage() + str(r.args) for r in caplog.records]
    for text in seen:
        assert SENTINEL not in text, text[:3000]


def _write_unreachable(warehouse: str, system: str, secrets: dict[str, str], options: dict[str, str]) -> None:
    table = tablelog.open_table(warehouse, "db.secret", {**_unreachable(system, options), **secrets})
    with table.writer("w2") as writer:
        writer.write(rows(5))
        writer.commit()
