"""Reads of a merge-engine table's state merged by :mod:`tablelog.merging`, not by pypaimon.

pypaimon 2.1 refuses several merge configurations Paimon defines (sequence groups,
``ignore-retract``, retractions of aggregation and partial-update), and a batch read of a
``first-row`` table leaves its level-0 files out. tablelog's reads, its compaction and its
lookups must see the table's true state: the merge of every record of a key in every
file (level 0 included), in Paimon's order, as Java merges it.

pypaimon's own merge read does the rest (files, sections, sort by key), so a read is
pointed at tablelog's merge function by a marker option on a copy of the table
(:func:`merged_read_table`): pypaimon's read of the table itself (other users in the same
process, tests' independent checks) is unchanged.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from tablelog.merging import KeyValue, MergeEngine, MergeOptions, merge, parse_merge_options
from tablelog.records import RowKind
from tablelog.store.pypaimon_internals import (
    key_value_tuple,
    merge_reads_with,
    read_files_by_row_group,
)
from tablelog.store.schema import KIND_FIELD

#: The option marking a table copy whose merge reads use tablelog's merge functions.
MERGED_READ = "tablelog.merged-read"
#: The option marking a table copy whose reads decode a data file a batch at a time.
BY_ROW_GROUP = "tablelog.read-by-row-group"
#: Paimon's row kinds as its files store them (``RowKind.toByteValue``), and back.
ROW_KINDS = (RowKind.INSERT, RowKind.UPDATE_BEFORE, RowKind.UPDATE_AFTER, RowKind.DELETE)
KIND_CODES = {kind: code for code, kind in enumerate(ROW_KINDS)}


def parsed_merge_options(
    options: Mapping[str, Any], schema: pa.Schema, primary_key: Sequence[str], partition_keys: Sequence[str],
) -> MergeOptions | None:
    """The table's parsed merge options, whatever its engine (None: no primary key); cached."""
    if not primary_key:
        return None
    return _parse(tuple(sorted((str(k), str(v)) for k, v in options.items() if k not in (MERGED_READ, BY_ROW_GROUP))),
                  schema, tuple(primary_key), tuple(partition_keys))


@functools.lru_cache(maxsize=64)
def _parse(options: tuple[tuple[str, str], ...], schema: pa.Schema, primary_key: tuple[str, ...],
           partition_keys: tuple[str, ...]) -> MergeOptions:
    return parse_merge_options(dict(options), schema, primary_key, partition_keys)


def merges_with_tablelog(paimon: Any) -> bool:
    """Whether reads of ``paimon`` (pypaimon's table) merge with tablelog's merge functions."""
    engine = str((paimon.table_schema.options or {}).get("merge-engine", "deduplicate")).lower()
    return bool(paimon.table_schema.primary_keys) and engine != "deduplicate"


def merged_read_table(paimon: Any, options: Mapping[str, str] | None = None) -> Any:
    """A copy of ``paimon`` (pypaimon's table) with ``options``, whose reads decode each
    data file a batch at a time (memory bounded whatever the files' size:
    :func:`~tablelog.store.pypaimon_internals.read_files_by_row_group`); for a merge-engine
    table, its merge reads use tablelog's merge function, read level-0 files of first-row
    tables, and are not refused by pypaimon's check of the options it builds."""
    extra = {BY_ROW_GROUP: "true", **(options or {})}
    read_files_by_row_group(BY_ROW_GROUP)
    if merges_with_tablelog(paimon):
        merge_reads_with(MERGED_READ, _merge_function)
        extra.update({MERGED_READ: "true", "read.native.enabled": "false"})
    return paimon.copy(extra)


def paimon_merge_options(paimon: Any) -> MergeOptions | None:
    """The parsed merge options of ``paimon`` (pypaimon's table), whatever its engine
    (None: no primary key)."""
    from pypaimon.schema.data_types import PyarrowFieldParser

    schema = pa.schema([PyarrowFieldParser.from_paimon_field(f) for f in paimon.table_schema.fields
                        if f.name != KIND_FIELD])
    return parsed_merge_options(paimon.options.options.to_map(), schema, paimon.table_schema.primary_keys,
                                paimon.table_schema.partition_keys or ())


def _merge_function(table: Any, key_arity: int, value_fields: Sequence[Any]) -> TablelogMergeFunction:
    """tablelog's merge function for a marked table's merge read of ``value_fields``."""
    options = paimon_merge_options(table)
    assert options is not None and options.engine is not MergeEngine.DEDUPLICATE, "a marked table merges with an engine"
    return TablelogMergeFunction(options, key_arity, [f.name for f in value_fields])


class TablelogMergeFunction:
    """pypaimon's ``MergeFunction`` (``reset``/``add``/``get_result`` over its
    ``KeyValue``) merging with :func:`tablelog.merging.merge`. A column the read does not
    carry (a projection) is null in the rows merged."""

    def __init__(self, options: MergeOptions, key_arity: int, names: Sequence[str]) -> None:
        self._options = options
        self._key_arity = key_arity
        self._names = tuple(names)
        self._records: list[KeyValue] = []
        self._key: tuple[Any, ...] = ()

    def reset(self) -> None:
        self._records = []

    def add(self, kv: Any) -> None:
        row = key_value_tuple(kv)
        arity = self._key_arity
        self._key = row[:arity]
        values = dict.fromkeys(self._options.columns)
        values.update(zip(self._names, row[arity + 2:], strict=True))
        self._records.append(KeyValue(ROW_KINDS[row[arity + 1]], values, int(row[arity])))

    def get_result(self) -> Any:
        from pypaimon.table.row.key_value import KeyValue as PaimonKeyValue

        result = merge(self._records, self._options)
        if result is None:
            return None
        last = self._records[-1].row
        values = tuple(result.row.get(n, last.get(n)) for n in self._names)
        return PaimonKeyValue(self._key_arity, len(self._names)).replace(
            (*self._key, result.sequence, KIND_CODES[result.kind], *values))
