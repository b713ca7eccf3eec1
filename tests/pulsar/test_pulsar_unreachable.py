"""A Pulsar broker that is down is reported after the connect time-out, naming the
service URL, the time waited and the option that sets it (not the client's bare
"Timeout" after 30 s); a broker that comes back within it is waited for."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable

import pytest

from tablelog.errors import LogUnavailableError
from tablelog.logs.discovery import load_log_system
from tablelog.records import LogConfig
from tablelog.testing.pulsar_server import PulsarBroker


def refused_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"pulsar://127.0.0.1:{sock.getsockname()[1]}"  # bound, never listening: refused


def config_for(url: str, **options: str) -> LogConfig:
    return LogConfig("pulsar", "db.t", "persistent://public/default/down", 1, True, {"service-url": url, **options})


def test_a_pulsar_broker_that_is_down_is_reported_after_the_connect_timeout_naming_the_url_the_wait_and_the_option(
) -> None:
    url = refused_url()
    began = time.monotonic()
    with load_log_system("pulsar").open(config_for(url, **{"connection-timeout-ms": "1500"})) as client, \
            pytest.raises(LogUnavailableError) as raised:
        client.ensure_topic()
    assert 1.2 < time.monotonic() - began < 5
    message = str(raised.value)
    assert f"cannot reach the Pulsar broker at {url} (pulsar.service-url)" in message
    assert "Connection refused" in message and "pulsar.connection-timeout-ms=1500" in message


def test_a_pulsar_broker_that_starts_listening_within_the_connect_timeout_is_waited_for(
        pulsar_broker_factory: Callable[[], PulsarBroker]) -> None:
    broker = pulsar_broker_factory()
    broker.stop()  # restarting: its port refuses connections for a moment
    outcome: list[BaseException | None] = []

    def open_and_use() -> None:
        try:
            with load_log_system("pulsar").open(config_for(broker.service_url)) as client:
                client.ensure_topic()
            outcome.append(None)
        except BaseException as err:  # noqa: BLE001 -- the test's to judge
            outcome.append(err)

    opening = threading.Thread(target=open_and_use)
    opening.start()
    time.sleep(1.0)
    broker.start()  # from this thread: the broker dies with the thread that started it
    opening.join(timeout=60)
    assert outcome == [None]
