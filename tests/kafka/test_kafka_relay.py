"""`tablelog relay` on Kafka: a plain Kafka consumer (kafka-python, nothing of tablelog)
reads every change of tablelog's writers and of other writers exactly once."""

from __future__ import annotations

import uuid

import pytest
from kafka import KafkaConsumer, TopicPartition

from tablelog.table import Table, internals
from tablelog.testing.relay_scenarios import RelayScenarios


class TestRelayOnKafka(RelayScenarios):
    @pytest.fixture
    def log_options(self, kafka_bootstrap: str) -> dict[str, str]:
        return {"log.system": "kafka", "kafka.bootstrap.servers": kafka_bootstrap,
                "kafka.topic": f"relay-{uuid.uuid4().hex[:8]}"}

    def raw_values(self, table: Table) -> list[bytes]:
        servers = internals(table).log_config().options["bootstrap.servers"]
        consumer = KafkaConsumer(bootstrap_servers=servers, enable_auto_commit=False, group_id=None)
        try:
            partitions = [TopicPartition(internals(table).topic, p) for p in range(internals(table).log_partitions)]
            consumer.assign(partitions)
            ends = consumer.end_offsets(partitions)
            for tp in partitions:
                consumer.seek(tp, 0)
            values: list[bytes] = []
            while any(consumer.position(tp) < ends[tp] for tp in partitions):
                for messages in consumer.poll(timeout_ms=1000).values():
                    values += [m.value for m in messages]
            return values
        finally:
            consumer.close()
