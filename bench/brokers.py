"""Test brokers for the benchmarks: the test fixtures' own, started on a free loopback port.

Tansu (:class:`~tablelog.testing.kafka_server.TansuBroker`, memory storage) and pulsar-lite
(:class:`~tablelog.testing.pulsar_server.PulsarBroker`, a temporary data dir), each dying
with this process and killed on exit. ``TABLELOG_TEST_KAFKA_BOOTSTRAP`` /
``TABLELOG_TEST_PULSAR_URL`` point the benchmarks at external brokers instead.

:func:`kafka_client_options` gives the client settings a benchmark should use against
a broker: :data:`TANSU_CLIENT_OPTIONS` for a Tansu started here, none for an external
cluster.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from tablelog.testing.kafka_server import TansuBroker
from tablelog.testing.pulsar_server import PulsarBroker, pulsar_lite_binary

#: librdkafka settings for the Tansu broker :func:`kafka` starts (not for an external
#: cluster). Tansu is never woken by a produce while it holds a fetch: a record becomes
#: visible only when the waiting fetch re-reads its storage, after part of
#: ``fetch.wait.max.ms``, so a shorter wait is what keeps the latency benchmarks about
#: tablelog rather than about Tansu's polling (docs/kafka.md, "Latency"). Apache Kafka
#: answers a waiting fetch as soon as data arrives; there the plugin's default stays.
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


@contextlib.contextmanager
def kafka() -> Iterator[str]:
    """A Kafka-protocol bootstrap address: the external one, else a fresh Tansu broker."""
    external = os.environ.get("TABLELOG_TEST_KAFKA_BOOTSTRAP")
    if external:
        yield external
        return
    workdir = Path(tempfile.mkdtemp(prefix="bench-tansu-"))
    broker = TansuBroker(workdir)
    try:
        broker.start()
        assert broker.process is not None
        _OWN_TANSU[broker.bootstrap] = broker.process.pid
        yield broker.bootstrap
    finally:
        _OWN_TANSU.pop(broker.bootstrap, None)
        broker.kill()
        shutil.rmtree(workdir, ignore_errors=True)


@contextlib.contextmanager
def pulsar() -> Iterator[str]:
    """A Pulsar service URL: the external one, else a fresh pulsar-lite broker."""
    external = os.environ.get("TABLELOG_TEST_PULSAR_URL")
    if external:
        yield external
        return
    data = Path(tempfile.mkdtemp(prefix="bench-pulsar-"))
    broker = PulsarBroker(pulsar_lite_binary(), data)
    try:
        broker.start()
        yield broker.service_url
    finally:
        broker.stop()
        shutil.rmtree(data, ignore_errors=True)
