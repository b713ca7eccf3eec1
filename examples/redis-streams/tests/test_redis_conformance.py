"""The redis log system against tablelog's conformance suite, exactly-once scenarios (on
merge-engine tables too), the projection stream of an arrow log, the relay of other
writers' commits (`tablelog relay`) and the dashboard's figures (`tablelog ui`), on a real
redis-server."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tablelog.plugin import LogConfig
from tablelog.testing import (
    DashboardScenarios,
    ExactlyOnceScenarios,
    LogSystemConformance,
    MergeEngineScenarios,
    ProjectionScenarios,
    RelayScenarios,
    free_port,
)


class TestRedisConformance(LogSystemConformance):
    @pytest.fixture
    def log_config_factory(
        self, redis_log_config_factory: Callable[..., LogConfig]
    ) -> Callable[..., LogConfig]:
        return redis_log_config_factory

    @pytest.fixture
    def unreachable_log_config(self) -> LogConfig:
        return LogConfig(system="redis", table="db.t", topic="unreachable", partitions=2, auto_register=True,
                         options={"url": f"redis://127.0.0.1:{free_port()}/0", "socket-connect-timeout": "2"})


class TestRedisExactlyOnce(ExactlyOnceScenarios):
    @pytest.fixture
    def log_options(self, redis_url: str) -> dict[str, str]:
        return {"log.system": "redis", "redis.url": redis_url}


class TestRedisMergeEngineFailures(MergeEngineScenarios):
    @pytest.fixture
    def log_options(self, redis_url: str) -> dict[str, str]:
        return {"log.system": "redis", "redis.url": redis_url}


class TestRedisProjection(ProjectionScenarios):
    @pytest.fixture
    def log_options(self, redis_url: str) -> dict[str, str]:
        return {"log.system": "redis", "redis.url": redis_url}


class TestRedisRelay(RelayScenarios):
    @pytest.fixture
    def log_options(self, redis_url: str) -> dict[str, str]:
        return {"log.system": "redis", "redis.url": redis_url}


class TestRedisOnTheDashboard(DashboardScenarios):
    @pytest.fixture
    def log_options(self, redis_url: str) -> dict[str, str]:
        return {"log.system": "redis", "redis.url": redis_url}
