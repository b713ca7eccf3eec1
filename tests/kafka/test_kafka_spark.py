"""Exactly-once through the Spark sink with Kafka (the Tansu test broker), with Debezium JSON
and with ``arrow`` records: a task attempt that fails after producing and one that dies in
the middle of its write, in one pipeline (tablelog.testing.spark_scenarios). Each scenario
alone, with the eventual read normalized in Spark, runs on the file log
(tests/spark/test_spark_exactly_once.py); a driver killed with SIGKILL after a table commit
and a worker killed mid-batch, with Kafka, on the standalone cluster
(tests/cluster/test_spark_cluster_exactly_once.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tablelog.testing.spark_scenarios import SparkCombinedTaskFailures, spark_test_session

pytestmark = [pytest.mark.kafka, pytest.mark.spark]


@pytest.fixture(scope="module")
def spark_session() -> Iterator[Any]:
    # The same session as tests/spark when both run in one pytest process (getOrCreate).
    yield spark_test_session("local[2,2]")


class TestSparkExactlyOnceKafka(SparkCombinedTaskFailures):
    @pytest.fixture(params=["debezium-json", "arrow"])
    def log_options(self, request: pytest.FixtureRequest, kafka_bootstrap: str) -> dict[str, str]:
        return {"log.system": "kafka", "kafka.bootstrap.servers": kafka_bootstrap, "log.format": request.param}

    @pytest.fixture
    def spark(self, spark_session: Any) -> Any:
        return spark_session
