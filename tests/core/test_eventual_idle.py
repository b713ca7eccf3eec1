"""An idle eventual reader lets the log's waiting fetch do the waiting: a few fetch
calls per poll, not one every few milliseconds per partition, and a new record is
still returned at once. The fetch calls are counted around the real file log."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tablelog.registry import LogClient
from tablelog.table import Table, create_table

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


class FetchSpy:
    """Counts the reader's fetch calls (and how long each may wait) on the real log."""

    def __init__(self) -> None:
        self.timeouts: list[float] = []

    @property
    def calls(self) -> int:
        return len(self.timeouts)

    @property
    def waiting_calls(self) -> int:
        return sum(1 for t in self.timeouts if t > 0)


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> Iterator[FetchSpy]:
    spy = FetchSpy()
    real = LogClient.fetch

    def counted(self: LogClient, partition: int, position: int, max_records: int, timeout_s: float) -> Any:
        spy.timeouts.append(timeout_s)
        return real(self, partition, position, max_records, timeout_s)

    monkeypatch.setattr(LogClient, "fetch", counted)
    yield spy


def _table(tmp_path: Path, buckets: int) -> Table:
    return create_table(str(tmp_path / "wh"), f"db.t_{uuid.uuid4().hex[:8]}", SCHEMA, primary_key=["id"],
                        bucket=buckets, options={"log.system": "filesystem"})


def _idle_poll(table: Table, spy: FetchSpy, timeout_s: float) -> tuple[list[Any], float]:
    with table.reader(consistency="eventual", scan_mode="latest") as reader:
        reader.poll()  # opens the log, finds the start
        spy.timeouts.clear()
        began = time.monotonic()
        changes = reader.poll(timeout_s=timeout_s)
        return changes, time.monotonic() - began


def test_an_idle_eventual_reader_of_one_partition_waits_in_one_fetch(tmp_path: Path, spy: FetchSpy) -> None:
    changes, took = _idle_poll(_table(tmp_path, 1), spy, timeout_s=1.0)
    assert changes == [] and took >= 0.95
    assert spy.calls <= 2, spy.timeouts  # a look at what is there, then one waiting fetch
    assert spy.waiting_calls == 1 and spy.timeouts[-1] > 0.9


def test_an_idle_eventual_reader_of_several_partitions_waits_in_one_at_a_time(
    tmp_path: Path, spy: FetchSpy,
) -> None:
    changes, took = _idle_poll(_table(tmp_path, 4), spy, timeout_s=1.0)
    assert changes == [] and took >= 0.95
    # Four looks, then slices of waiting that visit each partition every 20 ms: about 150
    # calls in a second (it was one call per partition every ~2 ms: thousands).
    assert spy.calls - spy.waiting_calls <= 4
    assert spy.calls <= 200, spy.calls
    assert min([t for t in spy.timeouts if t > 0][:-1]) >= 0.006  # but the last, cut short by the deadline


def test_an_idle_eventual_reader_returns_a_new_record_at_once(tmp_path: Path, spy: FetchSpy) -> None:
    table = _table(tmp_path, 4)
    written: dict[int, float] = {}

    def write_later() -> None:
        time.sleep(0.3)
        with table.writer() as writer:
            written[0] = time.monotonic()
            writer.write([{"id": i, "name": "x"} for i in range(8)])  # in every partition
            writer.commit()

    with table.reader(consistency="eventual", scan_mode="latest") as reader:
        reader.poll()
        thread = threading.Thread(target=write_later)
        thread.start()
        changes = reader.poll(timeout_s=5.0)
        returned = time.monotonic()
        thread.join()
        changes += reader.poll(timeout_s=0.2)
    assert sorted(c.row["id"] for c in changes) == list(range(8))
    assert returned - written[0] < 0.25  # not the whole 5 s


def test_an_eventual_reader_of_no_partition_waits_without_fetching(tmp_path: Path, spy: FetchSpy) -> None:
    table = _table(tmp_path, 2)
    with table.reader(consistency="eventual", scan_mode="latest", partitions=[]) as reader:
        began = time.monotonic()
        assert reader.poll(timeout_s=0.2) == []
        assert time.monotonic() - began >= 0.19
    assert spy.calls == 0


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
