"""Topics and partitions: table bucket b is written to ``<topic>-partition-b``.

pulsar-lite (0.2) has no admin API: its only HTTP endpoint serves metrics, and
topics are created implicitly by the first lookup, producer or reader. It does
support partitioned topics, but only through its broker-wide
``default_partitions`` setting (0 by default: every auto-created topic is a plain
one), never with a per-topic partition count. So the plugin does not rely on a
partitioned topic: partition N is the plain topic ``<topic>-partition-N``.
This is Pulsar's own naming of partitions, so on an Apache Pulsar cluster where
an administrator created ``<topic>`` as a partitioned topic, the plugin writes
into its partitions directly; there the partition count is checked against what
the table needs.

Existence and partition count: pulsar-lite answers every lookup by creating the
topic, and its ``getLastMessageId`` says "Topic has no messages" for a missing
topic and an empty one alike, so a client cannot tell a missing topic from an
empty one, nor count plain partition topics. The plugin therefore records the
topic when it creates it: one message on the plain topic
``<topic>-tablelog-meta`` with the property ``tablelog.partitions = N``. The
first such message is the topic's partition count (two writers racing to create
the topic both read back the first one). No such message means the topic is
missing. A partitioned ``<topic>`` (created by an administrator) needs no
record: its own partition count is used.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any

import pulsar

from tablelog.plugin import TopicError
from tablelog_pulsar.config import PulsarConfig
from tablelog_pulsar.failures import PulsarException, translate


def partitioned_count(config: PulsarConfig, client: Any) -> int:
    """The partition count of ``config.topic`` when it is a partitioned topic, else 0."""
    try:
        names = list(client.get_topic_partitions(config.topic))
    except PulsarException as err:
        raise translate(err, "looking up the topic's partitions", config, topic=config.topic) from None
    if names == [config.topic]:
        return 0
    return len(names)


def check_plain_partition(config: PulsarConfig, client: Any, partition: int) -> None:
    """Fail when the broker turned ``<topic>-partition-N`` into a partitioned topic of its own
    (pulsar-lite with ``default_partitions`` > 0 does that)."""
    name = config.partition_topic(partition)
    try:
        names = list(client.get_topic_partitions(name))
    except PulsarException as err:
        raise translate(err, "looking up a partition topic", config, topic=name, partition=partition) from None
    if names != [name]:
        raise TopicError(
            f"pulsar: the broker made the partition topic {name!r} a partitioned topic with "
            f"{len(names)} partitions of its own (pulsar-lite's default_partitions must be 0), "
            "so records would lose their order",
            topic=config.topic, partition=partition,
        )


META_SUFFIX = "-tablelog-meta"
PARTITIONS_PROPERTY = "tablelog.partitions"


def meta_topic(config: PulsarConfig) -> str:
    return config.topic + META_SUFFIX


def recorded_partitions(config: PulsarConfig, client: Any, timeout_ms: int) -> int | None:
    """The partition count recorded when the topic was created, or None (missing topic)."""
    name = meta_topic(config)
    try:
        reader = client.create_reader(name, pulsar.MessageId.earliest)
    except PulsarException as err:
        raise translate(err, "reading the topic record", config, topic=name) from None
    try:
        try:
            available = reader.has_message_available()
        except pulsar.UnknownError:
            available = False  # pulsar-lite: "Topic has no messages"
        if not available:
            return None
        message = reader.read_next(timeout_ms)
        text = message.properties().get(PARTITIONS_PROPERTY, "")
        try:
            count = int(text)
        except ValueError:
            count = 0
        if count < 1:
            raise TopicError(f"pulsar: the topic record on {name!r} has no valid {PARTITIONS_PROPERTY} "
                             f"property ({text!r})", topic=config.topic)
        return count
    except PulsarException as err:
        raise translate(err, "reading the topic record", config, topic=name) from None
    finally:
        with contextlib.suppress(Exception):
            reader.close()


def record_partitions(config: PulsarConfig, client: Any, count: int) -> None:
    name = meta_topic(config)
    try:
        producer = client.create_producer(name, batching_enabled=False)
        try:
            producer.send(
                json.dumps({"table": config.topic, "partitions": count}).encode(),
                properties={PARTITIONS_PROPERTY: str(count)},
            )
        finally:
            with contextlib.suppress(Exception):
                producer.close()
    except PulsarException as err:
        raise translate(err, "writing the topic record", config, topic=name) from None


def ensure(config: PulsarConfig, client: Any, create: Callable[[int], Any], timeout_ms: int) -> int:
    """Make sure the table's partitions exist; return the topic's partition count.

    ``create(n)`` opens a producer on partition n (which creates that topic).
    """
    needed = config.partitions
    existing = partitioned_count(config, client)
    if not existing:
        existing = recorded_partitions(config, client, timeout_ms) or 0
        if not existing:
            if not config.auto_register:
                raise TopicError(
                    f"pulsar: topic {config.topic!r} not found and log.system.auto-register is false "
                    f"(no topic record on {meta_topic(config)!r}); set log.system.auto-register = true "
                    "to create it",
                    topic=config.topic,
                )
            for partition in range(needed):
                check_plain_partition(config, client, partition)
                create(partition)
            record_partitions(config, client, needed)
            existing = recorded_partitions(config, client, timeout_ms) or needed
    if existing < needed:
        raise TopicError(
            f"pulsar: topic {config.topic!r} has {existing} partitions but the table needs "
            f"{needed} (one per bucket); use a new topic (pulsar.topic) or, on a partitioned topic, "
            f"`pulsar-admin topics update-partitioned-topic -p {needed}`",
            topic=config.topic,
        )
    return existing
