"""The core's exactly-once scenarios against the built-in `filesystem` log."""

import pytest

from tablelog.testing.scenarios import ExactlyOnceScenarios


class TestExactlyOnceOnFilesystemLog(ExactlyOnceScenarios):
    @pytest.fixture
    def log_options(self) -> dict[str, str]:
        return {"log.system": "filesystem"}


class TestExactlyOnceOnFilesystemLogWithArrowRecords(ExactlyOnceScenarios):
    """The same scenarios with records that hold a batch of rows each."""

    @pytest.fixture
    def log_options(self) -> dict[str, str]:
        return {"log.system": "filesystem", "log.format": "arrow"}


class TestExactlyOnceOnFilesystemLogWithDynamicBuckets(ExactlyOnceScenarios):
    """The same scenarios on dynamic buckets (``bucket = -1``), small enough that Paimon
    makes several: a key's log partition is its hash modulo the log's partitions, its
    bucket whatever Paimon chose."""

    @pytest.fixture
    def bucket(self) -> int:
        return -1

    @pytest.fixture
    def log_options(self) -> dict[str, str]:
        return {"log.system": "filesystem", "log.system.partitions": "3", "dynamic-bucket.target-row-num": "70"}
