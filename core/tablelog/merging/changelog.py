"""The changes Paimon's ``lookup`` changelog producer emits for a key, from the key's
merged row before a commit and after it (``LookupChangelogMergeFunctionWrapper.setChangelog``,
and ``FirstRowMergeFunctionWrapper`` for first-row tables)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from tablelog.merging.aggregators import java_compare
from tablelog.merging.engines import KeyValue, merge, merged_row
from tablelog.merging.options import MergeEngine, MergeOptions
from tablelog.records import RowKind

Row = Mapping[str, Any]


@attrs.frozen
class LookupResult:
    """What a lookup merge of one key gives: the record the table then holds (None:
    the key keeps no record) and the changes the log carries."""

    result: KeyValue | None
    changes: list[tuple[RowKind, Row]]


def lookup(stored: KeyValue | None, records: Iterable[KeyValue], options: MergeOptions) -> LookupResult:
    """The new ``records`` of a key merged with its ``stored`` record (the one a lookup
    finds in the table, None for a new key), and the changes between the two, as
    ``LookupChangelogMergeFunctionWrapper.getResult`` computes them: the stored record is
    merged in sequence order with the new ones (a late record under ``sequence.field``
    sorts before it). First-row follows ``FirstRowMergeFunctionWrapper``: a stored key
    keeps its record and the new ones are dropped. No new records: no change. Records a
    writer drops (:func:`~tablelog.merging.engines.writable`) must be left out by the caller."""
    new = list(records)
    if not new:
        return LookupResult(stored, [])
    if options.engine is MergeEngine.FIRST_ROW and stored is not None:
        return LookupResult(stored, [])
    result = merge([*([stored] if stored is not None else []), *new], options)
    if options.engine is MergeEngine.FIRST_ROW:
        # Java emits the kept record as it was written: a +U stays a +U
        return LookupResult(result, [] if result is None else [(result.kind, result.row)])
    before = merged_row(stored)
    return LookupResult(result, changelog(before, merged_row(result), options))


def changelog(before: Row | None, after: Row | None, options: MergeOptions) -> list[tuple[RowKind, Row]]:
    """The changelog of one key: ``before`` is the row a read returned before (None:
    absent, or a retraction), ``after`` the merged row after (None: the merge result is
    not an add, so reads drop it).

    - a new row: ``+I after``; a row that goes: ``-D before`` (the whole old row);
    - a row that stays: ``-U before``, ``+U after``, even when nothing changed, unless
      ``changelog-producer.row-deduplicate`` and the rows are equal (leaving out
      ``changelog-producer.row-deduplicate-ignore-fields``): then nothing;
    - first-row: ``+I after`` for a key that had no row, nothing for a key that kept its
      row (``FirstRowMergeFunctionWrapper`` drops the level-0 record; row-deduplicate does
      not apply). A key whose row changed (``-U before``, ``+U after``) is not Java's case:
      there one writer per bucket numbers the records in commit order, while tablelog's
      writers number them when they write, so a record written before the key's row but
      committed after it is the first row from then on, and readers must be told.
    """
    if options.engine is MergeEngine.FIRST_ROW:
        if before is not None and after is not None and not _rows_equal(before, after, options.columns):
            return [(RowKind.UPDATE_BEFORE, before), (RowKind.UPDATE_AFTER, after)]
        return [(RowKind.INSERT, after)] if before is None and after is not None else []
    if before is None:
        return [] if after is None else [(RowKind.INSERT, after)]
    if after is None:
        return [(RowKind.DELETE, before)]
    if options.row_deduplicate and values_equal(before, after, options):
        return []
    return [(RowKind.UPDATE_BEFORE, before), (RowKind.UPDATE_AFTER, after)]


def values_equal(before: Row, after: Row, options: MergeOptions) -> bool:
    """The ``RecordEqualiser`` of ``KeyValueFileStore``: every column but the ignored
    ones, compared as Java's generated equaliser compares them (``EqualiserCodeGenerator``:
    floats by ``Double.compare``, so NaN equals NaN and ``-0.0`` differs from ``0.0``)."""
    ignored = set(options.row_deduplicate_ignore_fields)
    return _rows_equal(before, after, [c for c in options.columns if c not in ignored])


def _rows_equal(before: Row, after: Row, columns: Iterable[str]) -> bool:
    return all(_field_equal(before.get(c), after.get(c)) for c in columns)


def _field_equal(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) and isinstance(b, float):
        return java_compare(a, b) == 0
    return bool(a == b)
