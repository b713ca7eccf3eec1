"""Log retention the core drives: what the table still needs of the log, and deleting
what comes before it in a log that can (``delete_before``: the file log's segments, or
any finer grain a plugin deletes at, down to single records).

A reader may start at any retained snapshot: a transactional reader reads the ranges the
snapshots after its position committed, an eventual (or hybrid) reader starts at the end
positions a snapshot recorded. So the earliest position the snapshots need in a
partition is the smallest of the retained log commits' range starts and end positions
there (:func:`needed_positions`). Registered readers (consumer ids) are covered by it:
expiry keeps every snapshot from a consumer's next one on. Write attempts not committed
yet need their records too: each holds a *lease* naming where the log ended before its
first produce (:mod:`tablelog.commit.leases`), and retention keeps every live lease's
positions (:func:`kept_positions`). So a table that keeps its first snapshot can still
lose records of the log: those of attempts that gave up, or whose lease expired.

What a retention run reads, in this order, and why the order is safe without a lock
between it and the writers and committers (an object store has none):

1. the log's end positions ``E``;
2. the live leases;
3. the snapshots' needs.

It deletes, in each partition the snapshots need, before the smallest of the three. Take
a record r of an attempt A that may still commit, and A's lease, written before r was
produced and removed only after A's snapshot exists (or when A gives up):

- A's lease was there when read (2): r is at or after its positions, kept.
- It was written after (2): r was produced after (1), so r is at or after ``E``, kept.
  (Without ``E``, snapshots committed between (2) and (3) while older ones expired could
  need only positions after r.)
- It was removed before (2) because A committed: A's snapshot existed before (3), so the
  snapshots' needs hold r (or that snapshot has expired, and nothing needs r).

Reading the snapshots first and the leases second would lose r when A commits and
removes its lease between the two reads. A lease that expired is deleted and protects
nothing: the committer then refuses a commit whose records are gone
(``_check_not_deleted``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

import attrs

from tablelog.commit.history import log_commits
from tablelog.commit.leases import live_leases
from tablelog.identity import TABLE_ID_PROPERTY
from tablelog.logs.pool import release

if TYPE_CHECKING:
    from tablelog.logs.client import LogClient
    from tablelog.logs.pool import LogPool
    from tablelog.store import TableFiles
    from tablelog.table_view import TableView

logger = logging.getLogger("tablelog.retention")

# (table path, table id) -> (earliest snapshot id, newest snapshot walked, needed
# positions of the table topic, of the projection stream): after each commit only the new
# snapshots are walked, until expiry moves the earliest. The table id tells a table
# created again at the same path from the old one.
_Needs = tuple[dict[int, int], dict[int, int]]
_walked: dict[tuple[str, str], tuple[int, int, _Needs]] = {}
_walked_lock = threading.Lock()


def needed_positions(store: TableFiles, *, projection: bool = False) -> dict[int, int]:
    """Per partition, the earliest log position a retained snapshot needs (partitions no
    retained snapshot has committed to are absent: nothing there may be deleted).
    ``projection``: of the log's projection stream (:mod:`tablelog.formats.projection`)."""
    return _needs(store)[1 if projection else 0]


def _needs(store: TableFiles) -> _Needs:
    earliest = store.earliest_snapshot_id()
    if earliest is None:
        return {}, {}
    key = (store.path, store.properties.get(TABLE_ID_PROPERTY, ""))
    with _walked_lock:
        cached = _walked.get(key)
    if cached and cached[0] == earliest:
        after, needed, projected = cached[1], dict(cached[2][0]), dict(cached[2][1])
    else:
        after, needed, projected = earliest - 1, {}, {}
    newest = after
    for snapshot, record in log_commits(store, after=after):
        newest = snapshot.id
        for partition, end in record.end_positions.items():
            needed[partition] = min(needed.get(partition, end), end)
        for produced in record.ranges:
            needed[produced.partition] = min(needed.get(produced.partition, produced.first), produced.first)
        for produced in record.projection.ranges if record.projection is not None else ():
            projected[produced.partition] = min(projected.get(produced.partition, produced.first), produced.first)
    if store.earliest_snapshot_id() == earliest:  # not expired meanwhile: the walk covered all
        with _walked_lock:
            _walked[key] = (earliest, newest, (dict(needed), dict(projected)))
    return needed, projected


