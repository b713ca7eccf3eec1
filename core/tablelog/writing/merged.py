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

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tablelog.merging import (
    KeyValue,
    MergeEngine,
    MergeError,
    MergeOptions,
    changelog,
    merge,
    merged_row,
    writable,
)
from tablelog.merging.engines import single_add_is_the_row
from tablelog.records import RowKind
from tablelog.store.key_records import key_tuples, records_by_key
from tablelog.store.layout import VALUE_KIND
from tablelog.writing.merged_arrow import merge_pairs, merge_stored, pairs_merge_in_arrow

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
        if kinds and kinds.count(kinds[0]) == len(kinds):  # one kind (every insert-only write)
            if not writable(kinds[0], self.options):
                return
            retractions = list(range(len(kinds))) if kinds[0].is_retraction else []
        else:
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

    def rows(self, schema: pa.Schema) -> tuple[pa.Table, list[RowKind]]:
        """Every row kept, in write order, in ``schema``, with its kind."""
        if not self._rows:
            return schema.empty_table(), []
        return pa.concat_tables([t.cast(schema) for t in self._rows]), self._kinds

    def fold(self, schema: pa.Schema) -> tuple[list[Key], list[KeyValue]]:
        """Each key's rows folded as Paimon's write buffer folds them (one record stays as
        written; several are merged with the table's engine), keys in first-write order;
        a key whose merge keeps nothing is left out."""
        arrow, kinds = self.rows(schema)
        return fold_rows(arrow.to_pylist(), kinds, range(len(kinds)), self.options)


def fold_rows(
    rows: Sequence[Mapping[str, Any]], kinds: Sequence[RowKind], sequences: Iterable[int], options: MergeOptions,
) -> tuple[list[Key], list[KeyValue]]:
    """``rows`` (with their ``kinds`` and sequence numbers) folded per key, keys in
    first-write order, as :meth:`PendingRows.fold` describes."""
    by_key: dict[Key, list[KeyValue]] = {}
    key_columns = options.primary_key
    for sequence, row, kind in zip(sequences, rows, kinds, strict=True):
        by_key.setdefault(tuple(row[c] for c in key_columns), []).append(KeyValue(kind, row, sequence))
    keys: list[Key] = []
    folded: list[KeyValue] = []
    for key, records in by_key.items():
        record = records[0] if len(records) == 1 else merge(records, options)
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
    changes against the latest snapshot, its base (:func:`_merged_changes`)."""
    options = pending.options
    if not changes:
        _, folded = pending.fold(schema)
        records = pa.Table.from_pylist([dict(r.row) for r in folded], schema=schema)
        return MergedWrite(records, [r.kind for r in folded], schema.empty_table(), [])
    latest = files.latest_snapshot()
    base = None if latest is None else latest.id
    write = _merged_changes(files, options, schema, base, pending)
    return attrs.evolve(write, base_snapshot=base or 0, keys=write.records.select(list(options.primary_key)))


def _merged_changes(
    files: TableFiles, options: MergeOptions, schema: pa.Schema, base_snapshot: int | None, pending: PendingRows,
) -> MergedWrite:
    """The attempt's folded records and their changes against ``base_snapshot``.

    The common cases stay in Arrow. A key written once in the attempt, with an insert or
    ``+U``, on a table whose merge of one such record is that record
    (:func:`~tablelog.merging.engines.single_add_is_the_row`), keeps its row as written;
    when the table does not hold the key its change is ``+I`` of that row, and when the
    table holds adds of it only, they and the new row merge in Arrow (:mod:`.merged_arrow`). Every
    other key is folded and merged row by row, as :meth:`PendingRows.fold` and
    :func:`key_changes` do; both give the same records and changes, in the same key order."""
    arrow, kinds = pending.rows(schema)
    primary_key = options.primary_key
    row_keys = key_tuples(arrow, primary_key)
    first: dict[Key, int] = {}
    for row, key in enumerate(row_keys):
        first.setdefault(key, row)
    keys = list(first)
    repeated = {k for k, n in Counter(row_keys).items() if n > 1} if len(keys) < len(row_keys) else set()
    lookup_keys = arrow.select(list(primary_key)).take(pa.array(list(first.values()), pa.int64()))
    stored = files.key_record_table(base_snapshot, lookup_keys)
    stored_keys = key_tuples(stored, primary_key)
    held = set(stored_keys)
    adds = pc.is_in(stored.column(VALUE_KIND), value_set=pa.array(_ADD_CODES, pa.int8())).to_pylist()
    retracted = {key for key, add in zip(stored_keys, adds, strict=True) if not add}
    vectorised = single_add_is_the_row(options) and not _nulls_refused(arrow, options)
    pairs = vectorised and pairs_merge_in_arrow(options)
    alone: list[int] = []  # rows of keys the table does not hold, kept as written
    alone_at: list[int] = []  # their key's place in ``keys``
    paired: dict[Key, int] = {}  # keys the table holds as adds only: their place
    slow_keys: dict[Key, int] = {}
    for at, key in enumerate(keys):
        row = first[key]
        if not vectorised or key in repeated or kinds[row].is_retraction:
            slow_keys[key] = at
        elif key not in held:
            alone.append(row)
            alone_at.append(at)
        elif pairs and key not in retracted:
            paired[key] = at
        else:
            slow_keys[key] = at
    paired_rows = [first[key] for key in paired]
    new_rows = arrow.take(pa.array(paired_rows, pa.int64()))
    before = after = None
    if paired:
        records = [i for i, key in enumerate(stored_keys) if key in paired]
        places = np.fromiter((paired[stored_keys[i]] for i in records), np.int64, len(records))
        before = merge_stored(options, stored.take(pa.array(records, pa.int64())), places, schema)
        after = None if before is None else merge_pairs(options, before, new_rows, schema)
    if before is None or after is None:  # the row-by-row merge does these (and raises what it raises)
        slow_keys.update(paired)
        paired, paired_rows = {}, []
        before = after = new_rows = new_rows.slice(0, 0)
    paired_at = list(paired.values())
    slow = _merged_row_by_row(arrow, kinds, row_keys, slow_keys, stored, stored_keys, options, schema)
    changed = options.engine is not MergeEngine.FIRST_ROW  # a first-row key the table holds keeps its row
    kept = arrow.take(pa.array(alone + paired_rows, pa.int64()))
    records, record_kinds = _in_key_order(
        (kept, [kinds[i] for i in alone + paired_rows], alone_at + paired_at),
        (slow.records, slow.kinds, slow.record_at),
    )
    changes, change_kinds = _in_key_order(
        (kept.slice(0, len(alone)), [RowKind.INSERT] * len(alone), alone_at),
        (before if changed else before.slice(0, 0), [RowKind.UPDATE_BEFORE] * len(paired) if changed else [],
         paired_at if changed else []),
        (after if changed else after.slice(0, 0), [RowKind.UPDATE_AFTER] * len(paired) if changed else [],
         paired_at if changed else []),
        (slow.changes, slow.change_kinds, slow.change_at),
    )
    return MergedWrite(records=records, kinds=record_kinds, changes=changes, change_kinds=change_kinds)


#: Paimon's row-kind bytes of the records that add (+I, +U).
_ADD_CODES = (0, 2)


@attrs.frozen
class _RowByRow:
    """The records and changes of the keys merged row by row, each with its key's place."""

    records: pa.Table
    kinds: list[RowKind]
    record_at: list[int]
    changes: pa.Table
    change_kinds: list[RowKind]
    change_at: list[int]


