"""The merge options of a primary-key table, parsed once and checked as Paimon checks
them when a table is created (``SchemaValidation.validateTableSchema``, the merge
function factories' constructors, ``FieldAggregatorFactory.create``), plus what tablelog
refuses because it does not build it. Every refusal is an
:class:`~tablelog.errors.OptionError` of one line naming the key, the value and what is
allowed.

Values are read as Java reads them (``OptionsUtils``): enums and booleans case-insensitive
but not trimmed, lists split on ``,`` with trailing empty items dropped
(``String.split``), ``sequence.field`` items trimmed and sequence-group items not.

Long because: every merge option Paimon defines is parsed or refused here, once, next to
the create-time checks Paimon runs on it.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import pyarrow as pa

from tablelog.errors import OptionError
from tablelog.merging.aggregators import BUILT_FUNCTIONS, UNBUILT_FUNCTIONS, type_refusal
from tablelog.option_values import invalid_value


class MergeEngine(str, enum.Enum):
    DEDUPLICATE = "deduplicate"
    PARTIAL_UPDATE = "partial-update"
    AGGREGATION = "aggregation"
    FIRST_ROW = "first-row"


class ChangelogProducer(str, enum.Enum):
    NONE = "none"
    INPUT = "input"
    LOOKUP = "lookup"


@attrs.frozen
class FieldFunction:
    """How one column is aggregated: Paimon's function name and its per-field options."""

    function: str
    ignore_retract: bool = False
    delimiter: str = ","  # fields.<f>.list-agg-delimiter
    distinct: bool = False  # fields.<f>.distinct


@attrs.frozen
class SequenceGroup:
    """``fields.<sequence_fields>.sequence-group = <fields>`` of a partial-update table."""

    sequence_fields: tuple[str, ...]
    fields: tuple[str, ...]


@attrs.frozen
class MergeOptions:
    """What the merge of a key's records needs to know of its table."""

    columns: tuple[str, ...]  # every column, in schema order (Paimon's value row)
    types: Mapping[str, pa.DataType]
    nullable: Mapping[str, bool]
    primary_key: tuple[str, ...]
    engine: MergeEngine = MergeEngine.DEDUPLICATE
    changelog_producer: ChangelogProducer = ChangelogProducer.NONE
    sequence_fields: tuple[str, ...] = ()
    sequence_ascending: bool = True
    ignore_delete: bool = False
    ignore_update_before: bool = False
    row_deduplicate: bool = False
    row_deduplicate_ignore_fields: tuple[str, ...] = ()
    partial_update_remove_record_on_delete: bool = False
    remove_record_on_sequence_group: tuple[str, ...] = ()  # sequence fields whose group's -D removes the row
    aggregation_remove_record_on_delete: bool = False
    sequence_groups: tuple[SequenceGroup, ...] = ()
    #: Per column, its function: every column for aggregation; for partial-update the
    #: columns that have one (key columns get ``primary-key``).
    functions: Mapping[str, FieldFunction] = attrs.field(factory=dict)

    @property
    def merged_changelog(self) -> bool:
        """Whether the log carries the table's changelog (Paimon's ``lookup`` producer)
        rather than the writes: every engine but deduplicate, and deduplicate with ``lookup``."""
        return self.engine is not MergeEngine.DEDUPLICATE or self.changelog_producer is ChangelogProducer.LOOKUP


_IGNORE_DELETE_KEYS = ("ignore-delete", "first-row.ignore-delete", "deduplicate.ignore-delete", "partial-update.ignore-delete")
_FIELD_SUFFIXES_BUILT = ("aggregate-function", "ignore-retract", "list-agg-delimiter", "distinct", "sequence-group")
#: Per-field options of functions tablelog does not build (Paimon's nested_update,
#: collect/merge_map and their kin).
_FIELD_SUFFIXES_UNBUILT = ("nested-key", "nested-key-null-strategy", "nested-sequence-field", "count-limit", "ts-field")
_COUNT_REASON = (
    "Paimon defines no 'count' aggregate function (Java and pypaimon refuse the table); "
    "count with 'sum' over a column that is 1 for each row"
)


