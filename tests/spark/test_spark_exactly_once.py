"""Exactly-once through the Spark sink on the built-in filesystem log: a task attempt that
fails after producing, and a driver killed with SIGKILL between its table commit and
Spark's commit log, then restarted from the checkpoint."""

from __future__ import annotations

from typing import Any

import pytest

from tablelog.testing.spark_scenarios import SparkExactlyOnceScenarios


class TestSparkExactlyOnceFilesystem(SparkExactlyOnceScenarios):
    @pytest.fixture
    def log_options(self) -> dict[str, str]:
        return {"log.system": "filesystem"}

    @pytest.fixture
    def spark(self, spark: Any) -> Any:  # the session fixture of conftest.py
        return spark
