"""The pulsar log system against the shipped conformance suite, on a real broker (pulsar-lite)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tablelog.records import LogConfig
from tablelog.testing import LogSystemConformance

pytestmark = pytest.mark.pulsar


class TestPulsarConformance(LogSystemConformance):
    @pytest.fixture
    def log_config_factory(
        self, pulsar_log_config_factory: Callable[..., LogConfig]
    ) -> Callable[..., LogConfig]:
        return pulsar_log_config_factory
