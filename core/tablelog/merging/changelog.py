"""The changes Paimon's ``lookup`` changelog producer emits for a key, from the key's
merged row before a commit and after it (``LookupChangelogMergeFunctionWrapper.setChangelog``,
and ``FirstRowMergeFunctionWrapper`` for first-row tables)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tablelog.merging.options import MergeEngine, MergeOptions
from tablelog.records import RowKind

Row = Mapping[str, Any]


def changelog(before: Row | None, after: Row | None, options: MergeOptions) -> list[tuple[RowKind, Row]]:
    """The changelog of one key: ``before`` is the row a read returned before (None:
    absent, or a retraction), ``after`` the merged row after (None: the merge result is
    not an add, so reads drop it).

    - a new row: ``+I after``; a row that goes: ``-D before`` (the whole old row);
    - a row that stays: ``-U before``, ``+U after``, even when nothing changed, unless
      ``changelog-producer.row-deduplicate`` and the rows are equal (leaving out
      ``changelog-producer.row-deduplicate-ignore-fields``): then nothing;
    - first-row: ``+I after`` for a key that had no row, nothing for a key that had one
      (``FirstRowMergeFunctionWrapper`` drops the level-0 record; row-deduplicate does not apply).
    """
    if options.engine is MergeEngine.FIRST_ROW:
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
    ones, compared as Java's generated equaliser compares them (a NaN equals nothing)."""
    ignored = set(options.row_deduplicate_ignore_fields)
    return all(before.get(c) == after.get(c) for c in options.columns if c not in ignored)
