"""A partitioned table's partitions as pypaimon sees them: the predicate its scan prunes
the files of other partitions by, the partitions a snapshot has, and the drop of one
(partition expiry: :mod:`tablelog.partition_expiry`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from tablelog.store.pypaimon_internals import delta_plan


def partition_predicate(builder: Any, partitions: Sequence[Mapping[str, Any]]) -> Any:
    """pypaimon's predicate "in any of ``partitions``" (mappings of partition column to
    value, in the column's type) for the read builder ``builder``."""
    predicates = builder.new_predicate_builder()
    ors = []
    for spec in partitions:
        ands = [predicates.is_null(c) if v is None else predicates.equal(c, v) for c, v in spec.items()]
        ors.append(ands[0] if len(ands) == 1 else predicates.and_predicates(ands))
    return ors[0] if len(ors) == 1 else predicates.or_predicates(ors)


@attrs.frozen
class PartitionDrop:
    """In place of a write's data files: "drop the table partition ``spec``", committed as
    Paimon's overwrite of that partition with no new files (``OVERWRITE``), which
    removes every file of it. ``read_snapshot``: the snapshot whose rows of the partition
    the log's ``-D`` records hold; the drop is refused when another commit changed the
    partition since (the log would not hold those rows' removal)."""

    spec: tuple[tuple[str, Any], ...]
    read_snapshot: int

    @property
    def partition(self) -> dict[str, Any]:
        return dict(self.spec)


class PartitionChangedError(Exception):
    """A partition drop found the partition changed since the rows it removes were read."""


def list_partitions(paimon: Any, snapshot_id: int) -> list[dict[str, Any]]:
    """The partitions (their values by partition column) with files at ``snapshot_id``."""
    table = paimon.copy({"scan.snapshot-id": str(snapshot_id)})
    keys = list(table.partition_keys)
    seen: dict[tuple[Any, ...], dict[str, Any]] = {}
    for split in table.new_read_builder().new_scan().plan().splits():
        values = tuple(split.partition.values)
        seen.setdefault(values, dict(zip(keys, values, strict=True)))
    return [seen[values] for values in sorted(seen, key=lambda v: tuple(map(str, v)))]


def check_unchanged_since(paimon: Any, drop: PartitionDrop) -> None:
    """Raise :class:`PartitionChangedError` when a commit after ``drop.read_snapshot``
    added files to its partition, or overwrote any (a compaction changes no rows)."""
    from pypaimon.read.streaming_table_scan import AsyncStreamingTableScan

    manager = paimon.snapshot_manager()
    latest = manager.get_latest_snapshot()
    wanted = tuple(value for _, value in drop.spec)
    for snapshot_id in range(drop.read_snapshot + 1, (latest.id if latest is not None else 0) + 1):
        snapshot = manager.get_snapshot_by_id(snapshot_id)
        if snapshot is None:  # expired meanwhile: what it wrote cannot be told
            raise PartitionChangedError(f"snapshot {snapshot_id} expired before the drop could check it")
        kind = str(snapshot.commit_kind)
        if kind.endswith("COMPACT"):
            continue  # a compaction changes no rows
        if kind.endswith("OVERWRITE"):
            raise PartitionChangedError(f"snapshot {snapshot_id} overwrote partitions since snapshot {drop.read_snapshot}")
        scan = AsyncStreamingTableScan(paimon, prefetch_enabled=False)
        if any(tuple(split.partition.values) == wanted for split in delta_plan(scan, snapshot).splits()):
            raise PartitionChangedError(
                f"snapshot {snapshot_id} wrote to partition {drop.partition} since snapshot {drop.read_snapshot}"
            )