def _merged_row_by_row(
    arrow: pa.Table, kinds: Sequence[RowKind], row_keys: Sequence[Key], slow_keys: Mapping[Key, int],
    stored: pa.Table, stored_keys: Sequence[Key], options: MergeOptions, schema: pa.Schema,
) -> _RowByRow:
    """``slow_keys``' rows folded (:func:`fold_rows`) and their changes (:func:`key_change_lists`)."""
    rows = [i for i, key in enumerate(row_keys) if key in slow_keys] if slow_keys else []
    folded_keys, folded = fold_rows(
        arrow.take(pa.array(rows, pa.int64())).to_pylist(), [kinds[i] for i in rows], rows, options)
    held = [key in slow_keys for key in stored_keys] if slow_keys else []
    records_of = records_by_key(stored.filter(pa.array(held, pa.bool_())) if any(held) else stored.slice(0, 0), options)
    new = {key: [KeyValue(record.kind, record.row, NEWEST)] for key, record in zip(folded_keys, folded, strict=True)}
    change_rows: list[Mapping[str, Any]] = []
    change_kinds: list[RowKind] = []
    change_at: list[int] = []
    for key, changes in key_change_lists(folded_keys, records_of, new, options):
        for kind, row in changes:
            change_rows.append(row)
            change_kinds.append(kind)
            change_at.append(slow_keys[key])
    return _RowByRow(
        records=pa.Table.from_pylist([dict(r.row) for r in folded], schema=schema),
        kinds=[r.kind for r in folded],
        record_at=[slow_keys[k] for k in folded_keys],
        changes=pa.Table.from_pylist(change_rows, schema=schema),
        change_kinds=change_kinds,
        change_at=change_at,
    )


def _nulls_refused(arrow: pa.Table, options: MergeOptions) -> bool:
    """Whether a NOT NULL column holds a null the merge would refuse (then row by row, which raises)."""
    return any(not options.nullable[c] and arrow.column(c).null_count for c in options.columns)


def _in_key_order(*parts: tuple[pa.Table, list[RowKind], list[int]]) -> tuple[pa.Table, list[RowKind]]:
    """Parts' rows and kinds merged by each row's key place (stable: a key's rows keep their order)."""
    tables = [table for table, _, _ in parts]
    kinds = [kind for _, part_kinds, _ in parts for kind in part_kinds]
    places = np.fromiter((at for _, _, part_at in parts for at in part_at), np.int64)
    table = pa.concat_tables(tables)
    if len(places) < 2 or bool((places[1:] >= places[:-1]).all()):
        return table, kinds
    order = np.argsort(places, kind="stable")
    return table.take(pa.array(order)), [kinds[i] for i in order.tolist()]


def key_changes(
    keys: Iterable[Key], stored: Mapping[Key, list[KeyValue]], new: Mapping[Key, list[KeyValue]],
    options: MergeOptions,
) -> tuple[list[Mapping[str, Any]], list[RowKind]]:
    """Per key, the changes from the merge of its ``stored`` records to the merge of
    those and its ``new`` ones (Paimon's lookup rule), in the order of ``keys``."""
    rows: list[Mapping[str, Any]] = []
    kinds: list[RowKind] = []
    for _, changes in key_change_lists(keys, stored, new, options):
        for kind, row in changes:
            rows.append(row)
            kinds.append(kind)
    return rows, kinds


def key_change_lists(
    keys: Iterable[Key], stored: Mapping[Key, list[KeyValue]], new: Mapping[Key, list[KeyValue]],
    options: MergeOptions,
) -> Iterator[tuple[Key, list[tuple[RowKind, Mapping[str, Any]]]]]:
    """Each key with its changes (:func:`key_changes`)."""
    for key in keys:
        before_records = stored.get(key, [])
        before = merged_row(merge(before_records, options)) if before_records else None
        after = merged_row(merge([*before_records, *new.get(key, [])], options))
        yield key, changelog(before, after, options)
