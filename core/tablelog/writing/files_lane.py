"""A write attempt's data files, written in threads of their own beside its log.

The attempt's thread validates and encodes each write, hands the rows to the lanes and
produces the records; the lanes write the rows into Paimon files. At ``finish()`` the
attempt flushes the log while the lanes prepare the files' commit: the attempt takes as
long as the slower of the two, not both. Each lane owns one write of the attempt's data
files, of whole buckets when the table's buckets are computed ahead
(:meth:`tablelog.store.TableFiles.bucket_routing`: the attempt's thread puts the rows of
each write in bucket order once and hands every lane the spans of its buckets):
pypaimon-rust's writer keeps the rows in memory and sorts and encodes its files when the
commit is prepared, off the GIL, so the lanes prepare their buckets' files on as many cores.
Taking rows, that writer holds the GIL: a lane holds the rows it is handed and writes many
at once (:data:`HOLD_BYTES`), the last at ``finish()``, rather than contend with the
attempt's thread for the GIL batch by batch.

pypaimon-rust's write object must be created, used and closed by one thread: a lane's
thread does everything with its :class:`~tablelog.store.TableWrite`, which opens it on
the first write.

A failure in a lane fails the attempt: its next ``write()`` or ``finish()`` stops every
lane, deletes the files they wrote, and raises the failure (and so does every call after).
Rows reach the lanes only after they were validated and encoded, so bad input still
changes nothing; records already produced stay uncommitted, as those of any failed attempt.

On an object store the attempt waits for its lanes at most ``s3.write-timeout``
(:attr:`TableWrite.timeout_s`), at ``finish()`` and when a lane's queue stays full:
pypaimon-rust's writer has no request timeout, and a lane cut off from the store would
wait for it as long as the cut lasts. The attempt is then given up with a
:class:`~tablelog.errors.StoreUnavailableError`; the lane's thread ends when its call
returns, and deletes the files it wrote, as for any failed attempt. A process exiting
waits for such threads up to :data:`EXIT_WAIT_S`.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import queue
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tablelog.errors import StoreUnavailableError

if TYPE_CHECKING:
    from tablelog.store import TableWrite
    from tablelog.store.bucket_routing import Span

log = logging.getLogger(__name__)

#: Most lanes of an attempt that has the machine to itself (a ``Writer``'s): one a core. A
#: lane's writes hold the GIL, its prepare does not: more lanes than cores add threads and
#: Paimon writers, not speed; and each lane costs some CPU, which cores busy with other
#: work (an engine's other tasks) do not give back.
MOST_LANES = min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
#: Writes waiting for a lane: how far the attempt may run ahead of its data files.
QUEUE_DEPTH = 8
#: Bytes of rows a lane holds before it writes them: pypaimon-rust's writer holds the GIL
#: while it takes rows, so a lane writing each batch as it comes keeps taking the GIL from
#: the attempt's thread (both slow down, and spend more CPU). It bounds the memory a lane
#: holds besides the writer's own (which copies the rows it takes).
HOLD_BYTES = 32 << 20

_PREPARE = object()
_CLOSE = object()

#: The threads of lanes given up while in a call to the store, and how long the process
#: waits for them at exit: a thread that comes back from native code while the interpreter
#: shuts down is unwound through that code's frames, which aborts the process.
_ABANDONED: list[threading.Thread] = []
EXIT_WAIT_S = 30.0


@atexit.register
def _wait_for_abandoned_lanes() -> None:
    deadline = time.monotonic() + EXIT_WAIT_S
    for thread in _ABANDONED:
        thread.join(max(deadline - time.monotonic(), 0.0))


class FilesLanes:
    """The data files of one write attempt (commit identifier ``commit_identifier``),
    written by ``writes`` in a thread each (one, or one a bucket routing's write)."""

    def __init__(self, writes: Sequence[TableWrite], commit_identifier: int) -> None:
        #: How long the attempt waits for a lane (None: as long as it takes).
        self._timeout_s = writes[0].timeout_s if writes else None
        self._location = writes[0].location if writes else ""
        self._lock = threading.Lock()
        #: The first failure of a lane: the attempt's.
        self._failure: BaseException | None = None
        self._prepare_asked = False
        self._taken = False
        self._closed = False
        self._given_up = False
        self._lanes = [_Lane(self, write, commit_identifier) for write in writes]

    def write(self, data: Any, kinds: Sequence[str] | None, spans: Sequence[Sequence[Span]] | None = None) -> None:
        """Queue ``data`` (with its rows' ``kinds``, as :meth:`TableWrite.write_arrow`
        takes them): with ``spans`` (rows in bucket order, :mod:`tablelog.store.bucket_routing`)
        each lane's spans of them, else every row for the one lane. Raises the attempt's
        failure instead when a lane failed."""
        self._raise_failure()
        if self._prepare_asked:
            raise RuntimeError("the data files of this write attempt are being prepared: nothing more can be written")
        if spans is None:
            self._put(self._lanes[0], (data, kinds, None))
            return
        for lane, lane_spans in zip(self._lanes, spans, strict=True):
            if lane_spans:
                self._put(lane, (data, kinds, lane_spans))

    def _put(self, lane: _Lane, item: tuple[Any, Any, Any]) -> None:
        try:
            lane.queue.put(item, timeout=self._timeout_s)
        except queue.Full:
            self._give_up("writing its rows")

    def prepare(self) -> None:
        """Have the lanes prepare the commit once they have written every row queued
        (beside the caller; :meth:`prepared` waits for it)."""
        if not self._prepare_asked:
            self._prepare_asked = True
            for lane in self._lanes:
                lane.queue.put(_PREPARE)

    def prepared(self) -> list[Any]:
        """The commit messages of every file the attempt wrote (picklable); raises the
        attempt's failure when a lane failed."""
        self.prepare()
        deadline = None if self._timeout_s is None else time.monotonic() + self._timeout_s
        for lane in self._lanes:
            if not lane.done.wait(None if deadline is None else max(deadline - time.monotonic(), 0.0)):
                self._give_up("preparing its files")
        self._raise_failure()
        self._taken = True
        return [message for lane in self._lanes for message in lane.messages]

    def close(self, *, wait: bool = True) -> None:
        """Stop the lanes; the files of an attempt whose messages were not taken (it failed
        or was given up) are deleted, rows still queued are not written. ``wait``: until
        the lanes' threads have ended."""
        if not self._closed:
            self._closed = True
            for lane in self._lanes:
                # A full queue is drained by its lane (which writes nothing more), which then
                # ends by itself: closing never waits on a lane (a finalizer may run in one).
                with contextlib.suppress(queue.Full):
                    lane.queue.put_nowait(_CLOSE)
        if wait and not self._given_up:
            for lane in self._lanes:
                lane.thread.join()

    def _give_up(self, doing: str) -> None:
        self.fail(StoreUnavailableError(
            f"a write attempt's data files were not written within s3.write-timeout={self._timeout_s:g} s "
            f"(it was {doing}): the object store holding {self._location} did not answer; the attempt is given "
            "up and nothing of it is committed: make it again once the store is reachable"))
        self._given_up = True  # from now on nothing waits for the lanes: one may never return
        _ABANDONED[:] = [thread for thread in _ABANDONED if thread.is_alive()]  # those that came back
        _ABANDONED.extend(lane.thread for lane in self._lanes if lane.thread.is_alive())
        self._raise_failure()

    def fail(self, failure: BaseException) -> None:
        with self._lock:
            if self._failure is None:
                self._failure = failure

    @property
    def stopped(self) -> bool:
        """Whether the lanes are to write nothing more: the attempt failed or is closed."""
        return self._failure is not None or self._closed

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def taken(self) -> bool:
        return self._taken

    def _raise_failure(self) -> None:
        if self._failure is not None:
            self.close()  # before the caller hears of it: the attempt's files are deleted
            raise self._failure


class _Lane:
    """One thread, the one user of one write of the attempt's data files."""

    def __init__(self, lanes: FilesLanes, write: TableWrite, commit_identifier: int) -> None:
        self.lanes = lanes
        self.write = write
        self.commit_identifier = commit_identifier
        self.queue: queue.Queue[Any] = queue.Queue(QUEUE_DEPTH)
        self.messages: list[Any] = []
        #: Writes taken from the queue, not written yet (:data:`HOLD_BYTES`), and their bytes.
        self._held: list[Any] = []
        self._held_bytes = 0
        #: Set when this lane has prepared its files, failed, or will prepare none (the attempt failed).
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, name="tablelog-files", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            while (item := self.queue.get()) is not _CLOSE:
                if self.lanes.stopped:
                    if item is _PREPARE:
                        self.done.set()
                    if self.lanes.closed and self.queue.empty():
                        break
                    continue  # drained: the attempt is over
                try:
                    if item is _PREPARE:
                        self._write_held()
                        self.messages = self.write.prepare_commit(self.commit_identifier)
                        self.done.set()
                    else:
                        self._hold(item)
                except BaseException as err:  # noqa: BLE001 - any failure fails the attempt, reported to its thread
                    self.lanes.fail(err)
                    self.done.set()
        finally:
            self.done.set()
            self._release()

    def _hold(self, item: tuple[Any, Any, Any]) -> None:
        data, _, spans = item
        rows = data.num_rows if spans is None else sum(stop - start for _, start, stop in spans)
        self._held.append(item)
        self._held_bytes += data.nbytes * rows // max(data.num_rows, 1)
        if self._held_bytes >= HOLD_BYTES:
            self._write_held()

    def _write_held(self) -> None:
        held, self._held, self._held_bytes = self._held, [], 0
        for data, kinds, spans in held:
            self.write.write_arrow(data, kinds, spans)

    def _release(self) -> None:
        """Close the write, which deletes the files it holds unprepared; delete the
        prepared ones too unless the attempt took them for its commit."""
        messages, self.messages = self.messages, []
        try:
            if messages and not self.lanes.taken:
                self.write.abort(messages)
        except Exception:  # noqa: BLE001 - the attempt failed: its files are orphans at worst
            log.warning("files written for a failed write attempt were not deleted", exc_info=True)
        finally:
            try:
                self.write.close()
            except Exception:  # noqa: BLE001 - reported, not raised: nothing waits for this thread's outcome
                log.warning("closing a data file writer of a write attempt failed", exc_info=True)
