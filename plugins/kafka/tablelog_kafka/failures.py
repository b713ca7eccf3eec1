"""Turn confluent-kafka errors into tablelog's LogSystemError family, saying what to do.

A request's own error is often only "Broker transport failure"; the client's
error events (:class:`~tablelog_kafka.client_events.ClientEvents`) tell why:
refused connection, failed SASL authentication, TLS. Messages name the brokers'
address, how long was waited, and the option that changes the outcome. Every
secret option value is scrubbed out; the client exception is never chained
(``from None``) so that no client text reaches a traceback unscrubbed.
"""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from tablelog.plugin import LogSystemError, LogUnavailableError, SecretScrubber

from .client_events import ClientEvents, is_unavailable, serve_events
from .config import (
    ADMIN_TIMEOUT_MS,
    BOOTSTRAP,
    CONNECT_TIMEOUT,
    KAFKA_DEFAULT_MAX_MESSAGE_BYTES,
    PREFIX,
    KafkaSettings,
)
from .tls_check import tls_failure

_AUTHENTICATION = frozenset({KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED})
_AUTHORIZATION = frozenset({
    KafkaError.TOPIC_AUTHORIZATION_FAILED,
    KafkaError.CLUSTER_AUTHORIZATION_FAILED,
    KafkaError.GROUP_AUTHORIZATION_FAILED,
    KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
})
_UNKNOWN_TOPIC = frozenset({KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC, KafkaError._UNKNOWN_PARTITION})
_TOO_LARGE = frozenset({KafkaError.MSG_SIZE_TOO_LARGE})  # librdkafka uses the broker's code locally too


def kafka_error_of(exc: BaseException) -> KafkaError | None:
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return exc.args[0]
    return None


def describe(error: KafkaError | BaseException | None, secrets: SecretScrubber) -> str:
    """``NAME: text`` of a client error, secrets scrubbed."""
    if isinstance(error, BaseException):
        inner = kafka_error_of(error)
        if inner is None:
            return secrets.scrub(f"{type(error).__name__}: {error}")
        error = inner
    if error is None:
        return "unknown error"
    return secrets.scrub(f"{error.name()}: {error.str()}")


def advice(error: KafkaError, settings: KafkaSettings, topic: str | None = None) -> str | None:
    """What to do about ``error``, or None when there is nothing specific to say."""
    code = error.code()
    client = settings.client
    where = f"the Kafka brokers at {settings.bootstrap_servers}"
    if code in _AUTHENTICATION:
        mechanism = client.get("sasl.mechanism", client.get("sasl.mechanisms", "GSSAPI"))
        user = client.get("sasl.username")
        who = f"as user {user!r}" if user else "without a user name (kafka.sasl.username is not set)"
        return (
            f"authentication failed at {where}: SASL mechanism {mechanism} {who}; check "
            f"{PREFIX}sasl.username and {PREFIX}sasl.password, and that {PREFIX}sasl.mechanism is "
            "one the brokers enable"
        )
    if code == KafkaError._SSL:
        protocol = client.get("security.protocol", "plaintext")
        found = tls_failure(client, settings.bootstrap_servers)
        return (
            f"the TLS handshake with {where} failed ({PREFIX}security.protocol={protocol})"
            + (f": {found}" if found else "")
            + f"; check {PREFIX}ssl.ca.location (the CA that signed the brokers' certificates), "
            f"{PREFIX}ssl.endpoint.identification.algorithm (host name checks), the client "
            f"certificate options, and that the listener speaks TLS"
        )
    if code in _AUTHORIZATION:
        user = client.get("sasl.username")
        who = f"user {user!r}" if user else "this client's principal"
        return (
            f"{where} refused the request: {who} lacks an ACL; grant Describe and Write on topic "
            f"{topic!r} to write, Describe and Read to read, and Create (topic or cluster) for "
            "tablelog to create the topic"
        )
    if code in _UNKNOWN_TOPIC:
        return (
            f"topic {topic!r} does not exist at {where} (or lacks that partition): it was deleted, "
            "or no writer created it yet; with log.system.auto-register=true (the default) "
            "creating the table or the first write creates it"
        )
    if code in _TOO_LARGE:
        limit = client.get("message.max.bytes", str(KAFKA_DEFAULT_MAX_MESSAGE_BYTES))
        return (
            f"a record is larger than Kafka accepts: raise the producer's {PREFIX}message.max.bytes "
            f"(now {limit}), the topic's max.message.bytes (the broker's message.max.bytes is its "
            "default) and the table's log.max-record-bytes (the writer's own limit) together"
        )
    return None