def parse_merge_options(
    options: Mapping[str, Any], schema: pa.Schema, primary_key: Sequence[str], partition_keys: Sequence[str] = (),
) -> MergeOptions:
    """The merge options of a table with this schema and primary key, or an
    :class:`OptionError` for the first one Paimon or tablelog refuses."""
    given = {k: str(v) if not isinstance(v, bool) else str(v).lower() for k, v in options.items()}
    columns = tuple(schema.names)
    keys = tuple(primary_key)
    engine = _enum(given, "merge-engine", MergeEngine, MergeEngine.DEDUPLICATE)
    producer = _changelog_producer(given, engine)
    ignore_delete = _first_bool(given, _IGNORE_DELETE_KEYS)
    _refuse_unbuilt_switches(given)
    _check_field_keys(given, columns)
    sequence_fields = _sequence_fields(given, columns, engine, keys, partition_keys)
    ascending = _enum(given, "sequence.field.sort-order", _SortOrder, _SortOrder.ASCENDING) is _SortOrder.ASCENDING
    if "sequence.field.sort-order" in given and not sequence_fields:
        raise OptionError(
            f"table option sequence.field.sort-order={given['sequence.field.sort-order']!r} is set "
            "without sequence.field: Paimon would ignore it; set sequence.field or remove it"
        )
    _refuse_ignored_by_engine(given, engine)
    _refuse_functions_paimon_ignores(given, engine, keys)
    types = {f.name: f.type for f in schema}
    groups: tuple[SequenceGroup, ...] = ()
    functions: dict[str, FieldFunction] = {}
    remove_on_delete = _bool(given, "partial-update.remove-record-on-delete")
    remove_on_group: tuple[str, ...] = ()
    agg_remove = _bool(given, "aggregation.remove-record-on-delete")
    if engine is MergeEngine.PARTIAL_UPDATE:
        groups = _sequence_groups(given, columns, keys)
        functions = _partial_update_functions(given, columns, keys, groups, types)
        remove_on_group = _partial_update_deletes(given, groups, ignore_delete, remove_on_delete)
    elif engine is MergeEngine.AGGREGATION:
        functions = _aggregation_functions(given, columns, keys, sequence_fields, types, agg_remove)
    ignore_fields = _split(given.get("changelog-producer.row-deduplicate-ignore-fields"))
    unknown = [f for f in ignore_fields if f not in columns]
    if unknown:
        raise invalid_value(
            "changelog-producer.row-deduplicate-ignore-fields", given["changelog-producer.row-deduplicate-ignore-fields"],
            f"{unknown} are not columns; columns: {', '.join(columns)}",
        )
    return MergeOptions(
        columns=columns, types=types, nullable={f.name: f.nullable and f.name not in keys for f in schema},
        primary_key=keys, engine=engine, changelog_producer=producer, sequence_fields=sequence_fields,
        sequence_ascending=ascending, ignore_delete=ignore_delete,
        ignore_update_before=_bool(given, "ignore-update-before"),
        row_deduplicate=_bool(given, "changelog-producer.row-deduplicate"),
        row_deduplicate_ignore_fields=tuple(ignore_fields),
        partial_update_remove_record_on_delete=remove_on_delete, remove_record_on_sequence_group=remove_on_group,
        aggregation_remove_record_on_delete=agg_remove, sequence_groups=groups, functions=functions,
    )


class _SortOrder(str, enum.Enum):
    ASCENDING = "ascending"
    DESCENDING = "descending"


def _enum(given: Mapping[str, str], key: str, enum_type: Any, default: Any) -> Any:
    """Java's ``OptionsUtils.convertToEnum``: case-insensitive, not trimmed."""
    if key not in given:
        return default
    for member in enum_type:
        if member.value.upper() == given[key].upper():
            return member
    raise invalid_value(key, given[key], "allowed: " + ", ".join(repr(m.value) for m in enum_type))


def _bool(given: Mapping[str, str], key: str) -> bool:
    """Java's ``OptionsUtils.convertToBoolean``: ``true`` or ``false``, any case, not trimmed
    (pypaimon also reads ``1``/``yes``/``on``; Java refuses them)."""
    if key not in given:
        return False
    if given[key].upper() not in ("TRUE", "FALSE"):
        raise invalid_value(key, given[key], "allowed: 'true', 'false'")
    return given[key].upper() == "TRUE"


def _first_bool(given: Mapping[str, str], keys: Sequence[str]) -> bool:
    """An option with fallback keys: the first key given wins (Java's ``withFallbackKeys``)."""
    return next((_bool(given, k) for k in keys if k in given), False)


