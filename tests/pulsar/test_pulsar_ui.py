"""`tablelog ui`'s figures of a Pulsar-backed table (pulsar-lite): the log's positions
against the latest snapshot's. The page itself is driven in Chromium in tests/ui."""

from __future__ import annotations

import pytest

from tablelog.testing.dashboard import DashboardScenarios

pytestmark = pytest.mark.pulsar


class TestDashboardOnPulsar(DashboardScenarios):
    @pytest.fixture
    def log_options(self, pulsar_service_url: str) -> dict[str, str]:
        return {"log.system": "pulsar", "pulsar.service-url": pulsar_service_url}
