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
