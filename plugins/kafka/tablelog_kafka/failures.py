"""Turn confluent-kafka errors into tablelog's LogSystemError family.

Messages carry the error's name and text with every secret option value
scrubbed out; the client exception is never chained (``from None``) so that
no client text reaches a traceback unscrubbed.
"""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException

from tablelog.errors import LogSystemError, LogUnavailableError

from .config import Secrets

#: librdkafka codes meaning "the brokers cannot be reached (in time)".
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


def is_unavailable(error: KafkaError) -> bool:
    """Whether ``error`` means the brokers cannot be reached (an outage, not a refusal)."""
    return error.code() in _UNAVAILABLE


def kafka_error_of(exc: BaseException) -> KafkaError | None:
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return exc.args[0]
    return None


def describe(error: KafkaError | BaseException | None, secrets: Secrets) -> str:
    """``NAME: text`` of a client error, secrets scrubbed."""
    if isinstance(error, BaseException):
        inner = kafka_error_of(error)
        if inner is None:
            return secrets.scrub(f"{type(error).__name__}: {error}")
        error = inner
    if error is None:
        return "unknown error"
    return secrets.scrub(f"{error.name()}: {error.str()}")


def translate(
    exc: BaseException,
    secrets: Secrets,
    what: str,
    default: type[LogSystemError],
    *,
    topic: str | None = None,
    partition: int | None = None,
) -> LogSystemError:
    """A LogSystemError for ``exc``: LogUnavailableError when the brokers could not
    be reached, else ``default``."""
    error = kafka_error_of(exc)
    cls = LogUnavailableError if error is not None and error.code() in _UNAVAILABLE else default
    return cls(f"{what}: {describe(exc, secrets)}", topic=topic, partition=partition)
