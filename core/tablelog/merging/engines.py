"""The merge of one key's records under each Paimon merge engine, following the Java
merge functions of ``org.apache.paimon.mergetree.compact`` (Paimon at commit 5dacde51)
line by line, and the order Paimon merges them in.

A record is a :class:`KeyValue`: its kind, the whole row (every column, as Paimon's
value row) and its ``_SEQUENCE_NUMBER`` (write order). :func:`merge` sorts a key's
records as Paimon's readers and compaction do, and folds them with the table's merge
function; the stored (high-level) record of a lookup is simply one more record, with
its own, older sequence number (``LookupMergeFunction`` merges it with the level-0
records in the same order, by ``insertInto`` with the same comparator).

Long because: the four engines are transcribed side by side from Java, partial-update's
sequence groups with them, so each can be read against its Java class.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from tablelog.errors import TablelogError
from tablelog.merging.aggregators import (
    FieldAggregator,
    RetractRefused,
    java_compare,
    make_aggregator,
)
from tablelog.merging.options import MergeEngine, MergeOptions, SequenceGroup
from tablelog.records import RowKind


class MergeError(TablelogError, ValueError):
    """Paimon's merge function refuses a record (a retraction the engine cannot take,
    a null in a NOT NULL column, an integer sum that overflows)."""


@attrs.frozen
class KeyValue:
    """One record of a key: its kind, the whole row and Paimon's ``_SEQUENCE_NUMBER``."""

    kind: RowKind
    row: Mapping[str, Any]
    sequence: int

    @property
    def is_add(self) -> bool:
        return not self.kind.is_retraction


def writable(kind: RowKind, options: MergeOptions) -> bool:
    """Whether a writer keeps a record of this kind (``RowKindFilter``, applied by
    ``TableWriteImpl`` before the merge): ``ignore-delete`` drops ``-D`` and ``-U``,
    ``ignore-update-before`` drops ``-U``. A dropped record never reaches the table, so it
    makes no change and no changelog."""
    if kind is RowKind.DELETE:
        return not options.ignore_delete
    if kind is RowKind.UPDATE_BEFORE:
        return not (options.ignore_delete or options.ignore_update_before)
    return True


def compare_sequence(fields: tuple[str, ...], ascending: bool, a: Mapping[str, Any], b: Mapping[str, Any]) -> int:
    """``UserDefinedSeqComparator``: field by field; a null sorts first (oldest) in both
    orders (the generated comparator has ``nullIsLast=false`` and returns before the
    sign of a descending field is applied); descending flips non-null comparisons."""
    for field in fields:
        x, y = a[field], b[field]
        if x is None or y is None:
            result = (x is not None) - (y is not None)
        else:
            result = java_compare(x, y) * (1 if ascending else -1)
        if result:
            return result
    return 0


_SEQUENCE = operator.attrgetter("sequence")


def sort_records(records: Iterable[KeyValue], options: MergeOptions) -> list[KeyValue]:
    """A key's records in merge order: by ``sequence.field`` (if any), then by sequence
    number (``SortMergeReader`` and the write buffer, ``LookupChangelogMergeFunctionWrapper.createSequenceComparator``)."""
    fields, ascending = options.sequence_fields, options.sequence_ascending
    if not fields:
        return sorted(records, key=_SEQUENCE)

    def order(a: KeyValue, b: KeyValue) -> int:
        return compare_sequence(fields, ascending, a.row, b.row) or (a.sequence > b.sequence) - (a.sequence < b.sequence)

    return sorted(records, key=functools.cmp_to_key(order))


def merge(records: Iterable[KeyValue], options: MergeOptions) -> KeyValue | None:
    """The merged record of one key's records (in any order: they are sorted first), or
    None when the engine keeps nothing of them."""
    records = list(records)
    if len(records) == 1 and not records[0].kind.is_retraction:
        one = _merge_one_add(records[0], options)
        if one is not None:
            return one
    function = merge_function(options)
    for record in sort_records(records, options):
        function.add(record)
    return function.result()


