"""The kafka log system against the shipped conformance suite, on a real broker."""

from __future__ import annotations

from collections.abc import Callable

import attrs
import pytest

from tablelog.records import LogConfig
from tablelog.testing import LogSystemConformance, free_port
from tablelog.testing.partition_scenarios import TableFilesReader
from tablelog_kafka.config import KAFKA_DEFAULT_MAX_MESSAGE_BYTES


class TestKafkaConformance(LogSystemConformance):
    max_record_bytes = KAFKA_DEFAULT_MAX_MESSAGE_BYTES

    @pytest.fixture
    def table_files_reader(self, read_with_pypaimon: TableFilesReader) -> TableFilesReader:
        return read_with_pypaimon  # every partitioned table the suite writes, read by pypaimon alone

    @pytest.fixture
    def log_config_factory(
        self, kafka_log_config_factory: Callable[..., LogConfig]
    ) -> Callable[..., LogConfig]:
        return kafka_log_config_factory

    @pytest.fixture
    def unreachable_log_config(self, kafka_log_config_factory: Callable[..., LogConfig]) -> LogConfig:
        config = kafka_log_config_factory()
        options = {**config.options, "bootstrap.servers": f"127.0.0.1:{free_port()}", "admin-timeout-ms": "3000"}
        return attrs.evolve(config, options=options)
