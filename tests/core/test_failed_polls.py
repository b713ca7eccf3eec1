"""A poll that fails part-way returns nothing, so it must skip nothing: the reader's position
goes back to where the poll began, and the next poll reads again what the failed one had
taken (earlier snapshots, other partitions). The failure is injected with a hook wrapper
that makes the log unreachable for one fetch."""

from __future__ import annotations

from collections import Counter
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import tablelog
from tablelog.commit.log_commit import LogCommitRecord
from tablelog.errors import LogUnavailableError
from tablelog.logs import discovery
from tablelog.plugin import hookimpl

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


class FailOnce:
    """Fails the first fetch of ``partition`` at ``position`` or later, as an unreachable log."""

    def __init__(self, partition: int, position: int) -> None:
        self.partition, self.position, self.failed = partition, position, False

    def _maybe_fail(self, partition: int, position: int) -> None:
        if not self.failed and partition == self.partition and position >= self.position:
            self.failed = True
            raise LogUnavailableError("injected: the log went away for one fetch")

    @hookimpl(wrapper=True)
    def fetch(self, partition: int, position: int) -> Generator[None, Any, Any]:
        self._maybe_fail(partition, position)
        return (yield)

    @hookimpl(wrapper=True)
    def fetch_values(self, partition: int, position: int) -> Generator[None, Any, Any]:
        self._maybe_fail(partition, position)
        return (yield)


@pytest.fixture
def inject() -> Iterator[list[FailOnce]]:
    injected: list[FailOnce] = []
    yield injected
    for wrapper in injected:
        discovery.unregister_hook_wrapper(wrapper)


def _table(tmp_path: Path, log_format: str) -> tablelog.Table:
    table = tablelog.create_table(str(tmp_path), "db.t", SCHEMA, primary_key=["id"], bucket=2,
                                  options={"log.system": "filesystem", "log.format": log_format})
    with table.writer() as writer:
        for commit in range(3):
            writer.write([{"id": i, "name": f"n{i}"} for i in range(commit * 10, commit * 10 + 10)])
            writer.commit()
    return table


def _fail_once(inject: list[FailOnce], partition: int, position: int) -> FailOnce:
    wrapper = FailOnce(partition, position)
    discovery.register_hook_wrapper(wrapper)  # before the reader opens its log
    inject.append(wrapper)
    return wrapper


@pytest.mark.parametrize("log_format", ["debezium-json", "arrow"])
def test_a_transactional_poll_failing_in_its_third_snapshot_skips_none_of_the_first_two(
    tmp_path: Path, inject: list[FailOnce], log_format: str
) -> None:
    table = _table(tmp_path, log_format)
    latest = LogCommitRecord.from_properties(list(table.snapshots())[-1].properties)
    assert latest is not None
    third = next(r for r in latest.ranges if r.partition == 1)
    wrapper = _fail_once(inject, 1, third.first)
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        with pytest.raises(LogUnavailableError):
            reader.poll(max_records=1_000)
        assert wrapper.failed and reader.position.snapshot == 0 and not reader.position.offsets
        changes = reader.read_all(idle_timeout_s=0.3)
    assert Counter(c.row["id"] for c in changes) == Counter(range(30))


def test_an_eventual_poll_failing_in_its_second_partition_skips_nothing_of_the_first(
    tmp_path: Path, inject: list[FailOnce]
) -> None:
    table = _table(tmp_path, "debezium-json")
    wrapper = _fail_once(inject, 1, 0)
    with table.reader(consistency="eventual", scan_mode="earliest") as reader:
        before = reader.position
        with pytest.raises(LogUnavailableError):
            reader.poll(max_records=1_000)
        assert wrapper.failed and reader.position.offsets == before.offsets
        changes = reader.read_all(idle_timeout_s=0.3)
    assert Counter(c.row["id"] for c in changes) == Counter(range(30))
