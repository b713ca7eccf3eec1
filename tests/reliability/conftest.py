"""Brokers of the reliability tests' own, which the tests pause, kill, restart and cut off.

Every fixture here starts a dedicated process, never the session brokers other tests
share, and stops it at the end.

* ``tansu_factory(storage=..., environment=..., advertised_port=...)`` -> a
  :class:`~tablelog.testing.kafka_server.TansuBroker` (memory storage by default;
  ``advertised_port`` makes it advertise another port, e.g. a proxy's);
* ``tansu``: one on memory storage; ``durable_tansu``: one on Tansu's S3 engine in a bucket
  of its own on the session's S3 server (``s3_server``, ``tests/conftest.py``), so that its
  records survive a kill;
* ``pulsar_broker`` -> a ``PulsarBroker`` on its own data directory;
* ``tcp_proxy_factory(upstream_port)`` -> a :class:`~tablelog.testing.fault_proxy.TcpProxy`;
  ``proxied_tansu``: a broker every client connection reaches through one.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tablelog.testing.fault_proxy import TcpProxy
from tablelog.testing.kafka_server import TansuBroker, s3_storage
from tablelog.testing.processes import free_port
from tablelog.testing.pulsar_server import PulsarBroker, pulsar_lite_binary
from tablelog.testing.s3_server import S3Endpoint


@pytest.fixture
def tansu_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., TansuBroker]]:
    brokers: list[TansuBroker] = []

    def start(**options: Any) -> TansuBroker:
        broker = TansuBroker(tmp_path_factory.mktemp("tansu"), **options)
        brokers.append(broker)
        broker.start()
        return broker

    yield start
    for broker in brokers:
        broker.kill()


@pytest.fixture
def tansu(tansu_factory: Callable[..., TansuBroker]) -> TansuBroker:
    """A dedicated Tansu broker on memory storage."""
    return tansu_factory()


@pytest.fixture
def durable_tansu(tansu_factory: Callable[..., TansuBroker], s3_server: S3Endpoint) -> TansuBroker:
    """A dedicated Tansu broker on S3 storage: it may be killed and restarted with its data."""
    storage, environment = s3_storage(s3_server, f"tansu-{uuid.uuid4().hex[:10]}")
    return tansu_factory(storage=storage, environment=environment)


@pytest.fixture
def tcp_proxy_factory() -> Iterator[Callable[..., TcpProxy]]:
    proxies: list[TcpProxy] = []

    def make(upstream_port: int, port: int | None = None) -> TcpProxy:
        proxy = TcpProxy(upstream_port, port)
        proxies.append(proxy)
        return proxy

    yield make
    for proxy in proxies:
        proxy.close()


@pytest.fixture
def proxied_tansu(tansu_factory: Callable[..., TansuBroker],
                  tcp_proxy_factory: Callable[..., TcpProxy]) -> tuple[TansuBroker, TcpProxy]:
    """A Tansu broker that advertises a proxy's address: every client connection
    (bootstrap and the ones learnt from metadata) goes through the proxy."""
    proxy_port = free_port()
    broker = tansu_factory(advertised_port=proxy_port)
    proxy = tcp_proxy_factory(broker.port, proxy_port)
    return broker, proxy


@pytest.fixture
def pulsar_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PulsarBroker]:
    """A pulsar-lite broker of this test's own (restartable on its data directory)."""
    broker = PulsarBroker(pulsar_lite_binary(), tmp_path_factory.mktemp("pulsar-lite"))
    broker.start()
    yield broker
    broker.stop()
