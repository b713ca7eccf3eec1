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

from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np
import pyarrow as pa

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
from tablelog.merging.merged_arrow import merge_pairs, merge_stored, pairs_merge_in_arrow
from tablelog.records import RowKind
from tablelog.store.key_records import key_tuples, records_by_key
from tablelog.store.layout import VALUE_KIND
from tablelog.writing.key_places import first_rows, kept_in_place_order, places

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
        self._retractions: list[int] = []  # rows (of all kept) that retract

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
            self._retractions.extend(len(self._kinds) + i for i in retractions)
            self._rows.append(arrow)
            self._kinds.extend(kinds)

    def rows(self, schema: pa.Schema) -> tuple[pa.Table, list[RowKind]]:
        """Every row kept, in write order, in ``schema``, with its kind."""
        if not self._rows:
            return schema.empty_table(), []
        if len(self._rows) > 1 or not self._rows[0].schema.equals(schema):  # one table: the parts and merge reread it
            self._rows = [pa.concat_tables([t.cast(schema) for t in self._rows])]
        return self._rows[0], self._kinds

    def retracting(self) -> np.ndarray:
        """Per row kept (as :meth:`rows`), whether it retracts (``-U``, ``-D``)."""
        retracting = np.zeros(len(self._kinds), bool)
        retracting[self._retractions] = True
        return retracting

    def parts(self, schema: pa.Schema, row_sets: Sequence[np.ndarray]) -> list[PendingRows]:
        """The kept rows of each of ``row_sets`` (ascending, as :meth:`rows` numbers
        them), as the rows of an attempt of their own."""
        arrow, kinds = self.rows(schema)
        retracting = self.retracting()
        parts = []
        for rows in row_sets:
            part = PendingRows(self.options, self._table)
            part._rows = [arrow.take(pa.array(rows, pa.int64()))]
            part._kinds = [kinds[i] for i in rows.tolist()]
            part._retractions = np.flatnonzero(retracting[rows]).tolist()
            parts.append(part)
        return parts

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
    if not changes:
        _, folded = pending.fold(schema)
        records = pa.Table.from_pylist([dict(r.row) for r in folded], schema=schema)
        return MergedWrite(records, [r.kind for r in folded], schema.empty_table(), [])
    latest = files.latest_snapshot()
    return merged_changes(files, schema, pending, None if latest is None else latest.id)


def merged_changes(
    files: TableFiles, schema: pa.Schema, pending: PendingRows, base: int | None, buckets: Collection[int] | None = None,
) -> MergedWrite:
    """:func:`merged_write`'s records and changes against snapshot ``base`` (None: before
    the first); ``buckets``: every key of ``pending`` is in these buckets."""
    write = _merged_changes(files, pending.options, schema, base, pending, buckets)
    return attrs.evolve(write, base_snapshot=base or 0, keys=write.records.select(list(pending.options.primary_key)))


def _merged_changes(
    files: TableFiles, options: MergeOptions, schema: pa.Schema, base_snapshot: int | None, pending: PendingRows,
    buckets: Collection[int] | None = None,
) -> MergedWrite:
    """The attempt's folded records and their changes against ``base_snapshot``.

    The common cases stay in Arrow. A key written once in the attempt, with an insert or
    ``+U``, on a table whose merge of one such record is that record
    (:func:`~tablelog.merging.engines.single_add_is_the_row`), keeps its row as written;
    when the table does not hold the key its change is ``+I`` of that row, and when the
    table holds adds of it only, they and the new row merge in Arrow (:mod:`tablelog.merging.merged_arrow`). Every
    other key is folded and merged row by row, as :meth:`PendingRows.fold` and
    :func:`key_changes` do; both give the same records and changes, in the same key order.
    Keys are told apart by their place among the attempt's keys (:mod:`.key_places`)."""
    arrow, kinds = pending.rows(schema)
    primary_key = list(options.primary_key)
    first, counts = first_rows(arrow, primary_key)
    lookup_keys = arrow.select(primary_key).take(pa.array(first, pa.int64()))
    stored = files.key_record_table(base_snapshot, lookup_keys, buckets)
    stored_at = places(stored, lookup_keys)  # each stored record's key place
    held = np.zeros(len(first), bool)
    held[stored_at] = True
    retracted = np.zeros(len(first), bool)
    retracted[stored_at[~np.isin(stored.column(VALUE_KIND).to_numpy(), _ADD_CODES)]] = True
    vectorised = single_add_is_the_row(options) and not _nulls_refused(arrow, options)
    pairs = vectorised and pairs_merge_in_arrow(options)
    slow = ((counts > 1) | pending.retracting()[first]) if vectorised else np.ones(len(first), bool)
    alone = ~slow & ~held
    paired = ~slow & held & ~retracted if pairs else np.zeros(len(first), bool)
    before = after = None
    if paired.any():
        chosen = paired[stored_at]
        before = merge_stored(options, stored.filter(pa.array(chosen)), stored_at[chosen], schema)
        new_rows = arrow.take(pa.array(first[paired], pa.int64()))
        after = None if before is None else merge_pairs(options, before, new_rows, schema)
    if before is None or after is None:  # the row-by-row merge does these (and raises what it raises)
        paired[:] = False
        before = after = arrow.slice(0, 0)
    slow = ~alone & ~paired
    changed = options.engine is not MergeEngine.FIRST_ROW  # a first-row key the table holds keeps its row
    if not slow.any():
        return MergedWrite(*kept_in_place_order(arrow, kinds, first, alone, paired, before, after, changed))
    alone_at, paired_at = np.flatnonzero(alone), np.flatnonzero(paired)
    kept_rows = np.concatenate([first[alone_at], first[paired_at]])
    by_row = _merged_row_by_row(arrow, kinds, slow, stored, stored_at, lookup_keys, options, schema)
    updated_at = paired_at if changed else paired_at[:0]
    kept = arrow.take(pa.array(kept_rows, pa.int64()))
    records, record_kinds = _in_key_order(
        (kept, [kinds[i] for i in kept_rows.tolist()], np.concatenate([alone_at, paired_at])),
        (by_row.records, by_row.kinds, by_row.record_at),
    )
    changes, change_kinds = _in_key_order(
        (kept.slice(0, len(alone_at)), [RowKind.INSERT] * len(alone_at), alone_at),
        (before.slice(0, len(updated_at)), [RowKind.UPDATE_BEFORE] * len(updated_at), updated_at),
        (after.slice(0, len(updated_at)), [RowKind.UPDATE_AFTER] * len(updated_at), updated_at),
        (by_row.changes, by_row.change_kinds, by_row.change_at),
    )
    return MergedWrite(records=records, kinds=record_kinds, changes=changes, change_kinds=change_kinds)