#: Aggregate functions whose aggregation of one input (null or not) into an empty row
#: is that input (``listagg`` is not: it drops a blank input).
_PASS_ONE_INPUT = frozenset({
    "sum", "min", "max", "last_value", "last_non_null_value", "first_value", "first_non_null_value",
    "first_not_null_value", "bool_and", "bool_or", "primary-key",
})


def single_add_is_the_row(options: MergeOptions) -> bool:
    """Whether the merge of a key's one insert (or ``+U``) holds that record's row as it
    was written: true of deduplicate and first-row, of partial-update without sequence
    groups (unless a NOT NULL column is null: the merge refuses it), and of aggregation
    whose functions all pass a single input through."""
    if options.engine is MergeEngine.PARTIAL_UPDATE:
        return not options.sequence_groups
    if options.engine is MergeEngine.AGGREGATION:
        return all(f.function in _PASS_ONE_INPUT for f in options.functions.values())
    return True


def _merge_one_add(record: KeyValue, options: MergeOptions) -> KeyValue | None:
    """The merge of one add record, what its merge function gives, computed without it;
    None when that takes the merge function. Deduplicate and first-row keep the record;
    partial-update and aggregation make an insert of its row (every column)."""
    engine = options.engine
    if engine is MergeEngine.DEDUPLICATE or engine is MergeEngine.FIRST_ROW:
        return record
    if not single_add_is_the_row(options):
        return None
    row = record.row
    values = {c: row.get(c) for c in options.columns}
    if engine is MergeEngine.PARTIAL_UPDATE and any(v is None and not options.nullable[c] for c, v in values.items()):
        return None
    return KeyValue(RowKind.INSERT, values, record.sequence)


def merged_row(result: KeyValue | None) -> Mapping[str, Any] | None:
    """The row a read returns for a merge result: none when it is a retraction (Paimon's
    readers drop results that are not adds)."""
    return result.row if result is not None and result.is_add else None


class MergeFunction:
    """Java's ``MergeFunction``: ``add`` the records of one key in merge order, then ``result``."""

    def add(self, record: KeyValue) -> None:
        raise NotImplementedError

    def result(self) -> KeyValue | None:
        raise NotImplementedError


def merge_function(options: MergeOptions) -> MergeFunction:
    """A fresh merge function for one key (``MergeFunctionFactory.create`` then ``reset``)."""
    return _MAKERS[options.engine](options)


class Deduplicate(MergeFunction):
    """``DeduplicateMergeFunction``: the last record wins, a retraction too (then the key
    reads as absent); with ``ignore-delete`` retractions are skipped."""

    def __init__(self, options: MergeOptions) -> None:
        self.ignore_delete = options.ignore_delete
        self.latest: KeyValue | None = None

    def add(self, record: KeyValue) -> None:
        if self.ignore_delete and record.kind.is_retraction:
            return
        self.latest = record

    def result(self) -> KeyValue | None:
        return self.latest


class FirstRow(MergeFunction):
    """``FirstRowMergeFunction``: the first record wins; a retraction is an error unless
    ``ignore-delete`` (then it is skipped)."""

    def __init__(self, options: MergeOptions) -> None:
        self.ignore_delete = options.ignore_delete
        self.first: KeyValue | None = None

    def add(self, record: KeyValue) -> None:
        if record.kind.is_retraction:
            if self.ignore_delete:
                return
            raise MergeError(
                "By default, First row merge engine can not accept DELETE/UPDATE_BEFORE records. "
                "You can config 'ignore-delete' to ignore the DELETE/UPDATE_BEFORE records."
            )
        if self.first is None:
            self.first = record

    def result(self) -> KeyValue | None:
        return self.first


def _aggregators(options: MergeOptions) -> dict[str, FieldAggregator]:
    return {
        field: make_aggregator(
            f.function, field, options.types[field], ignore_retract=f.ignore_retract, delimiter=f.delimiter,
            distinct=f.distinct,
        )
        for field, f in options.functions.items()
    }


