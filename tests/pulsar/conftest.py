"""A real Pulsar-protocol broker for the pulsar tests: pulsar-lite from its PyPI wheel.

``pulsar_service_url`` (session): the URL of a broker started once per session
(``pulsar_lite/bin/pulsar-lite --addr 127.0.0.1:PORT --db-path DIR``, free port,
temporary data dir), stopped at the end. ``TABLELOG_TEST_PULSAR_URL`` points the
tests at an external broker instead. A missing binary fails the tests; it never
skips them.

``pulsar_broker_factory``: start extra brokers that a test may stop, start and
restart on the same data dir (``PulsarBroker``), e.g. to check that records
survive a broker restart. They are always local pulsar-lite processes.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tablelog.records import LogConfig
from tablelog.testing.processes import free_port, wheel_binary

ENV_URL = "TABLELOG_TEST_PULSAR_URL"

# default_partitions = 0: auto-created topics are plain topics (the plugin's
# `<topic>-partition-N` topics must not become partitioned topics of their own).
# The metrics endpoint would bind 0.0.0.0:8080 for every broker: switch it off.
_BROKER_CONFIG = "default_partitions = 0\n\n[metrics]\nenabled = false\n"


def pulsar_lite_binary() -> Path:
    """The pulsar-lite executable shipped in the pulsar-lite wheel; fails clearly when absent."""
    binary, locations = wheel_binary("pulsar_lite", "pulsar-lite")
    if binary is not None:
        return binary
    pytest.fail(
        "the Pulsar test broker is missing: pulsar_lite/bin/pulsar-lite was not found "
        f"(searched {locations or 'no pulsar_lite package'}). Install it with "
        '`pip install "tablelog[test]"` (wheel pulsar-lite), or point the tests at a broker '
        f"with {ENV_URL}=pulsar://host:6650",
        pytrace=False,
    )


class PulsarBroker:
    """One pulsar-lite process on a fixed port and data dir; stop/start/restart keep both."""

    def __init__(self, binary: Path, data_dir: Path, port: int | None = None):
        self.binary = binary
        self.data_dir = data_dir
        self.port = port or free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = data_dir / "broker.log"
        data_dir.mkdir(parents=True, exist_ok=True)
        (data_dir / "pulsar-lite.toml").write_text(_BROKER_CONFIG)

    @property
    def service_url(self) -> str:
        return f"pulsar://127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self, timeout_s: float = 30.0) -> None:
        if self.running:
            return
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [
                    str(self.binary),
                    "--config", str(self.data_dir / "pulsar-lite.toml"),
                    "--addr", f"127.0.0.1:{self.port}",
                    "--db-path", str(self.data_dir / "db"),
                ],
                cwd=self.data_dir,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", "warn")},
            )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"pulsar-lite exited with code {self.process.returncode} before accepting "
                    f"connections on port {self.port}; log:\n{self.log_tail()}"
                )
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.25):
                    return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"pulsar-lite did not answer on port {self.port} within {timeout_s}s; "
                           f"log:\n{self.log_tail()}")

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)

    def restart(self) -> None:
        self.stop()
        self.start()

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


@pytest.fixture(scope="session")
def pulsar_broker_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[], PulsarBroker]]:
    """Start local pulsar-lite brokers (each with its own port and data dir); all stop at session end."""
    brokers: list[PulsarBroker] = []

    def start() -> PulsarBroker:
        broker = PulsarBroker(pulsar_lite_binary(), tmp_path_factory.mktemp("pulsar-lite"))
        brokers.append(broker)
        broker.start()
        return broker

    yield start
    for broker in brokers:
        broker.stop()


@pytest.fixture(scope="session")
def pulsar_service_url(pulsar_broker_factory: Callable[[], PulsarBroker]) -> str:
    """The broker the pulsar tests share: TABLELOG_TEST_PULSAR_URL, else a local pulsar-lite."""
    external = os.environ.get(ENV_URL)
    if external:
        return external
    return pulsar_broker_factory().service_url


@pytest.fixture
def restartable_pulsar_broker(pulsar_broker_factory: Callable[[], PulsarBroker]) -> Iterator[PulsarBroker]:
    """A broker of this test's own, which it may stop, start and restart."""
    broker = pulsar_broker_factory()
    yield broker
    broker.stop()


def unique_topic(prefix: str = "tl") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def pulsar_log_config_factory(pulsar_service_url: str) -> Callable[..., LogConfig]:
    """LogConfig(system="pulsar", table="db.t", topic=<fresh unique>, ...) for the session broker."""

    def make(
        partitions: int = 2,
        auto_register: bool = True,
        *,
        service_url: str | None = None,
        topic: str | None = None,
        **options: Any,
    ) -> LogConfig:
        return LogConfig(
            system="pulsar",
            table="db.t",
            topic=topic or unique_topic(),
            partitions=partitions,
            auto_register=auto_register,
            options={"service-url": service_url or pulsar_service_url,
                     **{k.replace("_", "-"): str(v) for k, v in options.items()}},
        )

    return make
