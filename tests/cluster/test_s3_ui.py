"""`tablelog ui`'s figures of a table in an S3 warehouse (SeaweedFS) with its log on Kafka:
the tables are listed from the bucket, the log's positions read against the latest
snapshot's. The page itself is driven in Chromium in tests/ui."""

from __future__ import annotations

import uuid

import pytest

from tablelog.testing.dashboard import DashboardScenarios
from tablelog.testing.s3_server import S3Endpoint

pytestmark = [pytest.mark.cluster, pytest.mark.kafka]


class TestDashboardOnAnS3Warehouse(DashboardScenarios):
    @pytest.fixture
    def warehouse(self, s3_server: S3Endpoint) -> str:
        return s3_server.url(f"ui-{uuid.uuid4().hex[:8]}")

    @pytest.fixture
    def log_options(self, s3_server: S3Endpoint, kafka_bootstrap: str) -> dict[str, str]:
        return {"log.system": "kafka", "kafka.bootstrap.servers": kafka_bootstrap,
                "s3.endpoint": s3_server.endpoint, "s3.access-key": s3_server.access_key,
                "s3.secret-key": s3_server.secret_key}