def _init_row(options: MergeOptions, values: Mapping[str, Any]) -> dict[str, Any]:
    """``initRow``: the row restarts from a record's values; a null in a NOT NULL column is an error."""
    for index, field in enumerate(options.columns):
        if values.get(field) is None and not options.nullable[field]:
            raise MergeError(f"Field {index} can not be null (column {field})")
    return {field: values.get(field) for field in options.columns}


_PARTIAL_UPDATE_DELETE = (
    "By default, Partial update can not accept delete records, you can choose one of the following solutions: "
    "1. Configure 'ignore-delete' to ignore delete records. "
    "2. Configure 'partial-update.remove-record-on-delete' to remove the whole row when receiving delete records. "
    "3. Configure 'sequence-group's to retract partial columns. Also configure "
    "'partial-update.remove-record-on-sequence-group' to remove the whole row when receiving deleted records of "
    "`specified sequence group`."
)


class PartialUpdate(MergeFunction):
    """``PartialUpdateMergeFunction``: non-null values of each record overwrite the row.
    With sequence groups, a group's columns change only when the record's group
    sequence is not older than the row's (their aggregators run reversed otherwise),
    and a retraction takes the group's columns out. The result is a ``-D`` when the row
    was removed or no insert took part."""

    def __init__(self, options: MergeOptions) -> None:
        self.options = options
        self.columns = options.columns
        self.groups: dict[str, SequenceGroup] = {
            field: group for group in options.sequence_groups for field in (*group.fields, *group.sequence_fields)
        }
        self.aggregators = _aggregators(options)
        self.row: dict[str, Any] = dict.fromkeys(self.columns)
        self.meet_insert = False
        self.not_null_column_filled = False
        self.current_delete_row = False
        self.latest_sequence = 0
        self.key_row: Mapping[str, Any] | None = None

    def add(self, record: KeyValue) -> None:
        self.key_row = record.row
        self.current_delete_row = False
        if record.kind.is_retraction:
            if not self.not_null_column_filled:
                self.row = _init_row(self.options, record.row)
                self.not_null_column_filled = True
            if self.options.ignore_delete:
                return
            self.latest_sequence = record.sequence
            if self.groups:
                self._retract_with_sequence_group(record)
                return
            if self.options.partial_update_remove_record_on_delete:
                if record.kind is RowKind.DELETE:
                    self.current_delete_row = True
                    self.row = _init_row(self.options, record.row)
                return
            raise MergeError(_PARTIAL_UPDATE_DELETE)
        self.latest_sequence = record.sequence
        if not self.groups:
            self._update_non_null_fields(record)
        else:
            try:
                self._update_with_sequence_group(record)
            except ArithmeticError as err:
                raise MergeError(str(err)) from None
        self.meet_insert = True
        self.not_null_column_filled = True

    def _update_non_null_fields(self, record: KeyValue) -> None:
        for index, field in enumerate(self.columns):
            value = record.row.get(field)
            if value is not None:
                self.row[field] = value
            elif not self.options.nullable[field]:
                raise MergeError(f"Field {index} can not be null (column {field})")

    def _newer_or_same(self, group: SequenceGroup, record: KeyValue) -> bool:
        return compare_sequence(group.sequence_fields, True, record.row, self.row) >= 0

    def _empty_group(self, group: SequenceGroup, record: KeyValue, processed: set[str]) -> bool:
        """``isEmptySequenceGroup``: a record whose group sequence is all null leaves the group alone."""
        if any(record.row.get(f) is not None for f in group.sequence_fields):
            return False
        processed.update(group.sequence_fields)
        return True

    def _update_with_sequence_group(self, record: KeyValue) -> None:
        processed: set[str] = set()
        for field in self.columns:
            group = self.groups.get(field)
            aggregator = self.aggregators.get(field)
            accumulator = self.row[field]
            value = record.row.get(field)
            if group is None:
                if aggregator is not None:
                    self.row[field] = aggregator.agg(accumulator, value)
                elif value is not None:
                    self.row[field] = value
                continue
            if field in processed or self._empty_group(group, record, processed):
                continue
            if self._newer_or_same(group, record):
                if field in group.sequence_fields:
                    for sequence_field in group.sequence_fields:
                        self.row[sequence_field] = record.row.get(sequence_field)
                        processed.add(sequence_field)
                    continue
                self.row[field] = value if aggregator is None else aggregator.agg(accumulator, value)
            elif aggregator is not None:
                self.row[field] = aggregator.agg_reversed(accumulator, value)

    def _retract_with_sequence_group(self, record: KeyValue) -> None:
        updated: set[str] = set()
        processed: set[str] = set()
        for field in self.columns:
            group = self.groups.get(field)
            aggregator = self.aggregators.get(field)
            if group is None or field in processed or self._empty_group(group, record, processed):
                continue
            if self._newer_or_same(group, record):
                if field in group.sequence_fields:
                    for sequence_field in group.sequence_fields:
                        if sequence_field not in updated:
                            if record.kind is RowKind.DELETE and sequence_field in self.options.remove_record_on_sequence_group:
                                self.current_delete_row = True
                                self.row = _init_row(self.options, record.row)
                                return
                            self.row[sequence_field] = record.row.get(sequence_field)
                            updated.add(sequence_field)
                        processed.add(sequence_field)
                elif aggregator is None:
                    self.row[field] = None
                else:
                    self.row[field] = _retract(aggregator, self.row[field], record.row.get(field))
            elif aggregator is not None:
                self.row[field] = _retract(aggregator, self.row[field], record.row.get(field))

    def result(self) -> KeyValue | None:
        if self.key_row is None:
            return None
        kind = RowKind.DELETE if self.current_delete_row or not self.meet_insert else RowKind.INSERT
        return KeyValue(kind, dict(self.row), self.latest_sequence)