#: Paimon's row-kind bytes of the records that add (+I, +U).
_ADD_CODES = (0, 2)


@attrs.frozen
class _RowByRow:
    """The records and changes of the keys merged row by row, each with its key's place."""

    records: pa.Table
    kinds: list[RowKind]
    record_at: np.ndarray
    changes: pa.Table
    change_kinds: list[RowKind]
    change_at: np.ndarray

    @classmethod
    def none(cls, schema: pa.Schema) -> _RowByRow:
        nothing = np.zeros(0, np.int64)
        return cls(schema.empty_table(), [], nothing, schema.empty_table(), [], nothing)


def _merged_row_by_row(
    arrow: pa.Table, kinds: Sequence[RowKind], slow: np.ndarray, stored: pa.Table, stored_at: np.ndarray,
    keys: pa.Table, options: MergeOptions, schema: pa.Schema,
) -> _RowByRow:
    """The rows of the ``slow`` keys (by place) folded (:func:`fold_rows`), and their
    changes (:func:`key_change_lists`)."""
    primary_key = options.primary_key
    place_of = dict(zip(key_tuples(keys.filter(pa.array(slow)), primary_key), np.flatnonzero(slow).tolist(),
                        strict=True))
    rows = np.flatnonzero(slow[places(arrow, keys)]).tolist()
    folded_keys, folded = fold_rows(
        arrow.take(pa.array(rows, pa.int64())).to_pylist(), [kinds[i] for i in rows], rows, options)
    records_of = records_by_key(stored.filter(pa.array(slow[stored_at])), options)
    new = {key: [KeyValue(record.kind, record.row, NEWEST)] for key, record in zip(folded_keys, folded, strict=True)}
    change_rows: list[Mapping[str, Any]] = []
    change_kinds: list[RowKind] = []
    change_at: list[int] = []
    for key, changes in key_change_lists(folded_keys, records_of, new, options):
        for kind, row in changes:
            change_rows.append(row)
            change_kinds.append(kind)
            change_at.append(place_of[key])
    return _RowByRow(
        records=pa.Table.from_pylist([dict(r.row) for r in folded], schema=schema),
        kinds=[r.kind for r in folded],
        record_at=np.array([place_of[k] for k in folded_keys], np.int64),
        changes=pa.Table.from_pylist(change_rows, schema=schema),
        change_kinds=change_kinds,
        change_at=np.array(change_at, np.int64),
    )


def _nulls_refused(arrow: pa.Table, options: MergeOptions) -> bool:
    """Whether a NOT NULL column holds a null the merge would refuse (then row by row, which raises)."""
    return any(not options.nullable[c] and arrow.column(c).null_count for c in options.columns)


def _in_key_order(*parts: tuple[pa.Table, list[RowKind], np.ndarray]) -> tuple[pa.Table, list[RowKind]]:
    """Parts' rows and kinds merged by each row's key place (stable: a key's rows keep their order)."""
    tables = [table for table, _, _ in parts]
    kinds = [kind for _, part_kinds, _ in parts for kind in part_kinds]
    at = np.concatenate([part_at for _, _, part_at in parts]).astype(np.int64)
    table = pa.concat_tables(tables)
    if len(at) < 2 or bool((at[1:] >= at[:-1]).all()):
        return table, kinds
    order = np.argsort(at, kind="stable")
    return table.take(pa.array(order)), [kinds[i] for i in order.tolist()]


def key_changes(
    keys: Iterable[Key], stored: Mapping[Key, list[KeyValue]], new: Mapping[Key, list[KeyValue]],
    options: MergeOptions,
) -> tuple[list[Mapping[str, Any]], list[RowKind]]:
    """Per key, the changes from the merge of its ``stored`` records to the merge of
    those and its ``new`` ones (Paimon's lookup rule), in the order of ``keys``."""
    pairs = [pair for _, changes in key_change_lists(keys, stored, new, options) for pair in changes]
    return [row for _, row in pairs], [kind for kind, _ in pairs]


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
