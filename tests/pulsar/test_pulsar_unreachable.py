"""A Pulsar broker that is down is reported at once, naming the service URL, the time
waited and the option that sets it (not the client's bare "Timeout" after 30 s)."""

from __future__ import annotations

import socket
import time

import pytest

from tablelog.errors import LogUnavailableError
from tablelog.logs.discovery import load_log_system
from tablelog.records import LogConfig


def test_a_pulsar_broker_that_is_down_is_reported_at_once_naming_the_url_the_wait_and_the_option() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"pulsar://127.0.0.1:{sock.getsockname()[1]}"  # bound, never listening: refused
    config = LogConfig("pulsar", "db.t", "persistent://public/default/down", 1, True, {"service-url": url})
    began = time.monotonic()
    with load_log_system("pulsar").open(config) as client, pytest.raises(LogUnavailableError) as raised:
        client.ensure_topic()
    assert time.monotonic() - began < 5
    message = str(raised.value)
    assert f"cannot reach the Pulsar broker at {url} (pulsar.service-url)" in message
    assert "Connection refused" in message and "pulsar.connection-timeout-ms=10000" in message
