"""The conformance kit's retention tests against logs that delete record by record (as a
database table, or Kafka's ``DeleteRecords``, would): the in-memory log with a
``delete_before`` that deletes every record before the position, and one whose
``delete_before`` deletes nothing, which the kit must catch."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tablelog.logs import discovery
from tablelog.logs.client import LogClient
from tablelog.plugin import hookimpl
from tablelog.records import LogConfig
from tablelog.testing import opened_clients
from tablelog.testing.conformance.positions import PositionTests
from tablelog.testing.conformance.retention import RetentionTests
from tablelog.testing.memory_log import MemoryLog


class RecordDeletingLog(MemoryLog):
    """The in-memory log with ``delete_before`` at the finest grain: every record before
    the position goes."""

    @hookimpl
    def delete_before(self, connection: Any, positions: dict[int, int]) -> dict[int, int]:
        topic = connection.config.topic
        for partition, position in positions.items():
            self.delete_records(topic, partition, min(position, len(self.topics[topic][partition])))
        return {p: self.starts.get((topic, p), 0) for p in positions}

    def plugin(self) -> Any:
        hooks = super().plugin()
        hooks.delete_before = self.delete_before
        return hooks


class NothingDeletingLog(RecordDeletingLog):
    """Says it deletes, deletes nothing."""

    @hookimpl
    def delete_before(self, connection: Any, positions: dict[int, int]) -> dict[int, int]:
        return {p: self.starts.get((connection.config.topic, p), 0) for p in positions}


@pytest.fixture
def deleting_log() -> Iterator[str]:
    discovery.register_log_system("deleting", RecordDeletingLog().plugin())
    yield "deleting"
    discovery.unregister_log_system("deleting")


def config_factory(system: str) -> Callable[..., LogConfig]:
    def make(partitions: int = 2, auto_register: bool = True) -> LogConfig:
        return LogConfig(system=system, table="db.t", topic=f"t-{uuid.uuid4().hex[:12]}", partitions=partitions,
                         auto_register=auto_register, options={})

    return make


class TestRetentionOnALogThatDeletesRecords(RetentionTests):
    quiet_period_s = 0.05

    @pytest.fixture
    def log_config_factory(self, deleting_log: str) -> Callable[..., LogConfig]:
        return config_factory(deleting_log)


def delete_before_test(system: str) -> None:
    with opened_clients() as open_client:
        client: LogClient = open_client(config_factory(system)())
        client.ensure_topic()
        kit = PositionTests()
        kit.quiet_period_s = 0.05
        kit.test_delete_before_keeps_every_record_at_or_after_the_position(client)


def test_the_kits_delete_before_test_passes_for_a_log_that_deletes_records(deleting_log: str) -> None:
    delete_before_test(deleting_log)


def test_the_kits_delete_before_test_fails_for_a_log_that_says_it_deletes_and_deletes_nothing() -> None:
    discovery.register_log_system("lazy", NothingDeletingLog().plugin())
    try:
        with pytest.raises(AssertionError, match=r"deleted none of the 20 records before the position"):
            delete_before_test("lazy")
    finally:
        discovery.unregister_log_system("lazy")