def _split(value: str | None) -> list[str]:
    """Java's ``value.split(",")``: trailing empty items dropped, others kept as they are."""
    if value is None:
        return []
    items = value.split(",")
    while len(items) > 1 and items[-1] == "":
        items.pop()
    return items


def _refused(key: str, value: str, reason: str) -> OptionError:
    return OptionError(f"table option {key}={value!r} is not supported: {reason}")


def _changelog_producer(given: Mapping[str, str], engine: MergeEngine) -> ChangelogProducer:
    key = "changelog-producer"
    value = given.get(key)
    if value is not None and value.upper() == "FULL-COMPACTION":
        raise _refused(
            key, value, "tablelog runs no full compaction at each commit (allowed: 'none', 'input', 'lookup'); "
            "'lookup' gives the same changes at commit latency",
        )
    producer = _enum(given, key, ChangelogProducer, ChangelogProducer.NONE)
    if engine is MergeEngine.FIRST_ROW and producer is ChangelogProducer.INPUT:
        raise _refused(key, value or "", "Only support 'none' and 'lookup' changelog-producer on FIRST_ROW merge engine")
    if engine is not MergeEngine.DEDUPLICATE and producer is ChangelogProducer.INPUT:
        raise _refused(
            key, value or "", f"with merge-engine={engine.value!r} (allowed: 'none', 'lookup'): changelog files "
            "of the input would hold partial rows, not the table's changes that the log carries",
        )
    return producer


def _refuse_unbuilt_switches(given: Mapping[str, str]) -> None:
    """Paimon switches whose other value tablelog does not build."""
    for key in ("lookup-wait", "changelog-producer.lookup-wait"):
        if key in given and not _bool(given, key):
            raise _refused(
                key, given[key], "tablelog computes a commit's changes when it writes, so commits always "
                "wait for them (allowed: 'true')",
            )
    for key, reason in (
        ("force-lookup", "tablelog's compaction does not look keys up (allowed: 'false')"),
        ("sequence.snapshot-ordering", "tablelog orders a key's records by sequence number, not by snapshot (allowed: 'false')"),
    ):
        if key in given and _bool(given, key):
            raise _refused(key, given[key], reason)


def _check_field_keys(given: Mapping[str, str], columns: tuple[str, ...]) -> None:
    """``SchemaValidation.validateFieldsPrefix``: every ``fields.<names>.…`` key names
    columns; and the per-field options of functions tablelog does not build."""
    for key, value in given.items():
        if not key.startswith("fields"):
            continue
        segments = key.split(".")
        names = _split(segments[1]) if len(segments) > 1 else [""]
        unknown = [n for n in names if n != "default-aggregate-function" and n not in columns]
        if unknown:
            raise _refused(key, value, f"Field {unknown[0]} can not be found in table schema; columns: {', '.join(columns)}")
        suffix = ".".join(segments[2:])
        if suffix in _FIELD_SUFFIXES_UNBUILT:
            raise _refused(key, value, "an option of Paimon aggregate functions tablelog does not build "
                           f"({', '.join(UNBUILT_FUNCTIONS)})")


def _sequence_fields(
    given: Mapping[str, str], columns: tuple[str, ...], engine: MergeEngine, keys: tuple[str, ...],
    partition_keys: Sequence[str],
) -> tuple[str, ...]:
    """``CoreOptions.sequenceField`` and ``SchemaValidation.validateSequenceField``."""
    value = given.get("sequence.field")
    if value is None:
        return ()
    fields = [f.strip() for f in _split(value)]
    for field in fields:
        if field not in columns:
            raise invalid_value("sequence.field", value, f"Sequence field: '{field}' can not be found in table schema; columns: {', '.join(columns)}")
        if f"fields.{field}.aggregate-function" in given:
            raise invalid_value("sequence.field", value, f"Should not define aggregation on sequence field: '{field}'")
        if fields.count(field) > 1:
            raise invalid_value("sequence.field", value, f"Sequence field '{field}' is defined repeatedly")
    if engine is MergeEngine.FIRST_ROW:
        raise _refused("sequence.field", value, "Do not support use sequence field on FIRST_ROW merge engine")
    if not set(partition_keys) <= set(keys):
        raise _refused(
            "sequence.field", value, "You can not use sequence.field in cross partition update case (Primary key "
            f"constraint {list(keys)} not include all partition fields {list(partition_keys)})",
        )
    return tuple(fields)


