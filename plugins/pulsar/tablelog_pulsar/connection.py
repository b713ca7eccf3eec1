"""One open Pulsar log: the validated config, a lazily created client, a writer and a reader."""

from __future__ import annotations

import contextlib
import logging
from typing import Any

import pulsar

from tablelog.errors import LogSystemError
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
