"""Reader positions: the small JSON value a reader saves and resumes from, and the
checks that a position given back fits the table it is given to.

A position names its table (the table id, see :mod:`tablelog.identity`) and its
topic. Given to a reader, it is refused when it was saved from another table or
topic, and when it is ahead of the table: a snapshot the table does not have yet, a
log position past the end of the log, a partition the log does not have. A saved
position without its table is malformed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from tablelog.commit.log_commit import LogCommitRecord, is_foreign
from tablelog.errors import OptionError, ReaderPositionError
from tablelog.options import Consistency

if TYPE_CHECKING:
    from tablelog.table_view import TableView

_CONSISTENCIES = tuple(c.value for c in Consistency)


@attrs.define
class ReaderPosition:
    """Where a reader is: save :meth:`to_json`, resume with ``table.reader(position=...)``.

    ``snapshot``: transactional readers have returned every change committed up
    to it; with ``full_pending`` its rows are still being returned (from row
    ``full_offset``). ``offsets``: next log position per partition (transactional:
    progress inside snapshot ``snapshot + 1``). ``table`` and ``topic``: whose
    position it is (``None`` only in positions the readers build for themselves, such as
    a Spark task's range).
    """

    consistency: Consistency
    snapshot: int = 0
    offsets: dict[int, int] = attrs.field(factory=dict)
    full_pending: bool = False
    full_offset: int = 0
    # Eventual hybrid reads: where the log part started. A write committed after the
    # full scan whose records lie before it would otherwise fall into a gap.
    horizon: dict[int, int] = attrs.field(factory=dict)
    table: str | None = None
    topic: str | None = None

    def to_json(self) -> str:
        return json.dumps(
            {
                "v": 1,
                **({"table": self.table} if self.table is not None else {}),
                **({"topic": self.topic} if self.topic is not None else {}),
                "consistency": self.consistency.value,
                "snapshot": self.snapshot,
                "offsets": {str(p): o for p, o in sorted(self.offsets.items())},
                "full_pending": self.full_pending,
                "full_offset": self.full_offset,
                "horizon": {str(p): o for p, o in sorted(self.horizon.items())},
            },
            separators=(",", ":"),
        )

    @classmethod
    def parse(cls, value: ReaderPosition | str | Mapping[str, Any]) -> ReaderPosition:
        if isinstance(value, ReaderPosition):
            return attrs.evolve(value, offsets=dict(value.offsets), horizon=dict(value.horizon))
        try:
            doc = json.loads(value) if isinstance(value, str) else dict(value)
            if not isinstance(doc, dict):
                raise TypeError(f"it is a JSON {type(doc).__name__}, not an object")
            missing = [key for key in ("consistency", "snapshot") if key not in doc]
            if missing:
                raise TypeError(f"it has no {' and no '.join(repr(k) for k in missing)}")
            if doc["consistency"] not in _CONSISTENCIES:
                raise TypeError(
                    f"consistency {doc['consistency']!r} is none of {', '.join(map(repr, _CONSISTENCIES))}"
                )
            if doc.get("table") is None:  # no release saved a position without its table's id
                raise TypeError("it has no 'table'")
            return cls(
                consistency=Consistency(doc["consistency"]),
                snapshot=int(doc["snapshot"]),
                offsets={int(p): int(o) for p, o in doc.get("offsets", {}).items()},
                full_pending=bool(doc.get("full_pending", False)),
                full_offset=int(doc.get("full_offset", 0)),
                horizon={int(p): int(o) for p, o in doc.get("horizon", {}).items()},
                table=str(doc["table"]),
                topic=None if doc.get("topic") is None else str(doc["topic"]),
            )
        except (ValueError, KeyError, TypeError) as err:
            # A bare KeyError prints as just the key's repr: say what it means.
            reason = f"it has no {err.args[0]!r}" if isinstance(err, KeyError) else str(err)
            raise OptionError(
                f"invalid reader position {value!r}: {reason}. A position is the JSON object a "
                "reader's `position.to_json()` returned (as saved, with its table, topic, "
                "consistency and snapshot); to start elsewhere, leave it out and set scan.mode"
            ) from None


def log_name(table: TableView) -> str:
    """The topic a position names: ``<system>:<topic>`` (empty for a table without a log)."""
    return f"{table.options.log_system}:{table.topic}" if table.options.log_enabled else ""


def topic_to_check(position: ReaderPosition) -> str | None:
    """The topic a position given back must be of: its own, but for a transactional position
    between snapshots, which names no log position and so resumes in whatever log the
    table has now (its log attached or moved since: :mod:`tablelog.log_change`)."""
    if position.consistency is Consistency.TRANSACTIONAL and not position.offsets:
        return None
    return position.topic


def check_identity(table: TableView, owner: str | None, topic: str | None, what: str = "reader position") -> None:
    """Refuse a position saved from another table (``owner``: its table id) or topic."""
    if owner is not None and owner != table.table_id:
        raise ReaderPositionError(
            f"this {what} was saved from another table (table id {owner}); table {table.identifier!r} "
            f"has id {table.table_id}. A position is valid only for the table it was saved from: "
            "start without one (scan.mode) to read this table"
        )
    if topic is not None and topic != log_name(table):
        raise ReaderPositionError(
            f"this {what} was saved from log {topic!r}; table {table.identifier!r} reads log "
            f"{log_name(table)!r}. Start without a position (scan.mode) to read this table"
        )


def check_snapshot(table: TableView, snapshot: int, what: str = "reader position") -> None:
    """Refuse a snapshot the table does not have yet."""
    latest = table.files.latest_snapshot()
    latest_id = latest.id if latest is not None else 0
    if snapshot > latest_id:
        raise ReaderPositionError(
            f"this {what} is at snapshot {snapshot}, ahead of table {table.identifier!r}, whose latest "
            f"snapshot is {latest_id}: it was not saved from this table (or the table was created "
            "again since). Start without a position (scan.mode) to read this table"
        )


def check_partitions(table: TableView, partitions: Mapping[int, int], what: str = "reader position") -> None:
    """Refuse a partition the table's log does not have."""
    count = table.log_partitions
    unknown = sorted(p for p in partitions if not 0 <= p < count)
    if unknown:
        raise ReaderPositionError(
            f"this {what} has log positions for partition(s) {unknown}; the log of table "
            f"{table.identifier!r} has partitions 0..{count - 1}"
        )


def check_transactional(table: TableView, position: ReaderPosition) -> None:
    """A transactional position's log positions are its progress inside snapshot
    ``snapshot + 1``: that snapshot must exist and have committed records in each of
    those partitions. (How far inside is checked against the log's end, as for eventual
    positions: positions need not be dense, so the ranges alone do not bound it.)"""
    if not position.offsets:
        return
    snapshot = table.files.snapshot(position.snapshot + 1)
    if snapshot is not None and is_foreign(snapshot.properties, snapshot.commit_kind):
        check_foreign_counts(table, position.snapshot + 1, position.offsets)
        return
    record = LogCommitRecord.from_properties(snapshot.properties) if snapshot is not None else None
    if record is None:
        earliest = table.files.earliest_snapshot_id()
        if snapshot is None and earliest is not None and earliest > position.snapshot + 1:
            raise ReaderPositionError(
                f"this reader position is inside snapshot {position.snapshot + 1} of table "
                f"{table.identifier!r}, which has expired (earliest kept: {earliest}): the rest of its "
                "changes cannot be returned. Start without a position (scan.mode=latest-full), and give "
                "readers a consumer-id so that expiry keeps the snapshots they still need"
            )
        raise ReaderPositionError(
            f"this reader position is inside snapshot {position.snapshot + 1}, which table "
            f"{table.identifier!r} does not have (or which committed nothing to the log)"
        )
    by_partition = record.ranges_by_partition()
    for partition in sorted(position.offsets):
        if partition not in by_partition:
            raise ReaderPositionError(
                f"this reader position has a log position in partition {partition} inside snapshot "
                f"{position.snapshot + 1} of table {table.identifier!r}, which committed nothing there"
            )


def inside_foreign_snapshot(table: TableView, position: ReaderPosition) -> bool:
    """Whether a transactional position is inside a snapshot another writer committed:
    its ``offsets`` then count the changes of that snapshot returned per log partition
    (:mod:`tablelog.reading.foreign`), not log positions."""
    if position.consistency is not Consistency.TRANSACTIONAL or not position.offsets:
        return False
    snapshot = table.files.snapshot(position.snapshot + 1)
    return snapshot is not None and is_foreign(snapshot.properties, snapshot.commit_kind)


def check_foreign_counts(table: TableView, snapshot_id: int, counts: Mapping[int, int],
                         what: str = "reader position") -> None:
    """Refuse a negative count of changes returned inside a foreign snapshot."""
    negative = sorted(p for p, n in counts.items() if n < 0)
    if negative:
        raise ReaderPositionError(
            f"this {what} is inside snapshot {snapshot_id} of table {table.identifier!r}, which another "
            f"writer committed, with a negative count of its changes returned in partition(s) {negative}; "
            "the counts there are 0 or more. Start without a position (scan.mode) to read this table"
        )


def check_not_past_ends(table: TableView, offsets: Mapping[int, int], ends: Mapping[int, int],
                        what: str = "reader position") -> None:
    """Refuse log positions past the log's end positions (``ends``)."""
    for partition, offset in sorted(offsets.items()):
        end = ends.get(partition, 0)
        if offset > end:
            raise ReaderPositionError(
                f"this {what} is at log position {offset} of partition {partition}, past the end of "
                f"log {log_name(table)!r} ({end}): it was not saved from this table's log (or the "
                "log was replaced since). Start without a position (scan.mode) to read this table"
            )