def _refuse_ignored_by_engine(given: Mapping[str, str], engine: MergeEngine) -> None:
    """Options Paimon would accept and then ignore under this engine: refused, so a table
    never looks configured for what it does not do."""
    for key, value in given.items():
        if key.startswith("fields.") and key != "fields.default-aggregate-function":
            suffix = key.rsplit(".", 1)[-1]
            if suffix not in _FIELD_SUFFIXES_BUILT:
                continue
            wanted = (MergeEngine.PARTIAL_UPDATE,) if suffix == "sequence-group" else (
                MergeEngine.PARTIAL_UPDATE, MergeEngine.AGGREGATION)
        elif key == "fields.default-aggregate-function":
            wanted = (MergeEngine.PARTIAL_UPDATE, MergeEngine.AGGREGATION)
        elif key.startswith("partial-update."):
            wanted = (MergeEngine.PARTIAL_UPDATE,)
        elif key.startswith("aggregation."):
            wanted = (MergeEngine.AGGREGATION,)
        else:
            continue
        if engine not in wanted:
            allowed = " or ".join(repr(e.value) for e in wanted)
            raise _refused(key, value, f"only merge-engine {allowed} uses it; this table's is {engine.value!r}")


def _refuse_functions_paimon_ignores(given: Mapping[str, str], engine: MergeEngine, keys: tuple[str, ...]) -> None:
    """A function on a key column, or on a partial-update group's sequence field: Paimon
    gives those columns their own (``getAggFuncName``) and would ignore it."""
    group_sequence = {
        f for k in given if k.startswith("fields.") and k.endswith(".sequence-group")
        for f in _split(k[len("fields."):-len(".sequence-group")])
    } if engine is MergeEngine.PARTIAL_UPDATE else set()
    for field in (*keys, *sorted(group_sequence)):
        key = f"fields.{field}.aggregate-function"
        if key in given:
            role = "a primary key column" if field in keys else "a sequence-group's sequence field"
            raise _refused(key, given[key], f"{field} is {role}: Paimon gives it its own function and would ignore this one")


def _function_name(given: Mapping[str, str], field: str) -> tuple[str | None, str]:
    """``fields.<f>.aggregate-function``, else ``fields.default-aggregate-function``: the name and its key."""
    key = f"fields.{field}.aggregate-function"
    if key in given:
        return given[key], key
    return given.get("fields.default-aggregate-function"), "fields.default-aggregate-function"


def _check_function(name: str, key: str, field: str, type_: pa.DataType) -> None:
    if name == "count":
        raise _refused(key, name, _COUNT_REASON)
    if name in UNBUILT_FUNCTIONS:
        raise _refused(key, name, f"tablelog does not build this Paimon function (built: {', '.join(BUILT_FUNCTIONS)})")
    if name not in BUILT_FUNCTIONS:
        raise invalid_value(key, name, f"Use unsupported aggregation: {name} or spell aggregate function incorrectly; "
                            f"allowed: {', '.join(BUILT_FUNCTIONS)}")
    refusal = type_refusal(name, field, type_)
    if refusal:
        raise invalid_value(key, name, f"{refusal} (column {field})")


def _field_function(given: Mapping[str, str], field: str, name: str) -> FieldFunction:
    distinct_key = f"fields.{field}.distinct"
    return FieldFunction(
        function=name, ignore_retract=_bool(given, f"fields.{field}.ignore-retract"),
        delimiter=given.get(f"fields.{field}.list-agg-delimiter", ","),
        distinct=_bool(given, distinct_key),
    )


def _aggregation_functions(
    given: Mapping[str, str], columns: tuple[str, ...], keys: tuple[str, ...], sequence_fields: tuple[str, ...],
    types: Mapping[str, pa.DataType], remove_on_delete: bool,
) -> dict[str, FieldFunction]:
    """``AggregateMergeFunction.getAggFuncName`` for every column, each function checked
    as ``FieldAggregatorFactory.create`` does."""
    functions = {}
    for field in columns:
        if field in sequence_fields:
            name = "last_value"
        elif field in keys:
            name = "primary-key"
        else:
            given_name, key = _function_name(given, field)
            name = given_name or "last_non_null_value"
            if given_name is not None:
                _check_function(name, key, field, types[field])
        function = _field_function(given, field, name)
        if remove_on_delete and function.ignore_retract:
            raise _refused(
                f"fields.{field}.ignore-retract", given[f"fields.{field}.ignore-retract"],
                "aggregation.remove-record-on-delete and fields.${field}.ignore-retract have conflicting "
                "behavior so should not be enabled at the same time",
            )
        functions[field] = function
    return functions


