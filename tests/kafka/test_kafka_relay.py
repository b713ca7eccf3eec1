"""`tablelog relay` on Kafka: a plain Kafka consumer (kafka-python, nothing of tablelog)
reads every change of tablelog's writers and of other writers exactly once."""

from __future__ import annotations

import uuid

import pytest

from tablelog.table import Table, internals
from tablelog.testing.kafka_server import topic_values
from tablelog.testing.relay_scenarios import RelayScenarios


class TestRelayOnKafka(RelayScenarios):
    @pytest.fixture
    def log_options(self, kafka_bootstrap: str) -> dict[str, str]:
        return {"log.system": "kafka", "kafka.bootstrap.servers": kafka_bootstrap,
                "kafka.topic": f"relay-{uuid.uuid4().hex[:8]}"}

    def raw_values(self, table: Table) -> list[bytes]:
        servers = internals(table).log_config().options["bootstrap.servers"]
        return topic_values(servers, internals(table).topic, internals(table).log_partitions)
