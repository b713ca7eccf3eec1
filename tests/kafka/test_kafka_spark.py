"""Exactly-once through the Spark sink with Kafka (the Tansu test broker)
(tablelog.testing.spark_scenarios): with ``arrow`` records, a task attempt that fails after
producing and one that dies in the middle of its write, each in its own pipeline; with
Debezium JSON on dynamic buckets, both in one pipeline (each alone runs on the file log,
tests/spark/test_spark_exactly_once.py). A driver killed with SIGKILL after a table commit
and a worker killed mid-batch, with Kafka and ``arrow``, run on the standalone cluster
(tests/cluster/test_spark_cluster_exactly_once.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tablelog.store import Warehouse
from tablelog.table import internals
from tablelog.tables import open_table
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

    # In `tox -e matrix`: CI runs this scenario with Arrow records on the file log, and an
    # attempt failing after producing on Kafka in TestSparkExactlyOnceKafkaWithDebeziumJson.
    @pytest.mark.matrix
    def test_task_attempt_failing_after_producing_is_counted_once(
        self, spark: Any, log_options: dict[str, str], tmp_path: Path
    ) -> None:
        super().test_task_attempt_failing_after_producing_is_counted_once(spark, log_options, tmp_path)


class TestSparkExactlyOnceKafkaWithDebeziumJson(SparkCombinedTaskFailures):
    """On a dynamic-bucket table (``bucket = -1``, Paimon's buckets small enough that it
    makes several): every micro-batch commits two tasks' new keys, whose bucket index files
    the commit merges, and the topic's partitions are the keys' hashes."""

    @pytest.fixture
    def log_options(self, kafka_bootstrap: str) -> dict[str, str]:
        return {"log.system": "kafka", "kafka.bootstrap.servers": kafka_bootstrap, "log.format": "debezium-json",
                "bucket": "-1", "log.system.partitions": "3", "dynamic-bucket.target-row-num": "40"}

    def test_attempts_failing_after_producing_and_mid_write_in_one_pipeline_are_each_counted_once(
        self, spark: Any, log_options: dict[str, str], tmp_path: Path
    ) -> None:
        super().test_attempts_failing_after_producing_and_mid_write_in_one_pipeline_are_each_counted_once(
            spark, log_options, tmp_path)
        (name,) = Warehouse(str(tmp_path / "wh")).tables()  # the sink created it with the options above
        files = internals(open_table(str(tmp_path / "wh"), name, log_options)).files
        assert files.bucket == -1
        assert len({f.bucket for f in files.compactions().bucket_files(files.latest_snapshot().id)}) > 1  # type: ignore[union-attr]

    @pytest.fixture
    def spark(self, spark_session: Any) -> Any:
        return spark_session
