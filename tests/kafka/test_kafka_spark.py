"""Exactly-once through the Spark sink with Kafka (the Tansu test broker)
(tablelog.testing.spark_scenarios): with ``arrow`` records, a task attempt that fails after
producing and one that dies in the middle of its write, each in its own pipeline; with
Debezium JSON, both in one pipeline (each alone runs on the file log,
tests/spark/test_spark_exactly_once.py). A driver killed with SIGKILL after a table commit
and a worker killed mid-batch, with Kafka and ``arrow``, run on the standalone cluster
(tests/cluster/test_spark_cluster_exactly_once.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tablelog.testing.spark_scenarios import (
    SparkCombinedTaskFailures,
    SparkTaskFailureScenarios,
    spark_test_session,
)

pytestmark = [pytest.mark.kafka, pytest.mark.spark]


@pytest.fixture(scope="module")
def spark_session() -> Iterator[Any]:
    # The same session as tests/spark when both run in one pytest process (getOrCreate).
    yield spark_test_session("local[2,2]")


class TestSparkExactlyOnceKafkaWithArrowRecords(SparkTaskFailureScenarios):
    @pytest.fixture
    def log_options(self, kafka_bootstrap: str) -> dict[str, str]:
        return {"log.system": "kafka", "kafka.bootstrap.servers": kafka_bootstrap, "log.format": "arrow"}

    @pytest.fixture
    def spark(self, spark_session: Any) -> Any:
        return spark_session


class TestSparkExactlyOnceKafkaWithDebeziumJson(SparkCombinedTaskFailures):
    @pytest.fixture
    def log_options(self, kafka_bootstrap: str) -> dict[str, str]:
        return {"log.system": "kafka", "kafka.bootstrap.servers": kafka_bootstrap, "log.format": "debezium-json"}

    @pytest.fixture
    def spark(self, spark_session: Any) -> Any:
        return spark_session
