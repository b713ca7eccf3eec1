"""Writes to a table whose log carries the table's changelog rather than the writes
(a merge engine other than ``deduplicate``, or ``changelog-producer = lookup``;
:attr:`tablelog.merging.MergeOptions.merged_changelog`).

Paimon emits that changelog with its ``lookup`` producer: once per commit and key, the
key's row before the commit and its row after, compared by the rule of
:func:`tablelog.merging.changelog`. tablelog computes the same thing in two places:

- the write attempt (:class:`PendingRows`, then :func:`merged_write` at ``finish()``)
  folds each key's rows as Paimon's write buffer does, looks up the key's records at the
  latest snapshot (its *base*), and produces the changes from the key's row there to its
  row with the attempt's record merged in. The data files get the folded records, so
  the table's merge stays right whatever the log says;
- the committer (:mod:`tablelog.commit.merged_repair`) keeps those changes when no other
  snapshot since the base, and no other attempt of the same commit, wrote the same key;
  otherwise it computes the commit's changes again from the snapshot it commits after.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import pyarrow as pa

from tablelog.merging import (
    KeyValue,
    MergeError,
    MergeOptions,
    changelog,
    merge,
    merged_row,
    writable,
)
from tablelog.records import RowKind

if TYPE_CHECKING:
    from tablelog.store import TableFiles

#: The sequence number given to an attempt's own record of a key when its changes are
#: computed: newer than every record in the table (the writer's sequence numbers follow
#: the bucket's largest, which the committer checks when another writer came between).
NEWEST = 2**62

Key = tuple[Any, ...]


@attrs.frozen
class MergedWrite:
    """An attempt's writes folded per key, and the changes they make."""

    #: One record per key, as the data files get them, with its kind.
    records: pa.Table
    kinds: list[RowKind]
    #: The changes of the table's rows (whole rows), with their kinds, in key order of ``records``.
    changes: pa.Table
    change_kinds: list[RowKind]
    #: The snapshot the changes were computed against (0: before the first; None: no
    #: changes computed), and the primary keys written (what the committer checks).
    base_snapshot: int | None = None
    keys: pa.Table | None = None


class PendingRows:
    """The rows of one write attempt on a merged-changelog table, kept until it finishes:
    its changes are those of the whole attempt, one per key (as Paimon's are one per
    commit), not one per ``write()`` call."""

    def __init__(self, options: MergeOptions, table: str) -> None:
        self.options = options
        self._table = table
        self._rows: list[pa.Table] = []
        self._kinds: list[RowKind] = []

    @property
    def empty(self) -> bool:
        return not self._kinds

    def add(self, arrow: pa.Table, kinds: Sequence[RowKind]) -> None:
        """Keep ``arrow``'s rows; the ones the table drops (``ignore-delete``,
        ``ignore-update-before``) are left out. A retraction the engine refuses raises
        here, before anything of the attempt is written."""
        keep = [i for i, kind in enumerate(kinds) if writable(kind, self.options)]
        if len(keep) != len(kinds):
            arrow = arrow.take(pa.array(keep, pa.int64()))
            kinds = [kinds[i] for i in keep]
        retractions = [i for i, kind in enumerate(kinds) if kind.is_retraction]
        if retractions:
            rows = arrow.take(pa.array(retractions, pa.int64())).to_pylist()
            for index, row in zip(retractions, rows, strict=True):
                try:
                    merge([KeyValue(kinds[index], row, 0)], self.options)
                except MergeError as err:
                    raise MergeError(
                        f"table {self._table!r}: a {kinds[index].value} row is refused by the table's merge "
                        f"engine {self.options.engine.value!r}: {err}; nothing was written"
                    ) from None
        if arrow.num_rows:
            self._rows.append(arrow)
            self._kinds.extend(kinds)

    def fold(self, schema: pa.Schema) -> tuple[list[Key], list[KeyValue]]:
        """Each key's rows folded as Paimon's write buffer folds them (one record stays as
        written; several are merged with the table's engine), keys in first-write order;
        a key whose merge keeps nothing is left out."""
        if not self._rows:
            return [], []
        rows = pa.concat_tables([t.cast(schema) for t in self._rows]).to_pylist()
        by_key: dict[Key, list[KeyValue]] = {}
        key_columns = self.options.primary_key
        for sequence, (row, kind) in enumerate(zip(rows, self._kinds, strict=True)):
            by_key.setdefault(tuple(row[c] for c in key_columns), []).append(KeyValue(kind, row, sequence))
        keys: list[Key] = []
        folded: list[KeyValue] = []
        for key, records in by_key.items():
            record = records[0] if len(records) == 1 else merge(records, self.options)
            if record is not None:
                keys.append(key)
                folded.append(record)
        return keys, folded


def key_table(keys: Sequence[Key], options: MergeOptions) -> pa.Table:
    """``keys`` as a table of the primary-key columns."""
    columns = options.primary_key
    return pa.table({c: pa.array([k[i] for k in keys], options.types[c]) for i, c in enumerate(columns)})


def merged_write(files: TableFiles, schema: pa.Schema, pending: PendingRows, *, changes: bool = True) -> MergedWrite:
    """The attempt's folded records and, with ``changes`` (a table with a log), their
    changes against the latest snapshot, its base."""
    options = pending.options
    keys, folded = pending.fold(schema)
    records = pa.Table.from_pylist([dict(r.row) for r in folded], schema=schema)
    kinds = [r.kind for r in folded]
    if not changes:
        return MergedWrite(records, kinds, schema.empty_table(), [])
    latest = files.latest_snapshot()
    base = None if latest is None else latest.id
    stored = files.key_records(base, key_table(keys, options)) if keys else {}
    new = {key: [attrs.evolve(record, sequence=NEWEST)] for key, record in zip(keys, folded, strict=True)}
    change_rows, change_kinds = key_changes(keys, stored, new, options)
    return MergedWrite(
        records, kinds, pa.Table.from_pylist(change_rows, schema=schema), change_kinds,
        base_snapshot=base or 0, keys=records.select(list(options.primary_key)),
    )


def key_changes(
    keys: Iterable[Key], stored: Mapping[Key, list[KeyValue]], new: Mapping[Key, list[KeyValue]],
    options: MergeOptions,
) -> tuple[list[Mapping[str, Any]], list[RowKind]]:
    """Per key, the changes from the merge of its ``stored`` records to the merge of
    those and its ``new`` ones (Paimon's lookup rule), in the order of ``keys``."""
    rows: list[Mapping[str, Any]] = []
    kinds: list[RowKind] = []
    for key in keys:
        before_records = stored.get(key, [])
        before = merged_row(merge(before_records, options)) if before_records else None
        after = merged_row(merge([*before_records, *new.get(key, [])], options))
        for kind, row in changelog(before, after, options):
            rows.append(row)
            kinds.append(kind)
    return rows, kinds
