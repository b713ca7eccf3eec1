"""Snapshot expiry with Paimon's options and semantics (``ExpireSnapshotsImpl.expire``).

Of the snapshots ``earliest..latest``, expiry keeps:

- the ``snapshot.num-retained.min`` newest ones, always;
- every one younger than ``snapshot.time-retained``: snapshot N goes only once snapshot
  N + 1 is older than that (so a reader that saw N within the retention time still finds
  N's successor);
- every one from the ``nextSnapshot`` of each registered consumer on (Paimon's
  ``consumer-id``); a consumer not seen for ``consumer.expiration-time`` is removed first,
  and holds nothing;
- never more than ``snapshot.num-retained.max``: older ones go even if they are young
  (as in Paimon, a consumer still holds them);

and removes at most ``snapshot.expire.limit`` snapshots per run. It runs after each
successful commit, in the writer's background maintainer (:mod:`tablelog.commit.maintenance`;
in the commit with ``snapshot.expire.execution-mode = sync``, :func:`expire_after_commit`):
an error there is logged, the commit stands, and the next commit tries again; and from
``tablelog expire`` and ``tablelog compact --follow``. ``write-only`` tables expire only there. The files go in
Paimon's order (:mod:`tablelog.store.expiry`).
"""

from __future__ import annotations

import datetime
import logging
import time
from typing import TYPE_CHECKING

import attrs

from tablelog.store.expiry import ExpiredFiles

if TYPE_CHECKING:
    from tablelog.table_view import TableView

log = logging.getLogger("tablelog.expiry")


@attrs.frozen
class ExpireResult:
    """What one expiry run did (or, with ``dry_run``, would do)."""

    expired: ExpiredFiles = ExpiredFiles()
    #: The oldest snapshot kept after the run (None: the table has no snapshot).
    earliest_kept: int | None = None
    latest: int | None = None
    #: Consumers removed because they were not seen for ``consumer.expiration-time``.
    consumers_removed: tuple[str, ...] = ()
    #: Why no older snapshot expired: which option or consumer holds the earliest kept one.
    held_by: str = ""
    dry_run: bool = False
    #: False when another process was expiring this table's snapshots (nothing was done).
    ran: bool = True


def _millis(delta: datetime.timedelta) -> int:
    return delta // datetime.timedelta(milliseconds=1)


def expire_snapshots(table: TableView, *, dry_run: bool = False, now_millis: int | None = None) -> ExpireResult:
    """Expire what the table's options allow (see the module docstring)."""
    store = table.files
    with store.expire_lock() as may_run:
        if not may_run:
            return ExpireResult(dry_run=dry_run, ran=False, held_by="another process is expiring")
        return _expire(table, dry_run, int(time.time() * 1000) if now_millis is None else now_millis)


def _expire(table: TableView, dry_run: bool, now: int) -> ExpireResult:
    store, options = table.files, table.options
    removed = _expire_consumers(table, dry_run, now)
    latest_snapshot = store.latest_snapshot()
    if latest_snapshot is None:
        return ExpireResult(consumers_removed=removed, dry_run=dry_run)
    latest = latest_snapshot.id
    earliest = store.earliest_snapshot_id() or latest
    low = max(latest - options.snapshot_num_retained_max + 1, earliest)
    end, held_by = latest - options.snapshot_num_retained_min + 1, "snapshot.num-retained.min"
    consumers = {c.consumer_id: c.next_snapshot for c in store.consumers().all() if c.consumer_id not in removed}
    if consumers:
        slowest = min(consumers, key=lambda c: consumers[c])
        if consumers[slowest] < end:
            end, held_by = consumers[slowest], f"consumer {slowest!r}"
    if earliest + options.snapshot_expire_limit < end:
        end, held_by = earliest + options.snapshot_expire_limit, "snapshot.expire.limit"
    older_than = now - _millis(options.snapshot_time_retained)
    for snapshot_id in range(low, end):
        successor = store.snapshot(snapshot_id + 1)
        if successor is not None and older_than <= successor.time_millis:
            end, held_by = snapshot_id, "snapshot.time-retained"
            break
    if end <= earliest:
        return ExpireResult(earliest_kept=earliest, latest=latest, consumers_removed=removed,
                            held_by=held_by, dry_run=dry_run)
    expired = store.snapshot_deletion().expire(earliest, end, dry_run=dry_run)
    if expired.snapshots:
        log.info("table %r: expired snapshots %d..%d%s", table.identifier, expired.snapshots[0],
                 expired.snapshots[-1], " (dry run)" if dry_run else "")
    return ExpireResult(expired, end, latest, removed, held_by, dry_run)


def _expire_consumers(table: TableView, dry_run: bool, now: int) -> tuple[str, ...]:
    lifetime = table.options.consumer_expiration_time
    if lifetime is None:
        return ()
    cutoff = now - _millis(lifetime)
    consumers = table.files.consumers()
    if dry_run:
        return tuple(c.consumer_id for c in consumers.all()
                     if c.modified_millis is not None and c.modified_millis < cutoff)
    return tuple(consumers.remove_unseen_since(cutoff))


#: Commit times of snapshots, by (table path, snapshot id): snapshot files never change,
#: so a committer reads the one it checks (the earliest snapshot's successor) once.
_SNAPSHOT_TIMES: dict[tuple[str, int], int] = {}


def _snapshot_time(table: TableView, snapshot_id: int) -> int | None:
    key = (table.files.path, snapshot_id)
    if key not in _SNAPSHOT_TIMES:
        snapshot = table.files.snapshot(snapshot_id)
        if snapshot is None:
            return None
        if len(_SNAPSHOT_TIMES) > 4096:
            _SNAPSHOT_TIMES.clear()
        _SNAPSHOT_TIMES[key] = snapshot.time_millis
    return _SNAPSHOT_TIMES[key]


def _nothing_can_expire(table: TableView, latest: int, now: int) -> bool:
    """What a commit checks first: whether the newest snapshots the options keep and the
    age of the earliest snapshot's successor already hold every snapshot (the hint, the
    earliest snapshot, and the successor's time once); only then are the consumers listed."""
    store, options = table.files, table.options
    earliest = store.earliest_snapshot_id(latest_known=True)
    if earliest is None:
        return True
    if latest - options.snapshot_num_retained_min + 1 <= earliest:
        return True
    if latest - options.snapshot_num_retained_max + 1 > earliest:
        return False
    successor = _snapshot_time(table, earliest + 1)
    return successor is not None and now - _millis(options.snapshot_time_retained) <= successor


def expire_if_due(table: TableView, latest: int) -> ExpireResult | None:
    """Expiry after snapshot ``latest``, when the options let any snapshot expire (None:
    none can). Unseen consumers are removed when snapshots could otherwise expire (and by
    every ``tablelog expire``)."""
    if _nothing_can_expire(table, latest, int(time.time() * 1000)):
        return None
    return expire_snapshots(table)


def expire_after_commit(table: TableView, latest: int) -> ExpireResult | None:
    """:func:`expire_if_due` after a successful commit of snapshot ``latest``, in the
    commit (``snapshot.expire.execution-mode = sync``): never raises (the commit has
    happened); an error is logged and the next commit's expiry tries again."""
    try:
        return expire_if_due(table, latest)
    except Exception as err:  # any failure: the commit stands, the next one retries
        log.warning(
            "table %r: snapshot expiry after the commit failed (%s: %s); the commit is done, and "
            "the next commit (or `tablelog expire`) tries again", table.identifier, type(err).__name__, err,
        )
        return None
