"""Turn pulsar-client exceptions into tablelog's LogSystemError family.

The client's exception text never carries credentials (it is a result code such
as ``Pulsar error: Timeout``), but we still build our own messages: what failed,
where (topic, partition) and the client's error class.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import _pulsar

from tablelog.plugin import (
    LogSystemError,
    LogUnavailableError,
    PositionOutOfRangeError,
    TopicError,
)

if TYPE_CHECKING:
    from tablelog_pulsar.config import PulsarConfig

_UNAVAILABLE = (
    _pulsar.Timeout,
    _pulsar.ConnectError,
    _pulsar.LookupError,
    _pulsar.ServiceUnitNotReady,
    _pulsar.NotConnected,
    _pulsar.TooManyLookupRequestException,
)
_TOPIC = (_pulsar.TopicNotFound, _pulsar.InvalidTopicName, _pulsar.TopicTerminated)

PulsarException = _pulsar.PulsarException


def describe(err: BaseException) -> str:
    """The client's error class and result, e.g. ``Timeout (Pulsar error: TimeOut)``."""
    return f"{type(err).__name__} ({err})"


def translate(
    err: BaseException, what: str, config: PulsarConfig, *, topic: str | None = None, partition: int | None = None
) -> LogSystemError:
    """A LogSystemError for the client exception ``err`` raised while doing ``what``; one
    that says the broker did not answer names it and the time-out it was given."""
    message = f"pulsar: {what} failed: {describe(err)}"
    if isinstance(err, _UNAVAILABLE):
        return LogUnavailableError(
            f"{message}: no answer from the Pulsar broker at {config.service_url} (pulsar.service-url) within "
            f"pulsar.operation-timeout-seconds={config.operation_timeout_s}; is it running and reachable?",
            topic=topic, partition=partition)
    if isinstance(err, _TOPIC):
        return TopicError(message, topic=topic, partition=partition)
    if isinstance(err, (_pulsar.AuthenticationError, _pulsar.AuthorizationError)):
        return LogSystemError(message + "; check pulsar.auth-plugin / pulsar.token", topic=topic,
                              partition=partition)
    return LogSystemError(message, topic=topic, partition=partition)


__all__ = ["PositionOutOfRangeError", "PulsarException", "describe", "translate"]
