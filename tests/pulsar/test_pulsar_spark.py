"""Exactly-once through the Spark sink with Pulsar (pulsar-lite) and ``log.format=arrow``:
a task attempt that fails after producing and one that dies in the middle of its write,
in one pipeline (tablelog.testing.spark_scenarios). Each scenario alone, and the driver
killed with SIGKILL, run on the file log and Kafka (tests/spark, tests/kafka, tests/cluster)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tablelog.testing.spark_scenarios import SparkCombinedTaskFailures, spark_test_session

pytestmark = [pytest.mark.pulsar, pytest.mark.spark]


@pytest.fixture(scope="module")
def spark_session() -> Iterator[Any]:
    # The same session as tests/spark when both run in one pytest process (getOrCreate).
    yield spark_test_session("local[2,2]")


class TestSparkExactlyOnceOnPulsarWithArrowRecords(SparkCombinedTaskFailures):
    @pytest.fixture
    def log_options(self, pulsar_service_url: str) -> dict[str, str]:
        return {"log.system": "pulsar", "pulsar.service-url": pulsar_service_url, "log.format": "arrow"}

    @pytest.fixture
    def spark(self, spark_session: Any) -> Any:
        return spark_session