def earliest_of(*needs: Mapping[int, int]) -> dict[int, int]:
    """The per-partition minimum of several needs (retained snapshots, each consumer)."""
    result: dict[int, int] = {}
    for need in needs:
        for partition, position in need.items():
            result[partition] = min(result.get(partition, position), position)
    return result


def kept_positions(table: TableView, log: LogClient, *, projection: bool = False) -> dict[int, int]:
    """Per partition of ``log`` (the table topic, or the projection stream's), the earliest
    position retention keeps: the snapshots' need, capped by every live writer lease and by
    the log's end, read in the order the module docstring explains. Partitions the
    snapshots do not need are absent: nothing there may be deleted."""
    ends = log.end_positions(list(range(table.log_partitions)))
    leases = [lease.projection if projection else lease.topic for lease in live_leases(table)]
    kept = {}
    for partition, needed in needed_positions(table.files, projection=projection).items():
        holds = [lease[partition] for lease in leases if partition in lease]
        kept[partition] = min(needed, ends.get(partition, needed), *holds)
    return kept


def truncate_log(table: TableView, log: LogClient, needed: Mapping[int, int] | None = None) -> dict[int, int] | None:
    """Delete what ``log`` holds before ``needed`` (default :func:`kept_positions`); the
    earliest positions it then holds, or None for a log that keeps its own retention."""
    if not log.deletes_before:
        return None
    wanted = dict(kept_positions(table, log) if needed is None else needed)
    return log.delete_before(wanted)


def truncate_log_after_commit(table: TableView, log: LogClient, log_pool: LogPool | None = None) -> None:
    """The committer's retention run, with the log client of the commit (and, for the
    projection stream, one from ``log_pool``). Never raises: the commit has happened,
    and what is not deleted now is deleted after a later commit."""
    if not log.deletes_before:
        return
    try:
        truncate_log(table, log)
        if table.projection:
            truncate_projection(table, log_pool)
    except Exception as err:  # noqa: BLE001 -- retention must not fail the commit
        logger.warning("table %r: log retention after commit failed (the commit stands): %s", table.identifier, err)


def truncate_projection(table: TableView, log_pool: LogPool | None) -> None:
    """Delete what the projection stream holds before what the table needs of it."""
    if not needed_positions(table.files, projection=True):
        return
    config = table.projection_log_config()
    client = log_pool.checkout(table, config) if log_pool is not None else table.open_projection_log()
    reusable = False
    try:
        client.delete_before(kept_positions(table, client, projection=True))
        reusable = True
    finally:
        release(client, log_pool, reusable=reusable)


@attrs.frozen
class PartitionRetention:
    """One log partition's retention against what the retained snapshots need."""

    partition: int
    earliest: int  # the earliest position the log holds
    needed: int | None  # the earliest the oldest retained snapshot needs (None: nothing there)
    end: int

    @property
    def short(self) -> bool:
        """The log no longer holds positions a retained snapshot needs: its retention
        is shorter than the snapshots'."""
        return self.needed is not None and self.earliest > self.needed


def retention_report(table: TableView, log: LogClient) -> list[PartitionRetention]:
    """Per log partition: what the log holds against what the retained snapshots need."""
    needed = needed_positions(table.files)
    return retention_against(held_positions(table, log), needed)


def held_positions(table: TableView, log: LogClient) -> dict[int, tuple[int, int]]:
    """Per log partition: the earliest position the log holds, and its end."""
    from tablelog.records import SeekSpec

    partitions = list(range(table.log_partitions))
    ends = log.end_positions(partitions)
    return {p: (log.seek(p, SeekSpec.earliest()), ends.get(p, 0)) for p in partitions}


def retention_against(held: Mapping[int, tuple[int, int]], needed: Mapping[int, int]) -> list[PartitionRetention]:
    """:func:`held_positions` against the positions the retained snapshots need."""
    return [PartitionRetention(p, earliest, needed.get(p), end) for p, (earliest, end) in held.items()]
