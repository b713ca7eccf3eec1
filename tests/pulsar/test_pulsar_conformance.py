"""The pulsar log system against the shipped conformance suite, on a real broker (pulsar-lite)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tablelog.records import LogConfig
from tablelog.testing import LogSystemConformance, free_port
from tablelog_pulsar.writer import PULSAR_DEFAULT_MAX_MESSAGE_BYTES

pytestmark = pytest.mark.pulsar


class TestPulsarConformance(LogSystemConformance):
    max_record_bytes = PULSAR_DEFAULT_MAX_MESSAGE_BYTES

    @pytest.fixture
    def log_config_factory(
        self, pulsar_log_config_factory: Callable[..., LogConfig]
    ) -> Callable[..., LogConfig]:
        return pulsar_log_config_factory

    @pytest.fixture
    def unreachable_log_config(self, pulsar_log_config_factory: Callable[..., LogConfig]) -> LogConfig:
        return pulsar_log_config_factory(
            service_url=f"pulsar://127.0.0.1:{free_port()}", operation_timeout_seconds=3,
            connection_timeout_ms=1000, send_timeout_ms=3000,
        )
