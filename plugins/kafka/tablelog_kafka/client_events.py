"""librdkafka's log lines and error events: into Python logging, and into error messages.

Without a ``logger``, librdkafka prints every log line on stderr (a broker that
refuses connections gives one line per reconnect attempt, and the terminal of a
CLI command fills up before its error). Each client gets a :class:`ClientEvents`:
its ``logger`` sends the lines to the Python logger ``tablelog_kafka.client``
(secrets scrubbed; silent unless the application configures logging), and its
``error_cb`` remembers the client's recent errors, which say *why* a request
failed ("SASL authentication failed", "Connection refused") where the request's
own error only says "Broker transport failure".
"""

from __future__ import annotations

import logging
from collections import deque
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from .config import KafkaSettings

CLIENT_LOGGER = logging.getLogger("tablelog_kafka.client")
# A library logs, the application decides what is shown: without this handler Python
# would print the client's warnings on stderr when the application configured nothing.
logging.getLogger("tablelog_kafka").addHandler(logging.NullHandler())

#: librdkafka codes meaning "the brokers cannot be reached or used (in time)".
_UNAVAILABLE = frozenset({
    KafkaError._TRANSPORT,
    KafkaError._DESTROY_BROKER,  # the connection to a broker was torn down mid-request
    KafkaError._ALL_BROKERS_DOWN,
    KafkaError._TIMED_OUT,
    KafkaError._RESOLVE,
    KafkaError._AUTHENTICATION,
    KafkaError._SSL,
    KafkaError.REQUEST_TIMED_OUT,
    KafkaError.NETWORK_EXCEPTION,
    KafkaError.BROKER_NOT_AVAILABLE,
    KafkaError.LEADER_NOT_AVAILABLE,
    KafkaError.SASL_AUTHENTICATION_FAILED,
})

#: Errors that tell why the brokers cannot be used, most telling first.
_CAUSES = (
    KafkaError._AUTHENTICATION,
    KafkaError.SASL_AUTHENTICATION_FAILED,
    KafkaError._SSL,
    KafkaError._RESOLVE,
    KafkaError._TRANSPORT,
    KafkaError._TIMED_OUT,
)


def is_unavailable(error: KafkaError) -> bool:
    """Whether ``error`` means the brokers cannot be reached (an outage, not a refusal)."""
    return error.code() in _UNAVAILABLE


class _ClientLog(logging.LoggerAdapter):  # type: ignore[type-arg]
    """What confluent-kafka calls for each log line: ``log(level, "%s [%s] %s", fac, name, text)``."""

    def __init__(self, settings: KafkaSettings):
        super().__init__(CLIENT_LOGGER, {})
        self._settings = settings

    def log(self, level: int, msg: object, *args: object, **kwargs: Any) -> None:
        text = self._settings.secrets.scrub(str(msg) % args if args else str(msg))
        if level >= logging.WARNING and "CONFWARN" in text and "enable.gapless.guarantee" in text:
            # tablelog sets this experimental property on purpose (config.PRODUCER_GAPLESS);
            # librdkafka has no switch to silence the warning it gives for it.
            level = logging.DEBUG
        self.logger.log(level, "%s", text)


class ClientEvents:
    """The ``logger`` and ``error_cb`` of one client, and the errors it reported."""

    def __init__(self, settings: KafkaSettings):
        self.settings = settings
        self.recent: deque[KafkaError] = deque(maxlen=20)
        self.fatal: KafkaError | None = None
        # The last "cannot reach the brokers" error since the last good flush: records
        # unacknowledged then are an outage (LogUnavailableError), not a refusal.
        self.unreachable: KafkaError | None = None
        self.reached = False  # a request of this client was answered by a broker

    def hooks(self) -> dict[str, Any]:
        """Config entries to add to the client's config."""
        return {"logger": _ClientLog(self.settings), "error_cb": self._on_error}

    def _on_error(self, err: KafkaError) -> None:
        if err.fatal():
            self.fatal = err
        elif is_unavailable(err):
            self.unreachable = err
        self.recent.append(err)
        CLIENT_LOGGER.debug("error event: %s", self.settings.secrets.scrub(f"{err.name()}: {err.str()}"))

    def cause(self) -> KafkaError | None:
        """The most telling error the client reported, if any."""
        for code in _CAUSES:
            for err in reversed(self.recent):
                if err.code() == code:
                    return err
        return self.recent[-1] if self.recent else None


def serve_events(client: Any) -> None:
    """Run the client's pending callbacks (``error_cb``) without consuming anything."""
    poll = getattr(client, "poll", None)
    if poll is None:
        return
    try:
        # A consumer's poll could return a record: only call it while nothing is assigned.
        if hasattr(client, "assignment") and client.assignment():
            return
        poll(0)
    except (KafkaException, RuntimeError):
        pass

