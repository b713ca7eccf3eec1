"""Maintenance off the commit path: snapshot expiry and compaction in the background.

After a commit, :func:`after_commit` hands the table's maintainer the snapshot id and
the (partition, bucket) pairs the commit wrote, and returns: it only takes a lock to note
them. The maintainer's thread then runs, one step at a time, snapshot expiry and the
compaction of the pairs noted (:func:`tablelog.commit.compaction.compact`, the runs
Paimon's universal compaction picks for pairs past ``num-sorted-run.compaction-trigger``),
committed as a ``COMPACT`` snapshot of its own, its pairs rewritten in a child process of
lower CPU priority (``compaction.background.nice``: :mod:`.compaction_process`), here
when writers wait for it (:data:`BEHIND_FACTOR`). Requests that arrive meanwhile coalesce:
the next run takes the newest snapshot and every pair noted since.

Where it does not run:

- ``write-only`` (Paimon's option): nothing; a dedicated job compacts and expires
  (``tablelog compact --follow``, :mod:`tablelog.compaction_job`).
- ``commit.force-compact`` (Paimon's option), and a ``first-row`` table's level 0 (its
  batch reads skip level 0: Paimon's ``lookup-wait``): the commit compacts before it
  returns. ``snapshot.expire.execution-mode = sync``: the commit expires.

**One maintainer per table per process** (keyed by the table's directory): every writer
and committer of the table in the process feeds it, so one compaction of a pair runs at
a time (two would race, the later losing its work). A
:class:`~tablelog.writing.writer.Writer` holds it while open; closing the last holder
stops it: a cancel flag checked between steps (before expiry, between pairs, before the
commit); a cancelled compaction deletes its new files and commits nothing. A maintainer
no writer holds stops after idling :data:`IDLE_STOP_S`; at interpreter exit every one is.

**Errors** never fail a commit: each is logged and returned with the next commit's
result (:attr:`~tablelog.commit.log_commit.CommitResult.maintenance_error`), and the next
request tries again.

**Backpressure**, as Paimon's writer: while a pair this process wrote has more sorted runs
than ``num-sorted-run.stop-trigger``, a writer's next write waits for the background
compaction (:meth:`Maintainer.wait_for_room`), at most :data:`BACKPRESSURE_MAX_WAIT_S`.
The runs are those of the maintainer's last look at the table plus the files committed
since, so the wait needs no read of the table. Committers without a writer (``Table.commit``,
the Spark sink's driver) do not wait: a commit never waits for a compaction.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from tablelog.commit.compaction import Pair, compact, compact_after_commit
from tablelog.commit.compaction_process import BackgroundRewrites
from tablelog.expiry import expire_after_commit, expire_if_due
from tablelog.options import ExpireExecutionMode

if TYPE_CHECKING:
    from tablelog.table_view import TableView

logger = logging.getLogger("tablelog.maintenance")

#: The longest a write waits for the background compaction of a pair past the stop trigger.
BACKPRESSURE_MAX_WAIT_S = 60.0
#: A compaction is rewritten here (a child's rewrite stopped and redone) when a pair is
#: past ``num-sorted-run.stop-trigger`` and a writer waits, or past this many times it
#: (the writes outpace the child; the Spark sink's driver never waits).
BEHIND_FACTOR = 2
#: A maintainer no writer holds stops its thread after this long without a request.
IDLE_STOP_S = 60.0
#: Errors kept for the next commit's result (the oldest dropped first; all are logged).
_MAX_ERRORS = 10


class Maintainer:
    """One table's background maintenance in this process (see the module docstring)."""

    def __init__(self, table: TableView) -> None:
        self._source = table  # its thread opens a table object of its own from it
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._cancel = threading.Event()  # the running thread's
        self._holders = 0
        # the request: the newest snapshot, the pairs to compact, whether to expire
        self._snapshot: int | None = None
        self._pairs: set[Pair] = set()
        self._expire = False
        self._busy = False
        self._waiting = 0  # writers waiting for room (backpressure)
        self._errors: list[str] = []
        # backpressure: sorted runs per pair at the last look, the pairs this process
        # wrote, and the files of commits after that look
        self._runs: dict[Pair, int] = {}
        self._looked_at = 0
        self._written_pairs: set[Pair] = set()
        self._since_look: list[tuple[int, Pair, int]] = []
        self._rewrites = BackgroundRewrites()  # where pairs are rewritten (a child process)

    # -- the committers' side ------------------------------------------------------------

    def notify(self, table: TableView, snapshot_id: int, pairs: Mapping[Pair, int], *, expire: bool) -> None:
        """Note a commit: snapshot ``snapshot_id`` wrote ``pairs`` (each with its new
        files) to compact, and whether to expire snapshots. Returns at once."""
        with self._cond:
            self._source = table
            self._snapshot = max(snapshot_id, self._snapshot or 0)
            self._pairs.update(pairs)
            self._expire = self._expire or expire
            self._written_pairs.update(pairs)
            self._since_look.extend((snapshot_id, pair, files) for pair, files in pairs.items())
            if self._thread is None or not self._thread.is_alive():
                self._cancel = threading.Event()
                self._thread = threading.Thread(
                    target=self._run, args=(self._cancel,), daemon=True,
                    name=f"tablelog-maintenance-{table.identifier}",
                )
                self._thread.start()
            self._cond.notify_all()

    def take_errors(self) -> str | None:
        """The errors since the last call, one per line (None: none)."""
        with self._cond:
            errors, self._errors = self._errors, []
        return "\n".join(errors) or None

    def wait_for_room(self, stop_trigger: int) -> None:
        """Wait, at most :data:`BACKPRESSURE_MAX_WAIT_S`, while a pair this process wrote
        has more than ``stop_trigger`` sorted runs and the maintainer is at work on it."""
        deadline = time.monotonic() + BACKPRESSURE_MAX_WAIT_S
        with self._cond:
            over = self._over(stop_trigger)
            if not over or not self._working():
                return
            identifier = self._source.identifier
            started = time.monotonic()
            logger.info("table %r: %d pair(s) over num-sorted-run.stop-trigger %d (bucket %d: %d sorted runs): "
                        "the write waits for the background compaction", identifier, len(over), stop_trigger,
                        over[0][0][1], over[0][1])
            while over and self._working():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    logger.warning("table %r: the background compaction did not bring the sorted runs under "
                                   "num-sorted-run.stop-trigger %d within %.0f s; the write goes on",
                                   identifier, stop_trigger, BACKPRESSURE_MAX_WAIT_S)
                    return
                self._waiting += 1
                try:
                    self._cond.wait(remaining)
                finally:
                    self._waiting -= 1
                over = self._over(stop_trigger)
            logger.info("table %r: the write waited %.1f s for the background compaction", identifier,
                        time.monotonic() - started)

    def _over(self, stop_trigger: int) -> list[tuple[Pair, int]]:
        runs = {pair: self._runs.get(pair, 0) for pair in self._written_pairs}
        for _, pair, files in self._since_look:
            runs[pair] += files
        return sorted(((pair, n) for pair, n in runs.items() if n > stop_trigger), key=lambda item: -item[1])

    def _working(self) -> bool:
        alive = self._thread is not None and self._thread.is_alive()
        return alive and (self._busy or bool(self._pairs))

    # -- holders -------------------------------------------------------------------------

    def hold(self) -> None:
        with self._cond:
            self._holders += 1

    def release(self) -> None:
        """A holder is done; the last one stops the maintainer (:meth:`stop`)."""
        with self._cond:
            self._holders = max(0, self._holders - 1)
            last = self._holders == 0
        if last:
            self.stop()

    def stop(self, timeout: float | None = None) -> bool:
        """Cancel what is queued and what runs (at its next step), and wait for the thread
        (at most ``timeout``); True once it has ended."""
        with self._cond:
            thread, self._thread = self._thread, None
            self._cancel.set()
            self._pairs, self._snapshot, self._expire = set(), None, False
            self._cond.notify_all()
        if thread is None or thread is threading.current_thread():
            return True
        if thread.is_alive():
            logger.info("table %r: stopping the background maintenance", self._source.identifier)
        thread.join(timeout)
        return not thread.is_alive()

    # -- the thread ----------------------------------------------------------------------

    def _run(self, cancel: threading.Event) -> None:
        try:
            self._serve_requests(cancel)
        finally:
            self._rewrites.stop()

    def _serve_requests(self, cancel: threading.Event) -> None:
        try:
            table = self._source.opened_again()  # the committers' objects stay theirs alone
        except Exception as err:  # noqa: BLE001 -- surfaced with the next commit
            self._failed("opening the table", err)
            return
        while True:
            with self._cond:
                while not cancel.is_set() and self._snapshot is None:
                    if not self._cond.wait(IDLE_STOP_S) and self._snapshot is None and self._holders == 0:
                        if self._thread is threading.current_thread():
                            self._thread = None
                        return
                if cancel.is_set():
                    return
                snapshot_id, pairs, expire = self._snapshot or 0, self._pairs, self._expire
                self._snapshot, self._pairs, self._expire, self._busy = None, set(), False, True
            try:
                self._serve(table, cancel, snapshot_id, pairs, expire)
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()

    def _serve(self, table: TableView, cancel: threading.Event, snapshot_id: int, pairs: set[Pair],
               expire: bool) -> None:
        try:
            table.refresh_schema()
        except Exception as err:  # noqa: BLE001 -- surfaced with the next commit
            self._failed("reading the table's schema", err)
            return
        if expire and not cancel.is_set():
            self._step("snapshot expiry", lambda: expire_if_due(table, snapshot_id))
        if pairs and not cancel.is_set():
            self._step("compaction", lambda: self._compact(table, cancel, pairs))

    def _compact(self, table: TableView, cancel: threading.Event, pairs: set[Pair]) -> None:
        self._look(table)
        stop_trigger = table.options.stop_trigger

        def behind() -> bool:  # a pair past the stop trigger with writers waiting, or far past it
            with self._cond:
                runs = [n for pair, n in self._over(stop_trigger) if pair in pairs]
                return bool(runs) and (self._waiting > 0 or max(runs) > BEHIND_FACTOR * stop_trigger)

        pace, rewrite = self._rewrites.choose(table, cancel, behind)
        result = compact(table, pairs=pairs, automatic=True, cancelled=cancel.is_set, pace=pace, rewrite=rewrite)
        if result.snapshot_id is not None or result.dropped:
            logger.info("%s", result.summary())
            self._look(table)
            with self._cond:  # still past the trigger (a race lost, writes meanwhile): again
                trigger = table.options.num_sorted_run_compaction_trigger
                again = {pair for pair in pairs if self._runs.get(pair, 0) > trigger}
                if again and not cancel.is_set():
                    self._pairs |= again
                    self._snapshot = self._snapshot or self._looked_at

    def _look(self, table: TableView) -> None:
        """Note each pair's sorted runs at the latest snapshot (for backpressure)."""
        latest = table.files.latest_snapshot()
        if latest is None:
            return
        runs = {(tuple(b.partition), int(b.bucket)): b.sorted_runs
                for b in table.files.compactions().bucket_files(latest.id)}
        with self._cond:
            self._runs, self._looked_at = runs, latest.id
            self._since_look = [entry for entry in self._since_look if entry[0] > latest.id]
            self._cond.notify_all()

    def _step(self, name: str, step: Callable[[], Any]) -> None:
        try:
            step()
        except Exception as err:  # noqa: BLE001 -- a failed step never fails a commit; the next request retries
            self._failed(name, err)

    def _failed(self, step: str, err: Exception) -> None:
        logger.warning("table %r: background %s failed (the commits stand; the next commit tries again): %s: %s",
                       self._source.identifier, step, type(err).__name__, err)
        with self._cond:
            self._errors = [*self._errors, f"{step}: {type(err).__name__}: {err}"][-_MAX_ERRORS:]


