"""Conformance tests of partitioned tables: a table partitioned by day on the log system
(its options from ``log_config_factory``), every change counted on both sides
(:mod:`tablelog.testing.partition_scenarios`). A key's log partition is its bucket,
whatever its table partition, so one topic carries every table partition's changes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tablelog.testing.conformance.base import ConfigFactory, ConformanceBase
from tablelog.testing.partition_scenarios import PartitionedTableScenarios


class PartitionedTableTests(PartitionedTableScenarios, ConformanceBase):
    """Writes, hybrid, transactional and eventual reads, reads of some table partitions
    and compaction of a partitioned primary-key table. A plugin's test class may override
    ``table_files_reader`` to check the table files with a Paimon reader of its own."""

    @pytest.fixture
    def log_options(self, log_config_factory: ConfigFactory) -> dict[str, str]:
        config = log_config_factory(partitions=2)
        return {"log.system": config.system,
                **{f"{config.system}.{key}": str(value) for key, value in config.options.items()}}

    @pytest.fixture
    def warehouse(self, tmp_path: Path) -> str:
        return str(tmp_path / "partitioned-warehouse")
