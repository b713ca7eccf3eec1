"""Exactly-once through the Spark sink on the built-in filesystem log with
``log.format=arrow`` (records of many rows): a task attempt that fails after producing,
one that dies in the middle of its write, and a driver killed with SIGKILL between its
table commit and Spark's commit log, then restarted from the checkpoint; the table has a
projection stream (``log.arrow.projection``), which each scenario reads as well. Kafka and Pulsar
run both task-attempt failures in one query with each format (tests/kafka/test_kafka_spark.py,
tests/pulsar/test_pulsar_spark.py), and the driver and worker kills on the cluster
(tests/cluster)."""

from __future__ import annotations

from typing import Any

import pytest

from tablelog.testing.spark_scenarios import SparkExactlyOnceScenarios


class TestSparkExactlyOnceFilesystemArrow(SparkExactlyOnceScenarios):
    @pytest.fixture
    def log_options(self) -> dict[str, str]:
        # With a projection stream: each scenario also reads it through the source.
        return {"log.system": "filesystem", "log.format": "arrow", "log.arrow.projection": "name"}

    @pytest.fixture
    def spark(self, spark: Any) -> Any:  # the session fixture of conftest.py
        return spark
