"""Whether the changes write attempts computed for a merged-changelog table still hold
when their commit is made (:mod:`tablelog.writing.merged`).

An attempt computed its changes against its *base* snapshot, as if its records were the
only new ones of their keys. That holds unless another write of one of those keys came
between: a snapshot after the base that added records of the key (a tablelog commit, a
foreign Paimon writer's, an overwrite), or another attempt of the same commit (two Spark
tasks of one micro-batch given the same key). Compactions change no row and never
conflict. A snapshot between that has expired, or whose files cannot be read as added
rows, counts as a conflict: the changes are then computed again, which is always right.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from tablelog.store import DeltaRemovesFilesError
from tablelog.store.key_records import key_tuples

if TYPE_CHECKING:
    from tablelog.commit.log_commit import WriteReceipt
    from tablelog.store import TableFiles


def merged_receipts(receipts: Sequence[WriteReceipt]) -> list[WriteReceipt]:
    """The receipts whose changes were computed against a base snapshot."""
    return [r for r in receipts if r.base_snapshot is not None and r.written_keys is not None]


def has_conflict(files: TableFiles, receipts: Sequence[WriteReceipt], latest: int | None) -> bool:
    """Whether a key of ``receipts`` was written by a snapshot after its attempt's base
    (up to ``latest``, the snapshot the commit follows) or by two of them."""
    merged = merged_receipts(receipts)
    if not merged:
        return False
    key_columns = list(merged[0].written_keys.column_names)
    if len(merged) > 1 and _repeated_key(merged, key_columns):
        return True
    written: dict[int, set[tuple[Any, ...]]] = {}  # keys each snapshot between wrote
    for receipt in merged:
        base = receipt.base_snapshot or 0
        if latest is None or base >= latest:
            continue
        keys = _key_set(receipt.written_keys, key_columns)
        for snapshot_id in range(base + 1, latest + 1):
            if snapshot_id not in written:
                found = _snapshot_keys(files, snapshot_id, key_columns)
                if found is None:
                    return True
                written[snapshot_id] = found
            if not written[snapshot_id].isdisjoint(keys):
                return True
    return False


def _repeated_key(receipts: Sequence[WriteReceipt], key_columns: list[str]) -> bool:
    seen: set[tuple[Any, ...]] = set()
    for receipt in receipts:
        keys = _key_set(receipt.written_keys, key_columns)
        if not seen.isdisjoint(keys):
            return True
        seen |= keys
    return False


def _key_set(table: pa.Table, key_columns: list[str]) -> set[tuple[Any, ...]]:
    return set(key_tuples(table, key_columns))


def _snapshot_keys(files: TableFiles, snapshot_id: int, key_columns: list[str]) -> set[tuple[Any, ...]] | None:
    """The keys snapshot ``snapshot_id`` added records of (none for a compaction); None
    when that cannot be known (expired, or files removed other than by a compaction)."""
    snapshot = files.snapshot(snapshot_id)
    if snapshot is None:
        return None
    if snapshot.commit_kind == "COMPACT":
        return set()
    try:
        delta = files.read_delta(snapshot_id, None)
    except DeltaRemovesFilesError:
        return None
    if delta is None:
        return None
    return _key_set(delta, key_columns)
