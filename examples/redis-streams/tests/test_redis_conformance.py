"""The redis log system against tablelog's conformance suite and exactly-once
scenarios, on a real redis-server."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tablelog.records import LogConfig
from tablelog.testing import LogSystemConformance
from tablelog.testing.scenarios import ExactlyOnceScenarios


class TestRedisConformance(LogSystemConformance):
    @pytest.fixture
    def log_config_factory(
        self, redis_log_config_factory: Callable[..., LogConfig]
    ) -> Callable[..., LogConfig]:
        return redis_log_config_factory


class TestRedisExactlyOnce(ExactlyOnceScenarios):
    @pytest.fixture
    def log_options(self, redis_url: str) -> dict[str, str]:
        return {"log.system": "redis", "redis.url": redis_url}
