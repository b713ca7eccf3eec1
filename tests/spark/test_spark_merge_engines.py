"""Merge engines through the Spark sink and source on the built-in filesystem log
(tablelog.testing.spark_merge_scenarios): two queries filling different columns of one
partial-update table, an aggregation table summing and counting with deletes, a
first-row table with repeated keys and a sequence-field table fed late events, all
five queries at once, in one pipeline with the driver killed with SIGKILL between its
table commits and Spark's commit log, restarted, and a task attempt that dies after
producing. Each table's
changes are checked, snapshot by snapshot and through the Spark source row by row, against
a reference of its engine computed from the input."""

from __future__ import annotations

from typing import Any

import pytest

from tablelog.testing.spark_merge_scenarios import SparkMergeEngineScenarios

#: Two minutes of Spark: run by `tox -e matrix`; CI runs tests/spark/test_spark_merge_batch.py.
pytestmark = pytest.mark.matrix


class TestSparkMergeEnginesFilesystem(SparkMergeEngineScenarios):
    @pytest.fixture
    def log_options(self) -> dict[str, str]:
        return {"log.system": "filesystem", "log.system.partitions": "2"}

    @pytest.fixture
    def spark(self, spark: Any) -> Any:  # the session fixture of conftest.py
        return spark
