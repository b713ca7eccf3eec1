"""The core's exactly-once scenarios against the built-in `filesystem` log."""

import pytest

from tablelog.testing.scenarios import ExactlyOnceScenarios


class TestExactlyOnceOnFilesystemLog(ExactlyOnceScenarios):
    @pytest.fixture
    def log_options(self) -> dict[str, str]:
        return {"log.system": "filesystem"}
