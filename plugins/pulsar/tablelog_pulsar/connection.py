"""What connecting to Pulsar needs besides the client: its logger, and a quick check
that a broker listens at the service URL."""

from __future__ import annotations

import logging
import os
import socket
import time
from typing import Any
from urllib.parse import urlsplit

import pulsar

from tablelog.plugin import LogUnavailableError
from tablelog_pulsar.config import PulsarConfig

#: The C++ client's own log lines go here (instead of stderr); they carry no credentials.
CLIENT_LOGGER = logging.getLogger("tablelog_pulsar.client")
CLIENT_LOGGER.addHandler(logging.NullHandler())  # no last-resort printing to stderr


class _ExpectedNoise(logging.Filter):
    """Drop the client's complaint about an empty topic: end_positions asks on purpose."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        return not ("Topic has no messages" in text or "Failed to getLastMessageId: UnknownError" in text)


CLIENT_LOGGER.addFilter(_ExpectedNoise())


def client_logger() -> Any:
    """The logger a new client is given: :data:`CLIENT_LOGGER` while something shows its
    lines (a handler that is not a ``NullHandler`` on it or an ancestor it propagates to,
    as ``tablelog -v`` adds), else the C++ client's own file logger on the null device.
    Given a Python logger, the client's threads take the GIL for every line they log, and
    one that does so while the interpreter is finalizing is ended inside C++ code that may
    not unwind: the process aborts ("terminate called without an active exception",
    apache/pulsar-client-python#256), seen when a process exits just after closing a client
    whose broker had been out of reach."""
    return CLIENT_LOGGER if shows_lines(CLIENT_LOGGER) else pulsar.FileLogger(pulsar.LoggerLevel.Error, os.devnull)


def shows_lines(logger: logging.Logger) -> bool:
    """Whether a handler that is not a ``NullHandler`` gets ``logger``'s records: its own,
    or an ancestor's it propagates to."""
    current: logging.Logger | None = logger
    while current is not None:
        if any(not isinstance(handler, logging.NullHandler) for handler in current.handlers):
            return True
        current = current.parent if current.propagate else None
    return False


#: pulsar-client's default connection_timeout_ms.
_CONNECT_TIMEOUT_MS = 10_000
#: Between two rounds of connection attempts that every broker refused.
_REFUSED_PAUSE_S = 0.2


def check_reachable(config: PulsarConfig) -> None:
    """Open (and close) a TCP connection to a broker of the service URL, trying again
    while every broker refuses, until the connect time-out (pulsar.connection-timeout-ms).

    The client retries a refused connection until its operation time-out
    (pulsar.operation-timeout-seconds, 30 s) and then reports only "Timeout": this says
    within the connect time-out that nothing listens at the address. It waits that long,
    rather than failing at the first refusal, because a broker restarting refuses
    connections for a moment: a write or a read opened then goes on once it is back."""
    timeout_ms = int(config.client_kwargs.get("connection_timeout_ms", _CONNECT_TIMEOUT_MS))
    url = urlsplit(config.service_url)
    default_port = 6651 if url.scheme.endswith("+ssl") else 6650
    hosts = [h for h in (url.netloc.rsplit("@", 1)[-1]).split(",") if h]
    started = time.monotonic()
    deadline = started + timeout_ms / 1000
    while True:
        failures, refused = [], 0
        for host in hosts:
            name, _, port = host.rpartition(":") if ":" in host else (host, "", str(default_port))
            try:
                remaining = max(deadline - time.monotonic(), 0.05)
                with socket.create_connection((name.strip("[]"), int(port)), timeout=remaining):
                    return
            except ConnectionRefusedError as err:
                refused += 1
                failures.append(f"{host}: {err.strerror or err}")
            except (OSError, ValueError) as err:
                failures.append(f"{host}: {getattr(err, 'strerror', None) or err}")
        if not failures:
            return  # not a host:port URL (http lookup, proxies...): let the client try
        if refused < len(failures) or time.monotonic() + _REFUSED_PAUSE_S >= deadline:
            break
        time.sleep(_REFUSED_PAUSE_S)
    raise LogUnavailableError(
        f"cannot reach the Pulsar broker at {config.service_url} (pulsar.service-url): no connection "
        f"within {time.monotonic() - started:.1f} s ({'; '.join(failures)}); check the address and "
        f"that the broker runs; pulsar.connection-timeout-ms={timeout_ms} sets how long to wait",
        topic=config.topic,
    )
