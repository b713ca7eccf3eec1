"""The kafka log system against the shipped conformance suite, on a real broker."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tablelog.records import LogConfig
from tablelog.testing import LogSystemConformance


class TestKafkaConformance(LogSystemConformance):
    @pytest.fixture
    def log_config_factory(
        self, kafka_log_config_factory: Callable[..., LogConfig]
    ) -> Callable[..., LogConfig]:
        return kafka_log_config_factory
