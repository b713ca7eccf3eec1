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
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tablelog.records import LogConfig
from tablelog.testing.pulsar_server import ENV_URL, PulsarBroker, pulsar_lite_binary


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
