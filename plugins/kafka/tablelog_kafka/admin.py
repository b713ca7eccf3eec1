"""Topic look-up and creation through the AdminClient.

The look-up lists all topics instead of asking for the one topic: a metadata
request naming a missing topic made the Tansu test broker create it (with its
default partition count), whatever the client asked.
"""

from __future__ import annotations

import concurrent.futures
import time
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from tablelog.plugin import LogUnavailableError, OptionError, TopicError

from .client_events import ClientEvents
from .config import KafkaSettings
from .failures import describe, first_contact, kafka_error_of, translate


class AdminSide:
    def __init__(self, settings: KafkaSettings):
        self._settings = settings
        self._admin: AdminClient | None = None
        self._events = ClientEvents(settings)

    def _client(self) -> AdminClient:
        if self._admin is None:
            try:
                admin = AdminClient({**self._settings.admin_config(), **self._events.hooks()})
            except KafkaException as exc:
                raise OptionError(
                    "invalid kafka client option: " + describe(exc, self._settings.secrets)
                ) from None
            first_contact(self._events, admin)
            self._admin = admin
        return self._admin

    def close(self) -> None:
        self._admin = None

    def partition_count(self, metadata_client: Any = None) -> int | None:
        """The topic's partition count, or None when it does not exist; looked up with
        ``metadata_client`` (any client: a producer) when given."""
        topic = self._settings.topic
        client = metadata_client if metadata_client is not None else self._client()
        try:
            metadata = client.list_topics(timeout=self._settings.admin_timeout_s)
        except KafkaException as exc:
            raise translate(exc, self._settings, "cannot list the topics", TopicError, topic=topic) from None
        found = metadata.topics.get(topic)
        if found is None or found.error is not None and found.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
            return None
        if found.error is not None:
            raise TopicError(
                "cannot describe the topic: " + describe(found.error, self._settings.secrets), topic=topic
            )
        return len(found.partitions)

    def ensure_topic(self, partitions: int, auto_register: bool, metadata_client: Any = None) -> int:
        topic = self._settings.topic
        count = self.partition_count(metadata_client)
        if count is None:
            if not auto_register:
                raise TopicError(
                    f"topic does not exist and log.system.auto-register is false; create it with "
                    f"at least {partitions} partitions or enable auto-register",
                    topic=topic,
                )
            count = self._create(partitions)
        if count < partitions:
            raise TopicError(
                f"topic has {count} partitions but the table needs {partitions} "
                f"(one per bucket); add partitions to the topic or use another topic",
                topic=topic,
            )
        return count

    def _create(self, partitions: int) -> int:
        topic = self._settings.topic
        new = NewTopic(topic, num_partitions=partitions, replication_factor=self._settings.replication_factor)
        futures = self._client().create_topics([new], request_timeout=self._settings.admin_timeout_s)
        try:
            futures[topic].result(timeout=self._settings.admin_timeout_s)
        except concurrent.futures.TimeoutError:
            raise LogUnavailableError(
                f"the brokers did not confirm the topic's creation within "
                f"{self._settings.admin_timeout_s:g} s", topic=topic,
            ) from None
        except KafkaException as exc:
            error = kafka_error_of(exc)
            if error is None or error.code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise translate(
                    exc, self._settings, f"cannot create the topic with {partitions} partitions",
                    TopicError, topic=topic, events=self._events,
                ) from None
        # Metadata may lag behind the creation for a moment.
        deadline = time.monotonic() + self._settings.admin_timeout_s
        while True:
            count = self.partition_count()
            if count is not None or time.monotonic() >= deadline:
                break
            time.sleep(0.05)
        if count is None:
            raise TopicError("the topic was created but does not show up in the metadata", topic=topic)
        return count