def unreachable(
    exc: BaseException, events: ClientEvents | None, settings: KafkaSettings, waited_s: float,
    timeout_key: str = CONNECT_TIMEOUT, topic: str | None = None, partition: int | None = None,
) -> LogUnavailableError:
    """The brokers did not answer: say where, how long we waited, why (the client's
    error events know), and which option sets the wait."""
    cause = events.cause() if events is not None else None
    error = cause or kafka_error_of(exc)
    detail = describe(error if error is not None else exc, settings.secrets)
    told = advice(error, settings, topic) if error is not None else None
    if told is not None:
        return LogUnavailableError(f"{told} ({detail})", topic=topic, partition=partition)
    timeout_ms = settings.client.get(CONNECT_TIMEOUT) if timeout_key == CONNECT_TIMEOUT else None
    if timeout_key == ADMIN_TIMEOUT_MS:
        timeout_ms = str(int(settings.admin_timeout_s * 1000))
    return LogUnavailableError(
        f"cannot reach the Kafka brokers at {settings.bootstrap_servers} ({PREFIX}{BOOTSTRAP}): "
        f"no answer within {waited_s:.1f} s ({detail}); check the address, that the brokers run "
        f"and that {PREFIX}security.protocol matches their listener; {PREFIX}{timeout_key}="
        f"{timeout_ms} sets how long to wait",
        topic=topic, partition=partition,
    )


def translate(
    exc: BaseException,
    settings: KafkaSettings,
    what: str,
    default: type[LogSystemError],
    *,
    topic: str | None = None,
    partition: int | None = None,
    events: ClientEvents | None = None,
    waited_s: float | None = None,
) -> LogSystemError:
    """A LogSystemError for ``exc``: LogUnavailableError when the brokers could not
    be reached or used, else ``default``; with advice where there is some."""
    error = kafka_error_of(exc)
    if error is not None and is_unavailable(error):
        waited = settings.admin_timeout_s if waited_s is None else waited_s
        unavailable = unreachable(exc, events, settings, waited, ADMIN_TIMEOUT_MS)
        return LogUnavailableError(f"{what}: {unavailable.args[0]}", topic=topic, partition=partition)
    message = f"{what}: {describe(exc, settings.secrets)}"
    told = advice(error, settings, topic) if error is not None else None
    if told is not None:
        message += f"; {told}"
    return default(message, topic=topic, partition=partition)


def delivery_failure(error: KafkaError, settings: KafkaSettings) -> str:
    """``describe`` of a failed delivery, with advice where there is some."""
    told = advice(error, settings, settings.topic)
    text = describe(error, settings.secrets)
    return f"{text}; {told}" if told else text


def first_contact(events: ClientEvents, client: Any) -> None:
    """Ask the brokers for metadata once, waiting at most the connect time-out:
    a broker that is down (or refuses our credentials) fails here, within
    seconds, instead of after every later request's own, longer time-out."""
    if events.reached:
        return
    settings = events.settings
    # Never longer than the time-out of the look-up the caller is about to make.
    timeout_s = min(settings.connect_timeout_s, settings.admin_timeout_s)
    option = CONNECT_TIMEOUT if settings.connect_timeout_s <= settings.admin_timeout_s else ADMIN_TIMEOUT_MS
    started = time.monotonic()
    try:
        client.list_topics(timeout=timeout_s)
    except KafkaException as exc:
        serve_events(client)
        raise unreachable(exc, events, settings, time.monotonic() - started, option) from None
    events.reached = True