def _sequence_groups(given: Mapping[str, str], columns: tuple[str, ...], keys: tuple[str, ...]) -> tuple[SequenceGroup, ...]:
    """The ``fields.<s>.sequence-group`` options, checked as
    ``PartialUpdateMergeFunction.Factory`` does (plus: a column in two groups in any role,
    which Java accepts or refuses depending on its map's iteration order)."""
    groups = []
    seen: dict[str, str] = {}
    for key, value in given.items():
        if not (key.startswith("fields") and key.endswith("sequence-group")):
            continue
        if not (key.startswith("fields.") and key.endswith(".sequence-group")):
            raise _refused(key, value, "not a sequence group option (fields.<sequence fields>.sequence-group)")
        sequence_fields = tuple(_split(key[len("fields."):-len(".sequence-group")]))
        fields = tuple(_split(value))
        for field in (*fields, *sequence_fields):
            if field not in columns:
                raise invalid_value(key, value, f"Field {field} can not be found in table schema; columns: {', '.join(columns)}")
            if field in keys:
                raise invalid_value(key, value, f"The sequence-group contains primary key field '{field}', which is "
                                    "not allowed. Primary key columns cannot be put in sequence-group")
            if field in seen:
                raise invalid_value(key, value, f"Field {field} is defined repeatedly by multiple groups: {seen[field]}")
            seen[field] = key
        groups.append(SequenceGroup(sequence_fields, fields))
    return tuple(groups)


def _partial_update_functions(
    given: Mapping[str, str], columns: tuple[str, ...], keys: tuple[str, ...], groups: tuple[SequenceGroup, ...],
    types: Mapping[str, pa.DataType],
) -> dict[str, FieldFunction]:
    """``PartialUpdateMergeFunction.getAggFuncName``: sequence fields get none, key
    columns ``primary-key``; a function on another column needs the column in a
    sequence group unless it is ``last_non_null_value``."""
    group_sequence = {f for g in groups for f in g.sequence_fields}
    protected = {f for g in groups for f in g.fields}
    functions = {}
    for field in columns:
        if field in group_sequence:
            continue
        if field in keys:
            functions[field] = _field_function(given, field, "primary-key")
            continue
        name, key = _function_name(given, field)
        if name is None:
            continue
        _check_function(name, key, field, types[field])
        if name != "last_non_null_value" and field not in protected:
            raise _refused(key, name, f"Must use sequence group for aggregation functions but not found for field {field}")
        functions[field] = _field_function(given, field, name)
    return functions


def _partial_update_deletes(
    given: Mapping[str, str], groups: tuple[SequenceGroup, ...], ignore_delete: bool, remove_on_delete: bool,
) -> tuple[str, ...]:
    """The delete options' conflicts (``PartialUpdateMergeFunction.Factory``)."""
    on_group_key = "partial-update.remove-record-on-sequence-group"
    on_group = given.get(on_group_key)
    conflicts = (
        (remove_on_delete and ignore_delete, "partial-update.remove-record-on-delete", "ignore-delete"),
        (on_group is not None and ignore_delete, on_group_key, "ignore-delete"),
        (remove_on_delete and bool(groups), "partial-update.remove-record-on-delete", "sequence-group"),
    )
    for conflict, key, other in conflicts:
        if conflict:
            raise _refused(key, given[key], f"{other} and {key} have conflicting behavior so should not be enabled at the same time")
    if on_group is None:
        return ()
    fields = tuple(_split(on_group))
    sequence_fields = {f for g in groups for f in g.sequence_fields}
    if not set(fields) <= sequence_fields:
        raise invalid_value(on_group_key, on_group, f"field '{on_group}' defined in '{on_group_key}' option must be "
                            f"part of sequence groups (sequence fields: {', '.join(sorted(sequence_fields)) or 'none'})")
    return fields
