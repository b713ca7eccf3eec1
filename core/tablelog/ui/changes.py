"""The live changelog view: the last changes of a table, then the ones committed after.

The page holds a reader position (``ReaderPosition.to_json``) and asks for the changes
after it; nothing but the position has to survive between requests. Opening a reader on
each request would open a log client each time (a Kafka consumer is slow to start), so
the open readers are kept, keyed by the position they stand at, and a request that
brings that position takes its reader back.
"""

from __future__ import annotations

import collections
import itertools
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

from tablelog.commit import LogCommitRecord, snapshot_commits, written_by
from tablelog.commit.history import ANOTHER_WRITER
from tablelog.documents import change_document
from tablelog.options import Consistency
from tablelog.positions import ReaderPosition
from tablelog.reading import ChangelogReader
from tablelog.store import SnapshotInfo
from tablelog.table import Table, internals
from tablelog.ui.figures import RECENT_SNAPSHOTS, newest_commits

#: How long a request may spend catching up to the latest snapshot or waiting for news.
CATCH_UP_S = 2.0
#: How far back the changelog view looks for its first changes.
START_SEARCH_SNAPSHOTS = 1000
#: Open readers not asked for this long are closed.
IDLE_READER_S = 60.0

_Key = tuple[str, tuple[str, ...] | None, str]


def _newest_first(t: Table) -> Iterator[tuple[SnapshotInfo, LogCommitRecord | None]]:
    """The snapshots newest first: the cached window, then older ones read one by one."""
    window = newest_commits(t, RECENT_SNAPSHOTS)
    yield from window
    if window:
        yield from snapshot_commits(internals(t).files, newest_first=True, upto=window[-1][0].id - 1)


def start_snapshot(t: Table, limit: int) -> int:
    """The snapshot after which the newest ``limit`` changes begin: the newest snapshots'
    log commits counted back until they hold ``limit`` records (at most
    :data:`START_SEARCH_SNAPSHOTS` snapshots back)."""
    counted, start = 0, None
    for snapshot, record in itertools.islice(_newest_first(t), START_SEARCH_SNAPSHOTS):
        start = snapshot.id - 1
        if record is not None and not record.relayed_snapshots:  # a relay's copy is not read again
            counted += sum(r.count for r in record.ranges)
        elif written_by(snapshot, record) == ANOTHER_WRITER:  # its changes come from the files
            counted += snapshot.delta_record_count
        if counted >= limit:
            break
    if start is None:
        latest = internals(t).files.latest_snapshot()
        return latest.id if latest is not None else 0
    return start


class ChangelogFollowers:
    """Open readers of the changelog view, by table, columns and position."""

    def __init__(self) -> None:
        self._readers: dict[_Key, tuple[ChangelogReader, float]] = {}
        self._lock = threading.Lock()

    def changes(self, t: Table, limit: int, columns: Sequence[str] | None, position: str | None,
                consistency: str, wait_s: float = 0.0) -> dict[str, Any]:
        """``limit`` changes at most: the newest ones when ``position`` is None, else those
        after it (waiting up to ``wait_s`` for one), and the position to ask from next."""
        chosen = tuple(columns) if columns else None
        reader = self._take(t.identifier, chosen, position) if position is not None else None
        if reader is None:
            start = position if position is not None else self._initial(t, limit, consistency)
            reader = t.reader(position=start, consistency=consistency,
                              columns=None if chosen is None else list(chosen))
        try:
            found = self._read(t, reader, limit, catch_up=position is None, wait_s=wait_s)
            now = reader.position.to_json()
        except BaseException:
            reader.close()
            raise
        self._keep(t.identifier, chosen, now, reader)
        key = tuple(t.primary_key)
        return {"changes": [change_document(c, key) for c in found], "position": now,
                "consistency": reader.consistency.value}

    def close(self) -> None:
        with self._lock:
            readers = [reader for reader, _ in self._readers.values()]
            self._readers.clear()
        for reader in readers:
            reader.close()

    @staticmethod
    def _initial(t: Table, limit: int, consistency: str) -> ReaderPosition | None:
        if consistency != Consistency.TRANSACTIONAL.value:
            return None  # an eventual reader starts at the log's end (scan.mode latest)
        return ReaderPosition(consistency=Consistency.TRANSACTIONAL, snapshot=start_snapshot(t, limit))

    @staticmethod
    def _read(t: Table, reader: ChangelogReader, limit: int, catch_up: bool, wait_s: float) -> list[Any]:
        """Up to ``limit`` changes; when catching up, the last ``limit`` up to the latest snapshot."""
        if not catch_up:
            return reader.poll(max_records=limit, timeout_s=wait_s)
        latest = internals(t).files.latest_snapshot()
        target = latest.id if latest is not None else 0
        kept: collections.deque[Any] = collections.deque(maxlen=limit)
        ends = time.monotonic() + CATCH_UP_S
        while time.monotonic() < ends:
            kept.extend(reader.poll(max_records=10_000, timeout_s=0.05))
            if reader.position.snapshot >= target:
                break
        return list(kept)

    def _take(self, table: str, columns: tuple[str, ...] | None, position: str) -> ChangelogReader | None:
        with self._lock:
            taken = self._readers.pop((table, columns, position), None)
        return None if taken is None else taken[0]

    def _keep(self, table: str, columns: tuple[str, ...] | None, position: str, reader: ChangelogReader) -> None:
        now = time.monotonic()
        with self._lock:
            replaced = self._readers.pop((table, columns, position), None)
            self._readers[(table, columns, position)] = (reader, now)
            idle = [k for k, (_, used) in self._readers.items() if now - used > IDLE_READER_S]
            closing = [self._readers.pop(k)[0] for k in idle]
        if replaced is not None:
            closing.append(replaced[0])
        for old in closing:
            old.close()
