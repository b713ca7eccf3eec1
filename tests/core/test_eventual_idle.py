"""An idle eventual reader waits on all its partitions in one call to the log
(``wait_for_records``): its log calls do not grow with the partitions, and a record written
while it waits is still returned at once. The calls are counted around the real file log
(a hook wrapper), and around a log without the hook (the core's fallback)."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tablelog.logs import discovery
from tablelog.logs.client import IDLE_LOOK_S
from tablelog.table import Table
from tablelog.tables import create_table
from tablelog.testing.idle_reader import counting_log_calls, idle_poll_calls, latency_by_partition
from tablelog.testing.memory_log import MemoryLog

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def _table(tmp_path: Path, buckets: int, log_system: str = "filesystem") -> Table:
    return create_table(str(tmp_path / "wh"), f"db.t_{uuid.uuid4().hex[:8]}", SCHEMA, primary_key=["id"],
                        bucket=buckets, options={"log.system": log_system})


def _row(i: int) -> dict[str, Any]:
    return {"id": i, "name": f"n{i}"}


@pytest.fixture
def memory_log() -> Iterator[MemoryLog]:
    log = MemoryLog()  # no wait_for_records hook
    discovery.register_log_system("memory", log.plugin())
    yield log
    discovery.unregister_log_system("memory")


@pytest.mark.parametrize("partitions", [1, 2, 4, 8])
def test_an_idle_eventual_readers_log_calls_do_not_grow_with_its_partitions(
    tmp_path: Path, partitions: int
) -> None:
    calls, took, changes = idle_poll_calls(_table(tmp_path, partitions), timeout_s=1.5)
    assert changes == [] and took >= 1.45
    # Several partitions: one wait on all of them, and a second should the first end early
    # (it was a fetch per partition every few milliseconds: 125 calls in 3 s for 2
    # partitions). One partition: a fetch that looks, then one that waits.
    assert calls.total <= 2, calls.counts
    assert set(calls.counts) == ({"wait_for_records"} if partitions > 1 else {"fetch"}), calls.counts


def test_an_idle_eventual_reader_returns_a_record_written_while_it_waits_at_once_on_every_partition(
    tmp_path: Path,
) -> None:
    latency = latency_by_partition(_table(tmp_path, 4), _row)
    assert sorted(latency) == [0, 1, 2, 3]
    assert max(latency.values()) < 0.5, latency


def test_without_the_wait_hook_an_idle_reader_looks_at_all_end_positions_at_once_a_few_times_a_second(
    tmp_path: Path, memory_log: MemoryLog,
) -> None:
    calls, took, changes = idle_poll_calls(_table(tmp_path, 8, "memory"), timeout_s=1.0)
    assert changes == [] and took >= 0.95
    assert set(calls.counts) == {"end_positions"}, calls.counts  # no fetch of an idle partition
    assert calls.total <= 1.0 / IDLE_LOOK_S + 2, calls.counts


def test_without_the_wait_hook_a_record_written_while_the_reader_waits_is_returned_within_a_look(
    tmp_path: Path, memory_log: MemoryLog,
) -> None:
    latency = latency_by_partition(_table(tmp_path, 4, "memory"), _row)
    assert max(latency.values()) < IDLE_LOOK_S + 0.2, latency


def test_an_eventual_reader_of_no_partition_waits_without_calling_the_log(tmp_path: Path) -> None:
    table = _table(tmp_path, 2)
    with counting_log_calls() as calls, table.reader(
        consistency="eventual", scan_mode="latest", partitions=[]
    ) as reader:
        began = time.monotonic()
        assert reader.poll(timeout_s=0.2) == []
        assert time.monotonic() - began >= 0.19
    assert calls.total == 0, calls.counts


def test_an_idle_transactional_reader_waits_on_the_table_not_the_log(tmp_path: Path) -> None:
    table = _table(tmp_path, 8)
    with table.writer() as writer:
        writer.write([_row(i) for i in range(16)])
        writer.commit()
    with counting_log_calls() as calls, table.reader(consistency="transactional", scan_mode="latest") as reader:
        reader.poll()
        calls.counts.clear()
        assert reader.poll(timeout_s=0.5) == []
    assert calls.total == 0, calls.counts


@pytest.mark.parametrize("pause_gc", ["false", "true"])
def test_the_garbage_collector_runs_while_an_idle_eventual_reader_waits(tmp_path: Path, pause_gc: str) -> None:
    """A reader that opts in (``log.reader.pause-gc``) pauses the collector (for the
    whole process) while it builds a batch, never for a wait."""
    import gc

    table = _table(tmp_path, 1)
    seen: list[bool] = []
    with table.reader(consistency="eventual", scan_mode="latest", options={"log.reader.pause-gc": pause_gc}) as reader:
        reader.poll()
        thread = threading.Thread(target=lambda: (time.sleep(0.3), seen.append(gc.isenabled())))
        thread.start()
        reader.poll(timeout_s=0.6)
        thread.join()
    assert seen == [True]
