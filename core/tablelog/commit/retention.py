"""Log retention the core drives: what the retained snapshots still need of the log, and
deleting what comes before it in a log that can (the built-in file log's segments).

A reader may start at any retained snapshot: a transactional reader reads the ranges the
snapshots after its position committed, an eventual (or hybrid) reader starts at the end
positions a snapshot recorded. So the earliest position needed in a partition is the
smallest of the retained log commits' range starts and end positions there
(:func:`needed_positions`). Registered readers (consumer ids) need positions of their
own: :func:`earliest_of` combines such needs, and :func:`truncate_log` takes the result.
While a table keeps its first snapshot, the file log keeps everything.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

import attrs

from tablelog.commit.history import log_commits
from tablelog.identity import TABLE_ID_PROPERTY
from tablelog.log_pool import release

if TYPE_CHECKING:
    from tablelog.log_pool import LogPool
    from tablelog.registry import LogClient
    from tablelog.store import PaimonTable
    from tablelog.table_view import TableView

logger = logging.getLogger("tablelog.retention")

# (table path, table id) -> (earliest snapshot id, newest snapshot walked, needed
# positions of the table topic, of the projection stream): after each commit only the new
# snapshots are walked, until expiry moves the earliest. The table id tells a table
# created again at the same path from the old one.
_Needs = tuple[dict[int, int], dict[int, int]]
_walked: dict[tuple[str, str], tuple[int, int, _Needs]] = {}
_walked_lock = threading.Lock()


def needed_positions(store: PaimonTable, *, projection: bool = False) -> dict[int, int]:
    """Per partition, the earliest log position a retained snapshot needs (partitions no
    retained snapshot has committed to are absent: nothing there may be deleted).
    ``projection``: of the log's projection stream (:mod:`tablelog.projection`)."""
    return _needs(store)[1 if projection else 0]


def _needs(store: PaimonTable) -> _Needs:
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


def truncate_log(table: TableView, log: LogClient, needed: Mapping[int, int] | None = None) -> dict[int, int] | None:
    """Delete what ``log`` holds before ``needed`` (default :func:`needed_positions`); the
    earliest positions it then holds, or None for a log that keeps its own retention."""
    if not log.deletes_before:
        return None
    wanted = dict(needed_positions(table.store) if needed is None else needed)
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
    """Delete what the projection stream holds before the retained snapshots' need of it."""
    needed = needed_positions(table.store, projection=True)
    if not needed:
        return
    config = table.projection_log_config()
    client = log_pool.checkout(table, config) if log_pool is not None else table.open_projection_log()
    reusable = False
    try:
        client.delete_before(needed)
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
    needed = needed_positions(table.store)
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
