"""Writer leases: how a write attempt that may still commit keeps log retention
(:mod:`tablelog.commit.retention`) from deleting the records it flushed.

Only a log whose retention tablelog drives (one with ``delete_before``) needs them: on
Kafka, Pulsar or any log that keeps records by its own retention, no lease is written.

- The attempt (:class:`AttemptLease`, held by a :class:`~tablelog.writing.write_task.WriteTask`, on a
  Spark executor too) reads the log's end positions and writes its lease *before* its
  first produce, so that its records lie at or after the positions a lease names, and
  any retention that reads the leases after a record exists finds its lease.
- It writes the lease again at its flush, and at a write when the last write of it is
  due for a refresh: a lease is live while it was written within
  ``log.writer.expiration-time`` (as Paimon's consumers expire).
- It is removed when its attempt gives up (``abort``, a failed ``finish``), and by the
  committer once the attempt's records are in a snapshot (:func:`release_leases`), or
  once the commit is known to be a replay that commits them never.
- Retention keeps every record from a live lease's positions on, and deletes the
  leases that expired (:func:`live_leases`): an attempt silent for longer is taken for
  dead, and its commit is refused if its records are gone meanwhile.
"""

from __future__ import annotations

import datetime
import logging
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

from tablelog.store.leases import WriterLease

if TYPE_CHECKING:
    from tablelog.commit.log_commit import WriteReceipt
    from tablelog.logs.client import LogClient
    from tablelog.table_view import TableView

logger = logging.getLogger("tablelog.retention")

#: How often a lease is written again at a write, at most (a quarter of
#: ``log.writer.expiration-time`` when that is shorter), as a consumer's progress is.
_REFRESH_S = 60.0


class AttemptLease:
    """The lease of one write attempt (token), written on its first produce."""

    def __init__(self, table: TableView, token: str) -> None:
        self._table = table
        self._token = token
        self._lease: WriterLease | None = None
        self._written_at = 0.0
        lifetime = table.options.log_writer_expiration_time
        self._refresh_s = min(_REFRESH_S, lifetime / datetime.timedelta(seconds=4))

    def hold(self, log: LogClient, projection_log: LogClient | None) -> None:
        """Before a produce: write the lease on the first one (where the log deletes),
        write it again when due."""
        if self._lease is not None:
            if time.monotonic() - self._written_at >= self._refresh_s:
                self.refresh()
            return
        if not log.deletes_before:
            return
        partitions = list(range(self._table.log_partitions))
        projection = projection_log.end_positions(partitions) if projection_log is not None else {}
        self._lease = WriterLease(self._token, log.end_positions(partitions), projection)
        self.refresh()

    def refresh(self) -> None:
        """Write the lease again (it is live from now on); nothing when none is held."""
        if self._lease is None:
            return
        self._table.files.leases().write(self._lease)
        self._written_at = time.monotonic()

    def release(self) -> None:
        """Remove the lease: the attempt gave up, or holds no records."""
        if self._lease is not None:
            self._lease = None
            self._table.files.leases().remove(self._token)


def log_deletes_before(table: TableView) -> bool:
    """Whether the table's log has ``delete_before`` (and so its writers leases), asked
    without a connection (a replayed commit, a Spark job's abort, which open none)."""
    from tablelog.logs.discovery import load_log_system

    return table.options.log_enabled and "delete_before" in load_log_system(table.options.log_system).implemented


def release_leases(table: TableView, receipts: Iterable[WriteReceipt]) -> None:
    """Remove the leases of the attempts of ``receipts`` (committed, or never to be):
    called only for logs that delete. Never raises: a lease left behind only holds records
    until it expires."""
    tokens = sorted({r.token for r in receipts if r.ranges or r.projection_ranges})
    if not tokens:
        return
    leases = table.files.leases()
    for token in tokens:
        try:
            leases.remove(token)
        except Exception as err:  # noqa: BLE001 -- the commit stands; the lease expires
            logger.warning("table %r: the writer lease of token %s was not removed (it expires): %s",
                           table.identifier, token, err)


def live_leases(table: TableView, now_millis: int | None = None) -> list[WriterLease]:
    """The leases written within ``log.writer.expiration-time``; the others are deleted."""
    now = int(time.time() * 1000) if now_millis is None else now_millis
    cutoff = now - table.options.log_writer_expiration_time // datetime.timedelta(milliseconds=1)
    leases = table.files.leases()
    live = []
    for lease in leases.all():
        if lease.modified_millis is not None and lease.modified_millis < cutoff:
            logger.info("table %r: the writer lease of token %s expired (not written since %d ms ago)",
                        table.identifier, lease.token, now - lease.modified_millis)
            leases.remove(lease.token)
        else:
            live.append(lease)
    return live
