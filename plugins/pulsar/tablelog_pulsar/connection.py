"""One open Pulsar log: the validated config, a lazily created client, a writer and a reader."""

from __future__ import annotations

import contextlib
import logging
import socket
import time
from typing import Any
from urllib.parse import urlsplit

import pulsar

from tablelog.plugin import LogSystemError, LogUnavailableError
from tablelog_pulsar.config import PulsarConfig
from tablelog_pulsar.failures import PulsarException, describe
from tablelog_pulsar.reader import Reader
from tablelog_pulsar.writer import Writer

#: The C++ client's own log lines go here (instead of stderr); they carry no credentials.
CLIENT_LOGGER = logging.getLogger("tablelog_pulsar.client")
CLIENT_LOGGER.addHandler(logging.NullHandler())  # no last-resort printing to stderr


class _ExpectedNoise(logging.Filter):
    """Drop the client's complaint about an empty topic: end_positions asks on purpose."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        return not ("Topic has no messages" in text or "Failed to getLastMessageId: UnknownError" in text)


CLIENT_LOGGER.addFilter(_ExpectedNoise())

#: pulsar-client's default connection_timeout_ms.
_CONNECT_TIMEOUT_MS = 10_000


def check_reachable(config: PulsarConfig) -> None:
    """Open (and close) a TCP connection to a broker of the service URL.

    The client retries a refused connection until its operation time-out
    (pulsar.operation-timeout-seconds, 30 s) and then reports only "Timeout":
    this says within the connect time-out that nothing listens at the address."""
    timeout_ms = int(config.client_kwargs.get("connection_timeout_ms", _CONNECT_TIMEOUT_MS))
    url = urlsplit(config.service_url)
    default_port = 6651 if url.scheme.endswith("+ssl") else 6650
    hosts = [h for h in (url.netloc.rsplit("@", 1)[-1]).split(",") if h]
    started = time.monotonic()
    failures = []
    for host in hosts:
        name, _, port = host.rpartition(":") if ":" in host else (host, "", str(default_port))
        try:
            with socket.create_connection((name.strip("[]"), int(port)), timeout=timeout_ms / 1000):
                return
        except (OSError, ValueError) as err:
            failures.append(f"{host}: {getattr(err, 'strerror', None) or err}")
    if not failures:
        return  # not a host:port URL (http lookup, proxies...): let the client try
    raise LogUnavailableError(
        f"cannot reach the Pulsar broker at {config.service_url} (pulsar.service-url): no connection "
        f"within {time.monotonic() - started:.1f} s ({'; '.join(failures)}); check the address and "
        f"that the broker runs; pulsar.connection-timeout-ms={timeout_ms} sets how long to wait",
        topic=config.topic,
    )


class PulsarConnection:
    """What ``open_log`` returns. Used by one thread at a time."""

    def __init__(self, config: PulsarConfig):
        self.config = config
        self._client: Any = None
        self.closed = False
        self.writer = Writer(config, self.client)
        self.reader = Reader(config, self.client)

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"PulsarConnection({self.config!r}, {state})"

    def client(self) -> Any:
        """The pulsar.Client, created on first use (it connects lazily too)."""
        if self.closed:
            raise LogSystemError("pulsar: the connection is closed", topic=self.config.topic)
        if self._client is None:
            check_reachable(self.config)
            try:
                self._client = pulsar.Client(
                    self.config.service_url,
                    authentication=self.config.authentication(),
                    logger=CLIENT_LOGGER,
                    **self.config.client_kwargs,
                )
            except PulsarException as err:
                # Never echo the options: they hold the credentials.
                raise LogSystemError(
                    f"pulsar: cannot create a client for {self.config.service_url}: {describe(err)}",
                    topic=self.config.topic,
                ) from None
        return self._client

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.reader.close()
        self.writer.close()
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()
