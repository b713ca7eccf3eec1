"""Options of the kafka log system and the confluent-kafka client configs built from them.

``LogConfig.options`` arrives with the ``kafka.`` prefix removed. A few keys are
tablelog's own (:data:`TABLELOG_KEYS`); every other key is a librdkafka setting
and goes to the clients unchanged (``security.protocol``, ``sasl.*``, ``ssl.*``,
tuning). This module does no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import attrs

from tablelog.plugin import (
    LogConfig,
    OptionError,
    OptionSpec,
    SecretScrubber,
    int_option,
    invalid_value,
    redact,
    seconds_option,
)

PREFIX = "kafka."

BOOTSTRAP = "bootstrap.servers"
TOPIC = "topic"
REPLICATION_FACTOR = "replication-factor"
ADMIN_TIMEOUT_MS = "admin-timeout-ms"
#: librdkafka's own key (it goes to every client): the time a connection may take to
#: set up (TCP, TLS, SASL); tablelog also waits at most this long for a client's
#: first answer, so that a broker that is down is reported within seconds.
CONNECT_TIMEOUT = "socket.connection.setup.timeout.ms"
CONNECT_TIMEOUT_DEFAULT_MS = 5_000

#: Keys that configure tablelog, not the client: stripped before the client config.
TABLELOG_KEYS = frozenset({TOPIC, REPLICATION_FACTOR, ADMIN_TIMEOUT_MS})

#: Apache Kafka's default largest record batch (broker ``message.max.bytes``).
KAFKA_DEFAULT_MAX_MESSAGE_BYTES = 1_048_588

#: Defaults for the producer; a user option with the same key wins, except
#: the ones in :data:`PRODUCER_FIXED` that the log's guarantees depend on.
PRODUCER_DEFAULTS: dict[str, Any] = {
    "compression.type": "lz4",
    "linger.ms": 5,
    # A write attempt may hand over more than librdkafka's default 100k records
    # before it flushes; produce() still blocks (polls) when this is full.
    "queue.buffering.max.messages": 1_000_000,
    # Kafka's own default limit (the broker's message.max.bytes, a topic's
    # max.message.bytes). librdkafka's lower default refused a record of the writer's
    # largest size (log.max-record-bytes) once its key and headers were added.
    "message.max.bytes": KAFKA_DEFAULT_MAX_MESSAGE_BYTES,
}
PRODUCER_FIXED: dict[str, Any] = {
    # Durable means acknowledged by all in-sync replicas; idempotence keeps
    # per-partition order and drops the duplicates of client retries.
    "enable.idempotence": True,
    "acks": "all",
    # Never create a topic as a side effect of producing: ensure_topic decides.
    "allow.auto.create.topics": False,
}
#: Added when the user leaves message time-outs alone: then the producer may skip
#: delivery reports for the records between the first and the last of a batch
#: (see :attr:`KafkaSettings.edge_reports_only`).
PRODUCER_GAPLESS: dict[str, Any] = {
    # Any failure that could leave a gap in a partition's delivered records is a
    # fatal producer error, which fails the flush ...
    "enable.gapless.guarantee": True,
    # ... and time-outs, which that guarantee does not cover, never happen on their
    # own: flush(timeout_s) is the time-out, and a failed flush drops what is queued.
    "message.timeout.ms": 0,
}
_TIMEOUT_KEYS = frozenset({"message.timeout.ms", "delivery.timeout.ms", "enable.gapless.guarantee"})

CONSUMER_DEFAULTS: dict[str, Any] = {
    # Upper bound of a fetch's long-poll on the broker: the latency of a
    # re-position and of an empty fetch. Apache Kafka answers a waiting fetch as
    # soon as a record arrives, so this adds no latency there; a broker that polls
    # instead (Tansu re-reads its storage after half the remaining wait) shows a
    # record up to half of it late: lower it for such a broker (docs/kafka.md,
    # "Latency"), not here, where it only multiplies empty fetches.
    "fetch.wait.max.ms": 100,
    # A fetch in flight when the network to a broker goes silent (a partition, not a
    # refused connection) is abandoned, and its connection closed, only after this: the
    # kernel meanwhile backs off its retransmissions, so a connection kept across a long
    # silence resumes at the next one, up to a minute after the network came back.
    # librdkafka's 60 s default also outlasts a reader's log.fetch-timeout-ms.
    "socket.timeout.ms": 10_000,
}
CONSUMER_FIXED: dict[str, Any] = {
    # Positions are explicit (assign + offset): no group membership, no commits.
    "enable.auto.commit": False,
    "enable.auto.offset.store": False,
    # Report a gone position instead of silently jumping elsewhere.
    "auto.offset.reset": "error",
    "enable.partition.eof": True,
    "allow.auto.create.topics": False,
    # Visibility is decided by the table snapshot, not by broker transactions.
    "isolation.level": "read_uncommitted",
}

#: Well-known client keys that only one kind of client understands; the others
#: would log a warning for each of them.
_PRODUCER_ONLY = frozenset({
    "acks", "request.required.acks", "linger.ms", "queue.buffering.max.ms",
    "compression.type", "compression.codec", "compression.level", "enable.idempotence",
    "batch.size", "batch.num.messages", "queue.buffering.max.messages",
    "queue.buffering.max.kbytes", "message.timeout.ms", "delivery.timeout.ms", "retries",
    "message.send.max.retries", "enable.gapless.guarantee", "partitioner", "transactional.id",
    "request.timeout.ms", "sticky.partitioning.linger.ms",
})
_CONSUMER_ONLY = frozenset({
    "group.id", "group.instance.id", "auto.offset.reset", "enable.auto.commit",
    "enable.auto.offset.store", "enable.partition.eof", "isolation.level", "check.crcs",
    "session.timeout.ms", "heartbeat.interval.ms", "max.poll.interval.ms",
    "queued.min.messages", "queued.max.messages.kbytes", "fetch.wait.max.ms",
    "fetch.min.bytes", "fetch.max.bytes", "fetch.message.max.bytes", "max.partition.fetch.bytes",
    "fetch.error.backoff.ms", "fetch.queue.backoff.ms", "auto.commit.interval.ms",
})


def option_specs() -> list[OptionSpec]:
    """The options the kafka log system documents (full keys)."""
    p = PREFIX
    return [
        OptionSpec(p + BOOTSTRAP, "Kafka brokers to connect to, `host:port[,host:port...]`.", required=True),
        OptionSpec(p + TOPIC, "Topic of the table's log; default derived from the table name.", names_topic=True),
        OptionSpec(
            p + REPLICATION_FACTOR,
            "Replication factor of a topic tablelog creates; `-1` uses the broker's default.",
            default="-1",
        ),
        OptionSpec(
            p + ADMIN_TIMEOUT_MS,
            "Time-out of metadata, topic and offset look-ups against the brokers.",
            default="30000",
        ),
        OptionSpec(
            p + CONNECT_TIMEOUT,
            "How long to wait for a broker's first answer (connection, TLS and SASL set-up) "
            "before reporting the brokers unreachable.",
            default=str(CONNECT_TIMEOUT_DEFAULT_MS),
        ),
        OptionSpec(p + "security.protocol", "`plaintext`, `ssl`, `sasl_plaintext` or `sasl_ssl`."),
        OptionSpec(p + "sasl.mechanism", "`PLAIN`, `SCRAM-SHA-256`, `SCRAM-SHA-512`, `OAUTHBEARER`..."),
        OptionSpec(p + "sasl.username", "SASL user name.", secret=True),
        OptionSpec(p + "sasl.password", "SASL password (never logged or shown).", secret=True),
        OptionSpec(p + "ssl.ca.location", "CA certificate file to verify the brokers."),
        OptionSpec(p + "ssl.certificate.location", "Client certificate file (mutual TLS)."),
        OptionSpec(p + "ssl.key.location", "Client private key file (mutual TLS)."),
        OptionSpec(p + "ssl.key.password", "Password of the client private key.", secret=True),
        OptionSpec(
            p + "compression.type",
            "Producer compression: `none`, `gzip`, `snappy`, `lz4`, `zstd`.",
            default=str(PRODUCER_DEFAULTS["compression.type"]),
        ),
        OptionSpec(
            p + "linger.ms",
            "How long the producer waits to fill a batch.",
            default=str(PRODUCER_DEFAULTS["linger.ms"]),
        ),
    ]


@attrs.frozen
class KafkaSettings:
    """The parsed options of one table's kafka log."""

    topic: str
    bootstrap_servers: str
    replication_factor: int
    admin_timeout_s: float
    connect_timeout_s: float
    client: Mapping[str, str] = attrs.field(repr=False)  # user's client keys, secrets included
    secrets: SecretScrubber = attrs.field(repr=False)  # for the clients' texts

    @property
    def edge_reports_only(self) -> bool:
        """Whether only the first and last record of a batch need a delivery report.

        True unless the user set a message time-out: with idempotence, the gapless
        guarantee and no message time-out, a record between two delivered ones
        cannot fail alone, and a delivery report per record is a large part of the
        producer's per-record cost (docs/performance-history.md).
        """
        return not (_TIMEOUT_KEYS & set(self.client))

    def producer_config(self) -> dict[str, Any]:
        user = {k: v for k, v in self.client.items() if k not in _CONSUMER_ONLY}
        gapless = PRODUCER_GAPLESS if self.edge_reports_only else {}
        return {**PRODUCER_DEFAULTS, **gapless, **user, **PRODUCER_FIXED}

    def consumer_config(self, group_id: str, **overrides: Any) -> dict[str, Any]:
        """A consumer's config. ``group.id`` is librdkafka's requirement only: the
        consumers assign partitions and never join, commit or subscribe; a user's
        ``group.id`` (for ACLs) replaces ``group_id``."""
        user = {k: v for k, v in self.client.items() if k not in _PRODUCER_ONLY}
        return {**CONSUMER_DEFAULTS, "group.id": group_id, **user, **overrides, **CONSUMER_FIXED}

    def admin_config(self) -> dict[str, Any]:
        return {
            k: v for k, v in self.client.items() if k not in _PRODUCER_ONLY and k not in _CONSUMER_ONLY
        }

    def shown_options(self) -> dict[str, Any]:
        """The client options with secrets redacted, for reprs and messages."""
        return redact(self.client)