_MAINTAINERS: dict[str, Maintainer] = {}
_REGISTRY = threading.Lock()


def maintainer(table: TableView) -> Maintainer:
    """The process's maintainer of ``table`` (made on first use; its thread starts with
    the first request)."""
    with _REGISTRY:
        found = _MAINTAINERS.get(table.files.path)
        if found is None:
            found = _MAINTAINERS[table.files.path] = Maintainer(table)
        return found


@atexit.register
def _stop_all() -> None:
    """At interpreter exit: stop every maintainer (a rewrite in progress ends at its next
    step, deleting its files), before daemon threads are killed mid-write."""
    with _REGISTRY:
        running = list(_MAINTAINERS.values())
    for found in running:
        found.stop()


def after_commit(table: TableView, snapshot_id: int, pairs: Mapping[Pair, int]) -> str | None:
    """The maintenance after a commit of snapshot ``snapshot_id`` that wrote ``pairs``
    (each with its new files), as the table's options say (see the module docstring).
    Returns the background maintenance's errors since the previous commit (None: none).
    Never raises."""
    options = table.options
    if options.write_only:
        return None
    compacted = bool(table.primary_key) and bool(pairs)
    inline = compacted and (options.commit_force_compact or table.files.compactions().compacts_level0_at_commit)
    sync_expiry = options.snapshot_expire_execution_mode is ExpireExecutionMode.SYNC
    if sync_expiry:
        expire_after_commit(table, snapshot_id)
    if inline:
        compact_after_commit(table, set(pairs))
    background = {} if inline or not compacted else dict(pairs)
    if not background and sync_expiry:
        return None
    found = maintainer(table)
    found.notify(table, snapshot_id, background, expire=not sync_expiry)
    return found.take_errors()


class WriterHold:
    """A :class:`~tablelog.writing.writer.Writer`'s hold on its table's maintainer: taken at
    its first commit, released when it closes (the last holder stops the maintainer)."""

    def __init__(self, table: TableView) -> None:
        self._table = table
        self._held: Maintainer | None = None

    def hold(self) -> None:
        if self._held is None:
            self._held = maintainer(self._table)
            self._held.hold()

    def before_round(self) -> None:
        """Backpressure before a round's first write (never with ``write-only``)."""
        options = self._table.options
        if self._held is not None and not options.write_only:
            self._held.wait_for_room(options.stop_trigger)

    def release(self) -> None:
        held, self._held = self._held, None
        if held is not None:
            held.release()
