"""Exactly-once through the Spark sink with Pulsar (pulsar-lite) and ``log.format=arrow``,
every scenario of tablelog.testing.spark_scenarios, each in its own pipeline: a task
attempt that fails after producing, one that dies in the middle of its write, and the
driver killed with SIGKILL after a table commit and restarted."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tablelog.testing.spark_scenarios import SparkExactlyOnceScenarios, spark_test_session

pytestmark = [pytest.mark.pulsar, pytest.mark.spark]


@pytest.fixture(scope="module")
def spark_session() -> Iterator[Any]:
    # The same session as tests/spark when both run in one pytest process (getOrCreate).
    yield spark_test_session("local[2,2]")


class TestSparkExactlyOnceOnPulsarWithArrowRecords(SparkExactlyOnceScenarios):
    @pytest.fixture
    def log_options(self, pulsar_service_url: str) -> dict[str, str]:
        return {"log.system": "pulsar", "pulsar.service-url": pulsar_service_url, "log.format": "arrow"}

    @pytest.fixture
    def spark(self, spark_session: Any) -> Any:
        return spark_session

    # The driver-killed scenario's Pulsar run is in `tox -e matrix`: CI runs it on the file
    # log and Kafka, and the Pulsar plugin's own exactly-once suite runs in CI.
    @pytest.mark.matrix
    def test_driver_killed_after_a_table_commit_and_restarted_commits_each_batch_once(
        self, spark: Any, log_options: dict[str, str], tmp_path: Path
    ) -> None:
        super().test_driver_killed_after_a_table_commit_and_restarted_commits_each_batch_once(
            spark, log_options, tmp_path)
