"""Kafka errors that say what to do, against real brokers (Tansu) and real librdkafka errors:
an unreachable broker, a failed SASL authentication, a record too large; and a terminal
that shows no client log lines unless asked (`tablelog -v`)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import AdminClient

import tablelog
from tablelog.errors import LogUnavailableError, ProduceError
from tablelog.logs.discovery import load_log_system
from tablelog.records import LogConfig
from tablelog.redaction import REDACTED
from tablelog.table import internals
from tablelog.testing.kafka_server import tansu_binary
from tablelog.testing.processes import die_with_parent, free_port
from tablelog_kafka.config import parse_settings
from tablelog_kafka.failures import advice

CLI = [sys.executable, "-c", "from tablelog.cli import main; main()"]
PASSWORD = "SENTINEL-pw-77aa"
SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def dead_address() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"  # bound, never listening: refused


def tablelog_cli(*args: str, timeout_s: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout_s, env=os.environ.copy())


def start_tansu(workdir: Path, *extra: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    with open(workdir / f"tansu-{port}.log", "wb") as log:
        process = subprocess.Popen(
            [str(tansu_binary()), "broker", "--listener-url", url, "--advertised-listener-url", url,
             "--storage-engine", "memory://tansu/", *extra],
            cwd=workdir, stdout=log, stderr=subprocess.STDOUT, preexec_fn=die_with_parent,
        )
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process, f"127.0.0.1:{port}"
        except OSError:
            assert process.poll() is None and time.monotonic() < deadline, "tansu did not start"
            time.sleep(0.1)


@pytest.fixture
def own_broker(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """A broker of this test's own, which the test may kill."""
    process, address = start_tansu(tmp_path)
    admin = AdminClient({"bootstrap.servers": address})
    admin.list_topics(timeout=30)
    try:
        yield process, address
    finally:
        process.kill()
        process.wait(timeout=10)


