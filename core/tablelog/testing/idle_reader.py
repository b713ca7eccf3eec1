"""What an idle eventual reader costs its log, and how soon it still returns a new record:
the log calls it makes while it waits are counted around the real log (a hook wrapper),
and a record written while it waits is timed. tablelog's own tests of the file log, Kafka
and Pulsar use them (the ``wait_for_records`` hook, docs/plugins.md)."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from typing import Any

from tablelog.hookspecs import hookimpl
from tablelog.logs import discovery
from tablelog.table import Table


class LogCalls:
    """A hook wrapper that counts a reader's calls to the log, by hook."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def _counted(self, hook: str) -> Generator[None, Any, Any]:
        self.counts[hook] += 1
        return (yield)

    @hookimpl(wrapper=True)
    def fetch(self) -> Generator[None, Any, Any]:
        return (yield from self._counted("fetch"))

    @hookimpl(wrapper=True)
    def fetch_values(self) -> Generator[None, Any, Any]:
        return (yield from self._counted("fetch_values"))

    @hookimpl(wrapper=True)
    def wait_for_records(self) -> Generator[None, Any, Any]:
        return (yield from self._counted("wait_for_records"))

    @hookimpl(wrapper=True)
    def end_positions(self) -> Generator[None, Any, Any]:
        return (yield from self._counted("end_positions"))

    @hookimpl(wrapper=True)
    def seek(self) -> Generator[None, Any, Any]:
        return (yield from self._counted("seek"))


@contextmanager
def counting_log_calls() -> Iterator[LogCalls]:
    """Count the log calls of every log opened inside the block."""
    calls = LogCalls()
    discovery.register_hook_wrapper(calls)
    try:
        yield calls
    finally:
        discovery.unregister_hook_wrapper(calls)


def idle_poll_calls(table: Table, timeout_s: float, **reader_options: Any) -> tuple[LogCalls, float, list[Any]]:
    """The log calls of one ``poll(timeout_s)`` of an eventual reader at the end of the
    log, after a first poll that opened the log; also how long it took and what it returned."""
    with counting_log_calls() as calls, table.reader(
        consistency="eventual", scan_mode="latest", **reader_options
    ) as reader:
        reader.poll()
        calls.counts.clear()
        began = time.monotonic()
        changes = reader.poll(timeout_s=timeout_s)
        return calls, time.monotonic() - began, changes


def latency_by_partition(
    table: Table, row: Callable[[int], dict[str, Any]], *, wait_first_s: float = 0.3, most_rows: int = 64,
) -> dict[int, float]:
    """For every partition of the table's log: how long after its write was committed an
    eventual reader that was already waiting returned a row of it (negative: before the
    commit returned). Rows ``row(0)``, ``row(1)``, ... are written one per commit, each
    while the reader waits, until every partition has had one."""
    partitions = table.log_partitions
    latency: dict[int, float] = {}
    with table.reader(consistency="eventual", scan_mode="latest") as reader, table.writer() as writer:
        reader.poll()
        for i in range(most_rows):
            committed: list[float] = []

            def write_later(i: int = i, committed: list[float] = committed) -> None:
                time.sleep(wait_first_s)
                writer.write([row(i)])
                writer.commit()
                committed.append(time.monotonic())

            thread = threading.Thread(target=write_later)
            thread.start()
            try:
                changes = reader.poll(timeout_s=10.0)
                returned = time.monotonic()
            finally:
                thread.join()
            changes += reader.poll(timeout_s=0.0)
            assert len(changes) == 1, f"row {i}: the reader returned {changes}"
            partition = changes[0].partition
            assert partition is not None
            latency.setdefault(partition, returned - committed[0])
            if len(latency) == partitions:
                return latency
    raise AssertionError(f"{most_rows} rows reached only the partitions {sorted(latency)} of {partitions}")