_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")


def check_topic_name(topic: str) -> None:
    """Kafka's topic name rules: 1-249 of ``a-z A-Z 0-9 . _ -``, not ``.`` or ``..``
    (some Kafka-protocol brokers accept any name; Apache Kafka refuses these)."""
    if not _TOPIC_NAME.fullmatch(topic) or topic in (".", ".."):
        raise invalid_value(
            PREFIX + TOPIC, topic,
            "a Kafka topic name is 1 to 249 characters from letters, digits, '.', '_' and '-', "
            "and not '.' or '..'",
        )


def parse_settings(config: LogConfig) -> KafkaSettings:
    """Validate ``config.options`` (no I/O); raise OptionError naming the key."""
    options = {str(k).strip(): str(v) for k, v in config.options.items()}
    bootstrap = options.get(BOOTSTRAP, "").strip()
    if not bootstrap:
        raise OptionError(
            f"option {PREFIX + BOOTSTRAP!r} is required for log.system = kafka "
            "(the brokers to connect to, e.g. 'host:9092')"
        )
    if not config.topic:
        raise OptionError(f"option {PREFIX + TOPIC!r} resolved to an empty topic name")
    check_topic_name(config.topic)
    replication = int_option(options, REPLICATION_FACTOR, -1, minimum=-1, prefix=PREFIX)
    if replication == 0:
        raise invalid_value(PREFIX + REPLICATION_FACTOR, options[REPLICATION_FACTOR], "expected -1 or >= 1")
    admin_timeout_s = seconds_option(options, ADMIN_TIMEOUT_MS, 30_000, prefix=PREFIX)
    # librdkafka's minimum for this key is 1000.
    connect_timeout_ms = int_option(
        options, CONNECT_TIMEOUT, CONNECT_TIMEOUT_DEFAULT_MS, minimum=1000, prefix=PREFIX
    )
    client = {k: v for k, v in options.items() if k not in TABLELOG_KEYS}
    client[BOOTSTRAP] = bootstrap
    client[CONNECT_TIMEOUT] = str(connect_timeout_ms)
    return KafkaSettings(
        topic=config.topic,
        bootstrap_servers=bootstrap,
        replication_factor=replication,
        admin_timeout_s=admin_timeout_s,
        connect_timeout_s=connect_timeout_ms / 1000.0,
        client=client,
        secrets=SecretScrubber(options, PREFIX),
    )