@pytest.fixture(scope="module")
def authenticating_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Tansu with `--authentication`: every client must pass SASL (it knows no user)."""
    process, address = start_tansu(tmp_path_factory.mktemp("tansu-auth"), "--authentication")
    try:
        yield address
    finally:
        process.kill()
        process.wait(timeout=10)


def test_an_unreachable_broker_fails_within_seconds_naming_the_address_the_wait_and_the_option(
    tmp_path: Path,
) -> None:
    dead = dead_address()
    base = ["create", "-w", str(tmp_path / "wh"), "db.t", "--schema", "id bigint", "-k", "id",
            "-o", "log.system=kafka", "-o", f"kafka.bootstrap.servers={dead}"]
    began = time.monotonic()
    result = tablelog_cli(*base)
    assert time.monotonic() - began < 20  # 5 s of waiting, the rest is starting Python
    assert result.returncode == 3, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr  # no librdkafka log lines on the terminal
    assert f"cannot reach the Kafka brokers at {dead}" in lines[0] and "within 5.0 s" in lines[0]
    assert "Connection refused" in lines[0] and "kafka.socket.connection.setup.timeout.ms=5000" in lines[0]
    assert not (tmp_path / "wh" / "db.db" / "t").exists()  # nothing was created

    result = tablelog_cli(*base, "-o", "kafka.socket.connection.setup.timeout.ms=1500")
    assert result.returncode == 3 and "within 1.5 s" in result.stderr, result.stderr


def test_verbose_shows_the_client_log_lines_that_are_hidden_by_default(tmp_path: Path) -> None:
    args = ["create", "-w", str(tmp_path / "wh"), "db.t", "--schema", "id bigint", "-o", "log.system=kafka",
            "-o", f"kafka.bootstrap.servers={dead_address()}", "-o", "kafka.socket.connection.setup.timeout.ms=1000"]
    verbose = tablelog_cli("-v", *args)
    assert verbose.returncode == 3
    assert "tablelog_kafka.client: FAIL" in verbose.stderr and "Connection refused" in verbose.stderr
    quiet = tablelog_cli(*args)
    assert "tablelog_kafka.client" not in quiet.stderr and "FAIL" not in quiet.stderr


def test_successful_commands_print_no_client_log_lines(kafka_bootstrap: str, tmp_path: Path) -> None:
    warehouse = str(tmp_path / "wh")
    topic = f"quiet-{uuid.uuid4().hex[:8]}"
    created = tablelog_cli("create", "-w", warehouse, "db.t", "--schema", "id bigint, name string", "-k", "id",
                           "-o", "log.system=kafka", "-o", f"kafka.bootstrap.servers={kafka_bootstrap}",
                           "-o", f"kafka.topic={topic}")
    assert created.returncode == 0 and created.stderr == "", created.stderr
    table = tablelog.open_table(warehouse, "db.t")
    with table.writer("w") as writer:
        writer.write([{"id": 1, "name": "a"}])
        writer.commit()
    tailed = tablelog_cli("tail", "-w", warehouse, "db.t", "--scan-mode", "earliest", "--idle-timeout", "0.5")
    assert tailed.returncode == 0 and tailed.stdout.startswith("+I")
    assert tailed.stderr.startswith("# 1 change(s); position:") and len(tailed.stderr.splitlines()) == 1
    assert "CONFWARN" not in created.stderr + tailed.stderr


def test_verify_and_tail_with_the_broker_down_report_an_outage_with_exit_3_never_inconsistent(
    own_broker: tuple[subprocess.Popen[bytes], str], tmp_path: Path,
) -> None:
    process, address = own_broker
    warehouse = str(tmp_path / "wh")
    table = tablelog.create_table(warehouse, "db.t", SCHEMA, primary_key=["id"], bucket=2,
                                  options={"log.system": "kafka", "kafka.bootstrap.servers": address})
    with table.writer("w") as writer:
        writer.write([{"id": i, "name": "x"} for i in range(10)])
        writer.commit()
    assert tablelog_cli("verify", "-w", warehouse, "db.t").returncode == 0
    process.kill()
    process.wait(timeout=10)

    quick = ["-o", "kafka.socket.connection.setup.timeout.ms=1500"]  # the outage is known: wait less
    verified = tablelog_cli("verify", "-w", warehouse, "db.t", *quick)
    assert verified.returncode == 3, verified.stdout + verified.stderr
    assert "INCONSISTENT" not in verified.stdout + verified.stderr
    assert "cannot verify table 'db.t', nothing was compared" in verified.stderr
    assert f"cannot reach the Kafka brokers at {address}" in verified.stderr
    tailed = tablelog_cli("tail", "-w", warehouse, "db.t", "--scan-mode", "earliest", *quick)
    assert tailed.returncode == 3 and f"cannot reach the Kafka brokers at {address}" in tailed.stderr
    described = tablelog_cli("describe", "-w", warehouse, "db.t", *quick)  # the log part says it is unreachable
    assert described.returncode == 0, described.stderr


def test_a_failed_sasl_authentication_names_the_mechanism_and_user_never_the_password(
    authenticating_broker: str,
) -> None:
    config = LogConfig("kafka", "db.t", f"auth-{uuid.uuid4().hex[:8]}", 1, True, {
        "bootstrap.servers": authenticating_broker, "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "ada", "sasl.password": PASSWORD,
    })
    began = time.monotonic()
    with load_log_system("kafka").open(config) as client, pytest.raises(LogUnavailableError) as raised:
        client.ensure_topic()
    assert time.monotonic() - began < 15
    message = str(raised.value)
    assert "authentication failed at the Kafka brokers at " + authenticating_broker in message
    assert "SCRAM-SHA-512 as user 'ada'" in message and "kafka.sasl.password" in message
    assert "Broker transport failure" not in message.split("(")[0] and PASSWORD not in message


def test_sasl_against_a_plaintext_listener_is_reported_as_an_authentication_failure(kafka_bootstrap: str) -> None:
    config = LogConfig("kafka", "db.t", f"auth-{uuid.uuid4().hex[:8]}", 1, True, {
        "bootstrap.servers": kafka_bootstrap, "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN", "sasl.username": "bob", "sasl.password": PASSWORD,
        "socket.connection.setup.timeout.ms": "2000",
    })
    with load_log_system("kafka").open(config) as client, pytest.raises(LogUnavailableError) as raised:
        client.ensure_topic()
    message = str(raised.value)
    assert "authentication failed" in message and "PLAIN as user 'bob'" in message, message
    assert PASSWORD not in message


def test_a_record_too_large_for_kafka_names_the_options_that_raise_the_limit(
    kafka_bootstrap: str, tmp_path: Path,
) -> None:
    table = tablelog.create_table(str(tmp_path), "db.big", SCHEMA, primary_key=["id"], bucket=1, options={
        "log.system": "kafka", "kafka.bootstrap.servers": kafka_bootstrap,
        "kafka.topic": f"big-{uuid.uuid4().hex[:8]}", "log.max-record-bytes": "5000000",
    })
    with table.writer("w") as writer, pytest.raises(ProduceError) as raised:
        writer.write([{"id": 1, "name": "x" * 1_500_000}])
        writer.commit()
    message = str(raised.value)
    assert "MSG_SIZE_TOO_LARGE" in message
    for option in ("kafka.message.max.bytes", "max.message.bytes", "message.max.bytes", "log.max-record-bytes"):
        assert option in message, message
    assert internals(table).files.latest_snapshot() is None


@pytest.mark.parametrize(("code", "expected"), [
    (KafkaError.TOPIC_AUTHORIZATION_FAILED, "user 'ada' lacks an ACL; grant Describe and Write on topic 'db.t'"),
    (KafkaError.UNKNOWN_TOPIC_OR_PART, "topic 'db.t' does not exist at the Kafka brokers at h:9"),
    (KafkaError._SSL, "check kafka.ssl.ca.location"),
    (KafkaError._AUTHENTICATION, "SASL mechanism SCRAM-SHA-256 as user 'ada'"),
])
def test_client_errors_are_translated_into_what_to_do(code: int, expected: str) -> None:
    settings = parse_settings(LogConfig("kafka", "db.t", "db.t", 1, True, {
        "bootstrap.servers": "h:9", "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "ada",
        "sasl.password": PASSWORD,
    }))
    told = advice(KafkaError(code), settings, "db.t")
    assert told is not None and expected in told and PASSWORD not in told


def test_a_one_letter_password_leaves_the_brokers_error_readable_in_describe_and_the_dashboard(
    kafka_bootstrap: str, tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The password scrubbed out of every substring turned "Connection refused" into
    # "Conn******ction r******fus******d": garbled, and betraying the password "e".
    from click.testing import CliRunner

    from tablelog.cli import cli
    from tablelog.ui.state import Dashboard

    warehouse = str(tmp_path / "wh")
    table = tablelog.create_table(warehouse, "db.short", SCHEMA, primary_key=["id"], bucket=1, options={
        "log.system": "kafka", "kafka.bootstrap.servers": kafka_bootstrap, "kafka.topic": f"short-{uuid.uuid4().hex[:8]}",
    })
    with table.writer("w") as writer:
        writer.write([{"id": 1, "name": "a"}])
        writer.commit()
    down = {"kafka.bootstrap.servers": dead_address(), "kafka.sasl.password": "e", "kafka.admin-timeout-ms": "2000"}
    monkeypatch.setattr("tablelog.redaction._warned_keys", set())  # warned once per process

    described = CliRunner().invoke(cli, ["describe", "-w", warehouse, "db.short", "--format", "json",
                                         *[a for key, value in down.items() for a in ("-o", f"{key}={value}")]])
    assert described.exit_code == 0, described.output
    doc = json.loads(described.stdout)
    dashboard = Dashboard(warehouse, down, log_timeout_s=10.0)
    try:
        shown = dashboard.table_document("db.short", 10)
    finally:
        dashboard.close()
    for document in (doc, shown):
        error = document["log"]["error"]
        assert "Connection refused" in error and REDACTED not in error, error
        assert document["options"]["kafka.sasl.password"] == REDACTED
    assert any("Connection refused" in reason for reason in shown["health"]["reasons"])
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any("'kafka.sasl.password' holds a secret of fewer than 8 characters" in w for w in warnings), warnings