def _retract(aggregator: FieldAggregator, accumulator: Any, value: Any) -> Any:
    try:
        return aggregator.retract(accumulator, value)
    except (RetractRefused, ArithmeticError) as err:
        raise MergeError(str(err)) from None


class Aggregate(MergeFunction):
    """``AggregateMergeFunction``: every column goes through its aggregator (``retract``
    for ``-U``/``-D``). The result is always an insert, so a ``-D`` never removes the key,
    unless ``aggregation.remove-record-on-delete``: then a ``-D`` resets the row to its
    values and the result is a ``-D`` (the aggregators' state is not reset, as in Java)."""

    def __init__(self, options: MergeOptions) -> None:
        self.options = options
        self.aggregators = _aggregators(options)
        self.row: dict[str, Any] = dict.fromkeys(options.columns)
        self.latest: KeyValue | None = None
        self.current_delete_row = False

    def add(self, record: KeyValue) -> None:
        self.latest = record
        self.current_delete_row = self.options.aggregation_remove_record_on_delete and record.kind is RowKind.DELETE
        if self.current_delete_row:
            self.row = _init_row(self.options, record.row)
            return
        retract = record.kind.is_retraction
        for field in self.options.columns:
            aggregator = self.aggregators[field]
            accumulator, value = self.row[field], record.row.get(field)
            try:
                self.row[field] = aggregator.retract(accumulator, value) if retract else aggregator.agg(accumulator, value)
            except (RetractRefused, ArithmeticError) as err:
                raise MergeError(str(err)) from None

    def result(self) -> KeyValue | None:
        if self.latest is None:
            return None
        kind = RowKind.DELETE if self.current_delete_row else RowKind.INSERT
        return KeyValue(kind, dict(self.row), self.latest.sequence)


_MAKERS: dict[MergeEngine, Callable[[MergeOptions], MergeFunction]] = {
    MergeEngine.DEDUPLICATE: Deduplicate,
    MergeEngine.FIRST_ROW: FirstRow,
    MergeEngine.PARTIAL_UPDATE: PartialUpdate,
    MergeEngine.AGGREGATION: Aggregate,
}
