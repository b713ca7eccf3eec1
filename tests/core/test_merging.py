"""Paimon's merge engines in Python (``tablelog.merging``): each behaviour against the
Java class it follows. Cases marked "Java:" are transcribed from Paimon's own tests
(paimon-core/src/test/java/org/apache/paimon/mergetree/compact/, commit 5dacde51)."""

from __future__ import annotations

import decimal
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pytest

from tablelog.errors import OptionError
from tablelog.merging import (
    KeyValue,
    LookupResult,
    MergeEngine,
    MergeError,
    changelog,
    lookup,
    merge,
    merged_row,
    parse_merge_options,
    writable,
)
from tablelog.merging.engines import merge_function
from tablelog.merging.options import MergeOptions
from tablelog.records import RowKind

INS, UB, UA, D = RowKind.INSERT, RowKind.UPDATE_BEFORE, RowKind.UPDATE_AFTER, RowKind.DELETE


def ints(count: int, not_null: Sequence[int] = (0,)) -> pa.Schema:
    """Java's ``RowType.of(INT, ...)``: columns f0..f{count-1}, f0 the key."""
    return pa.schema([pa.field(f"f{i}", pa.int32(), nullable=i not in not_null) for i in range(count)])


def opts(options: Mapping[str, str], schema: pa.Schema, key: Sequence[str] = ("f0",), **kw: Any) -> MergeOptions:
    return parse_merge_options(options, schema, key, **kw)


class Fold:
    """A merge function fed record by record, as the Java tests' ``add``/``validate`` do."""

    def __init__(self, options: MergeOptions) -> None:
        self.options = options
        self.function = merge_function(options)
        self.sequence = 0

    def add(self, *values: Any, kind: RowKind = INS) -> None:
        self.function.add(KeyValue(kind, dict(zip(self.options.columns, values, strict=True)), self.sequence))
        self.sequence += 1

    def values(self) -> tuple[Any, ...]:
        result = self.function.result()
        assert result is not None
        return tuple(result.row[c] for c in self.options.columns)


def rows(options: MergeOptions, *records: tuple[Any, ...], kind: RowKind = INS) -> list[KeyValue]:
    return [KeyValue(kind, dict(zip(options.columns, values, strict=True)), n) for n, values in enumerate(records)]


# --- options: what Paimon (or tablelog) refuses at create ---------------------------------


def test_count_is_refused_as_no_paimon_function_with_the_way_to_count() -> None:
    with pytest.raises(OptionError, match=r"fields\.f1\.aggregate-function='count'.*sum"):
        opts({"merge-engine": "aggregation", "fields.f1.aggregate-function": "count"}, ints(2))


def test_a_paimon_function_tablelog_does_not_build_is_refused() -> None:
    with pytest.raises(OptionError, match=r"'product' is not supported: tablelog does not build"):
        opts({"merge-engine": "aggregation", "fields.f1.aggregate-function": "product"}, ints(2))


def test_a_misspelt_function_is_refused_listing_the_built_ones() -> None:
    with pytest.raises(OptionError, match=r"Use unsupported aggregation: summ.*allowed: sum, min"):
        opts({"merge-engine": "aggregation", "fields.default-aggregate-function": "summ"}, ints(2))


def test_sum_over_a_string_column_is_refused() -> None:
    schema = pa.schema([pa.field("k", pa.int32(), nullable=False), pa.field("s", pa.string())])
    with pytest.raises(OptionError, match="must be 'NumericType'"):
        opts({"merge-engine": "aggregation", "fields.s.aggregate-function": "sum"}, schema, ("k",))


def test_listagg_over_an_int_column_is_refused() -> None:
    with pytest.raises(OptionError, match="list agg column must be STRING"):
        opts({"merge-engine": "aggregation", "fields.f1.aggregate-function": "listagg"}, ints(2))


def test_a_sequence_field_on_first_row_is_refused() -> None:
    with pytest.raises(OptionError, match="Do not support use sequence field on FIRST_ROW"):
        opts({"merge-engine": "first-row", "sequence.field": "f1"}, ints(2))


def test_a_sequence_field_naming_no_column_is_refused() -> None:
    with pytest.raises(OptionError, match=r"'sequence.field'.*Sequence field: 'ts' can not be found"):
        opts({"sequence.field": "f1,ts"}, ints(2))


def test_a_sequence_field_named_twice_is_refused() -> None:
    with pytest.raises(OptionError, match="defined repeatedly"):
        opts({"sequence.field": "f1, f1"}, ints(2))


def test_an_aggregate_function_on_the_sequence_field_is_refused() -> None:
    with pytest.raises(OptionError, match="Should not define aggregation on sequence field: 'f1'"):
        opts({"merge-engine": "aggregation", "sequence.field": "f1", "fields.f1.aggregate-function": "sum"}, ints(2))


def test_a_sequence_field_with_cross_partition_update_is_refused() -> None:
    with pytest.raises(OptionError, match="cross partition update"):
        opts({"sequence.field": "f1"}, ints(3), partition_keys=("f2",))


def test_first_row_refuses_changelog_producer_input() -> None:
    with pytest.raises(OptionError, match="Only support 'none' and 'lookup' changelog-producer on FIRST_ROW"):
        opts({"merge-engine": "first-row", "changelog-producer": "input"}, ints(2))


def test_changelog_producer_input_with_a_merging_engine_is_refused() -> None:
    with pytest.raises(OptionError, match="changelog-producer='input'.*partial rows"):
        opts({"merge-engine": "partial-update", "changelog-producer": "input"}, ints(2))


def test_changelog_producer_full_compaction_is_refused_pointing_to_lookup() -> None:
    with pytest.raises(OptionError, match="'full-compaction' is not supported.*'lookup' gives the same changes"):
        opts({"changelog-producer": "full-compaction"}, ints(2))


def test_lookup_wait_false_is_refused() -> None:
    with pytest.raises(OptionError, match="lookup-wait='false'"):
        opts({"lookup-wait": "false"}, ints(2))


def test_a_partial_update_function_outside_a_sequence_group_is_refused() -> None:
    with pytest.raises(OptionError, match="Must use sequence group for aggregation functions but not found for field f1"):
        opts({"merge-engine": "partial-update", "fields.f1.aggregate-function": "sum"}, ints(2))


def test_a_partial_update_last_non_null_value_needs_no_sequence_group() -> None:
    options = opts({"merge-engine": "partial-update", "fields.f1.aggregate-function": "last_non_null_value"}, ints(2))
    assert options.functions["f1"].function == "last_non_null_value"


def test_remove_record_on_delete_and_ignore_delete_are_refused_together() -> None:
    with pytest.raises(OptionError, match="ignore-delete and partial-update.remove-record-on-delete have conflicting"):
        opts({"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true",
              "ignore-delete": "true"}, ints(2))


def test_remove_record_on_delete_and_sequence_groups_are_refused_together() -> None:
    with pytest.raises(OptionError, match="sequence-group and partial-update.remove-record-on-delete"):
        opts({"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true",
              "fields.f2.sequence-group": "f1"}, ints(3))


def test_remove_record_on_sequence_group_must_name_a_group_sequence_field() -> None:
    with pytest.raises(OptionError, match="must be part of sequence groups"):
        opts({"merge-engine": "partial-update", "fields.f2.sequence-group": "f1",
              "partial-update.remove-record-on-sequence-group": "f1"}, ints(3))


def test_a_primary_key_column_in_a_sequence_group_is_refused() -> None:
    # Java: PartialUpdateMergeFunctionTest.testPrimaryKeyCannotBeInSequenceGroupValue
    with pytest.raises(OptionError, match="contains primary key field 'f0'"):
        opts({"merge-engine": "partial-update", "fields.f2.sequence-group": "f0,f1"}, ints(3))


def test_a_column_in_two_sequence_groups_is_refused() -> None:
    # Java: PartialUpdateMergeFunctionTest.testSequenceGroupRepeatDefine
    with pytest.raises(OptionError, match="Field f1 is defined repeatedly by multiple groups"):
        opts({"merge-engine": "partial-update", "fields.f2.sequence-group": "f1",
              "fields.f3.sequence-group": "f1"}, ints(4))


def test_ignore_retract_with_aggregation_remove_record_on_delete_is_refused() -> None:
    with pytest.raises(OptionError, match="conflicting behavior"):
        opts({"merge-engine": "aggregation", "aggregation.remove-record-on-delete": "true",
              "fields.f1.ignore-retract": "true"}, ints(2))


def test_an_option_the_engine_would_ignore_is_refused() -> None:
    with pytest.raises(OptionError, match=r"only merge-engine 'partial-update' or 'aggregation' uses it; this table's is 'deduplicate'"):
        opts({"fields.f1.aggregate-function": "sum"}, ints(2))


def test_a_fields_option_naming_no_column_is_refused() -> None:
    # Java: SchemaValidation.validateFieldsPrefix
    with pytest.raises(OptionError, match="Field nope can not be found in table schema"):
        opts({"merge-engine": "aggregation", "fields.nope.aggregate-function": "sum"}, ints(2))


def test_a_function_on_a_key_column_is_refused_as_paimon_would_ignore_it() -> None:
    with pytest.raises(OptionError, match="f0 is a primary key column"):
        opts({"merge-engine": "aggregation", "fields.f0.aggregate-function": "sum"}, ints(2))


def test_a_function_on_a_sequence_group_field_is_refused_as_paimon_would_ignore_it() -> None:
    with pytest.raises(OptionError, match="f2 is a sequence-group's sequence field"):
        opts({"merge-engine": "partial-update", "fields.f2.sequence-group": "f1",
              "fields.f2.aggregate-function": "max"}, ints(3))


def test_an_option_of_an_unbuilt_function_is_refused() -> None:
    with pytest.raises(OptionError, match="fields.f1.nested-key='a' is not supported"):
        opts({"merge-engine": "aggregation", "fields.f1.nested-key": "a"}, ints(2))


def test_booleans_are_read_as_java_reads_them() -> None:
    assert opts({"ignore-delete": "TRUE"}, ints(2)).ignore_delete
    with pytest.raises(OptionError, match=r"invalid value 'yes' for option 'ignore-delete': allowed: 'true', 'false'"):
        opts({"ignore-delete": "yes"}, ints(2))


def test_the_merge_engine_is_read_case_insensitively_as_in_java() -> None:
    assert opts({"merge-engine": "Partial-Update"}, ints(2)).engine is MergeEngine.PARTIAL_UPDATE
    with pytest.raises(OptionError, match=r"'merge-engine': allowed: 'deduplicate', 'partial-update'"):
        opts({"merge-engine": "last-row"}, ints(2))


def test_ignore_delete_is_read_from_its_fallback_keys() -> None:
    assert opts({"merge-engine": "first-row", "first-row.ignore-delete": "true"}, ints(2)).ignore_delete


@pytest.mark.parametrize(
    "given",
    [
        {"merge-engine": "aggregation", "fields.f1.aggregate-function": "count"},
        {"sequence.field": "ts"},
        {"merge-engine": "first-row", "changelog-producer": "input"},
        {"sequence.field.sort-order": "up", "sequence.field": "f1"},
        {"changelog-producer.row-deduplicate-ignore-fields": "nope"},
    ],
)
def test_every_refusal_is_one_line_naming_the_key_and_value(given: dict[str, str]) -> None:
    with pytest.raises(OptionError) as refused:
        opts(given, ints(2))
    message = str(refused.value)
    key, value = next((k, v) for k, v in given.items() if k in message)
    assert "\n" not in message and repr(value) in message, message


def test_aggregation_gives_each_column_its_function_as_java_does() -> None:
    # Java: AggregateMergeFunction.getAggFuncName
    options = opts({"merge-engine": "aggregation", "sequence.field": "f1", "fields.f2.aggregate-function": "sum",
                    "fields.default-aggregate-function": "max"}, ints(4))
    assert {c: f.function for c, f in options.functions.items()} == {
        "f0": "primary-key", "f1": "last_value", "f2": "sum", "f3": "max"}


# --- order: sequence.field against write order -------------------------------------------


def test_without_a_sequence_field_the_last_write_wins() -> None:
    options = opts({}, ints(2))
    assert merge(rows(options, (1, 5), (1, 3)), options) == KeyValue(INS, {"f0": 1, "f1": 3}, 1)


def test_a_late_record_under_a_sequence_field_keeps_the_newer_row() -> None:
    options = opts({"sequence.field": "f1"}, ints(3))
    result = merge(rows(options, (1, 10, 100), (1, 5, 50)), options)
    assert merged_row(result) == {"f0": 1, "f1": 10, "f2": 100}


def test_a_descending_sequence_field_keeps_the_smallest_value_last() -> None:
    options = opts({"sequence.field": "f1", "sequence.field.sort-order": "descending"}, ints(3))
    assert merged_row(merge(rows(options, (1, 5, 50), (1, 10, 100)), options)) == {"f0": 1, "f1": 5, "f2": 50}


@pytest.mark.parametrize("order", ["ascending", "descending"])
def test_a_null_sequence_value_sorts_first_in_both_orders(order: str) -> None:
    options = opts({"sequence.field": "f1", "sequence.field.sort-order": order}, ints(3))
    assert merged_row(merge(rows(options, (1, 10, 100), (1, None, 0)), options)) == {"f0": 1, "f1": 10, "f2": 100}


def test_several_sequence_fields_compare_in_their_order_then_write_order() -> None:
    options = opts({"sequence.field": "f1,f2"}, ints(4))
    records = rows(options, (1, 2, 1, 1), (1, 1, 9, 2), (1, 2, 1, 3))
    assert merged_row(merge(records, options)) == {"f0": 1, "f1": 2, "f2": 1, "f3": 3}


# --- deduplicate and first-row -----------------------------------------------------------


def test_deduplicate_a_delete_last_leaves_the_key_absent() -> None:
    options = opts({}, ints(2))
    result = merge([*rows(options, (1, 5)), KeyValue(D, {"f0": 1, "f1": 5}, 1)], options)
    assert result is not None and result.kind is D and merged_row(result) is None


def test_deduplicate_with_ignore_delete_skips_retractions() -> None:
    options = opts({"ignore-delete": "true"}, ints(2))
    assert merged_row(merge([*rows(options, (1, 5)), KeyValue(D, {"f0": 1, "f1": 5}, 1)], options)) == {"f0": 1, "f1": 5}


def test_a_writer_drops_what_ignore_delete_and_ignore_update_before_say() -> None:
    ignore_delete, ignore_update_before = opts({"ignore-delete": "true"}, ints(2)), opts({"ignore-update-before": "true"}, ints(2))
    assert [writable(k, ignore_delete) for k in (INS, UB, UA, D)] == [True, False, True, False]
    assert [writable(k, ignore_update_before) for k in (INS, UB, UA, D)] == [True, False, True, True]


def test_first_row_keeps_the_first_record() -> None:
    options = opts({"merge-engine": "first-row"}, ints(2))
    assert merged_row(merge(rows(options, (1, 5), (1, 6)), options)) == {"f0": 1, "f1": 5}


def test_first_row_refuses_a_delete_without_ignore_delete() -> None:
    options = opts({"merge-engine": "first-row"}, ints(2))
    with pytest.raises(MergeError, match="First row merge engine can not accept DELETE/UPDATE_BEFORE"):
        merge(rows(options, (1, 5), kind=D), options)


# --- partial-update ----------------------------------------------------------------------


def test_partial_update_non_null_values_overwrite() -> None:
    # Java: PartialUpdateMergeFunctionTest.testUpdateNonNull
    fold = Fold(opts({"merge-engine": "partial-update"}, ints(7)))
    fold.add(1, 1, 1, 1, 1, 1, 1)
    fold.add(1, 2, 2, 2, 2, 2, None)
    assert fold.values() == (1, 2, 2, 2, 2, 2, 1)


def test_partial_update_a_null_in_a_not_null_column_is_an_error() -> None:
    fold = Fold(opts({"merge-engine": "partial-update"}, ints(3, not_null=(0, 1))))
    with pytest.raises(MergeError, match="Field 1 can not be null"):
        fold.add(1, None, 3)


def test_partial_update_refuses_a_delete_without_delete_options() -> None:
    options = opts({"merge-engine": "partial-update"}, ints(2))
    with pytest.raises(MergeError, match="Partial update can not accept delete records.*ignore-delete"):
        merge([*rows(options, (1, 5)), KeyValue(D, {"f0": 1, "f1": 5}, 1)], options)


def test_partial_update_remove_record_on_delete_restarts_the_row_from_the_delete() -> None:
    fold = Fold(opts({"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"}, ints(3)))
    fold.add(1, 1, 1)
    fold.add(1, 9, None, kind=D)
    assert fold.function.result() == KeyValue(D, {"f0": 1, "f1": 9, "f2": None}, 1)
    fold.add(1, None, 2)
    assert fold.function.result() == KeyValue(INS, {"f0": 1, "f1": 9, "f2": 2}, 2)


def test_partial_update_remove_record_on_delete_skips_an_update_before() -> None:
    fold = Fold(opts({"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"}, ints(2)))
    fold.add(1, 1)
    fold.add(1, 1, kind=UB)
    assert fold.function.result() == KeyValue(INS, {"f0": 1, "f1": 1}, 1)


def test_partial_update_a_lone_retraction_gives_a_delete_result() -> None:
    # `meetInsert`: no insert took part, so the result is a -D even with ignore-delete
    options = opts({"merge-engine": "partial-update", "ignore-delete": "true"}, ints(2))
    result = merge(rows(options, (1, 4), kind=D), options)
    assert result is not None and result.kind is D and merged_row(result) is None


def test_partial_update_delete_keeps_its_sequence_number() -> None:
    # Java: PartialUpdateMergeFunctionTest.testDeleteReproduceCorrectSequenceNumber
    fold = Fold(opts({"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"}, ints(5)))
    fold.add(1, 1, 1, 1, 1)
    fold.add(1, 1, 1, 1, 1, kind=D)
    result = fold.function.result()
    assert result is not None and result.sequence == 1


def test_partial_update_delete_initializes_nullable_columns_as_null() -> None:
    # Java: PartialUpdateMergeFunctionTest.testInitRowWithNullableFieldOnDelete
    fold = Fold(opts({"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"},
                     ints(4, not_null=(0, 1))))
    fold.add(1, 3, 5, 7)
    fold.add(1, 2, 2, None, kind=D)
    assert fold.values() == (1, 2, 2, None)


def test_partial_update_sequence_groups_update_and_retract_their_columns() -> None:
    # Java: PartialUpdateMergeFunctionTest.testSequenceGroup
    fold = Fold(opts({"merge-engine": "partial-update", "fields.f3.sequence-group": "f1,f2",
                      "fields.f6.sequence-group": "f4,f5"}, ints(7)))
    fold.add(1, 1, 1, 1, 1, 1, 1)
    fold.add(1, 2, 2, 2, 2, 2, None)
    assert fold.values() == (1, 2, 2, 2, 1, 1, 1)
    fold.add(1, 3, 3, 1, 3, 3, 3)
    assert fold.values() == (1, 2, 2, 2, 3, 3, 3)
    fold.add(1, 1, 1, 3, 1, 1, None, kind=D)
    assert fold.values() == (1, None, None, 3, 3, 3, 3)
    fold.add(1, 1, 1, 3, 1, 1, 4, kind=D)
    assert fold.values() == (1, None, None, 3, None, None, 4)
    fold.add(1, 4, 4, 4, 5, 5, 5)
    assert fold.values() == (1, 4, 4, 4, 5, 5, 5)
    fold.add(1, 1, 1, 6, 1, 1, 6, kind=D)
    assert fold.values() == (1, None, None, 6, None, None, 6)


def test_partial_update_remove_record_on_sequence_group_removes_the_row() -> None:
    # Java: PartialUpdateMergeFunctionTest.testSequenceGroupPartialDelete
    fold = Fold(opts({"merge-engine": "partial-update", "fields.f3.sequence-group": "f1,f2",
                      "fields.f6.sequence-group": "f4,f5", "partial-update.remove-record-on-sequence-group": "f6"},
                     ints(7)))
    fold.add(1, 1, 1, 1, 1, 1, 1)
    fold.add(1, 2, 2, 2, 2, 2, None)
    fold.add(1, 3, 3, 1, 3, 3, 3)
    fold.add(1, 1, 1, 3, 1, 1, None, kind=D)
    assert fold.values() == (1, None, None, 3, 3, 3, 3)
    fold.add(1, 1, 1, 3, 1, 1, 4, kind=D)
    assert fold.values() == (1, 1, 1, 3, 1, 1, 4)
    assert fold.function.result().kind is D  # type: ignore[union-attr]
    fold.add(1, 4, 4, 4, 5, 5, 5)
    assert fold.values() == (1, 4, 4, 4, 5, 5, 5)


def test_partial_update_groups_of_several_sequence_fields() -> None:
    # Java: PartialUpdateMergeFunctionTest.testMultiSequenceFields
    fold = Fold(opts({"merge-engine": "partial-update", "fields.f3,f4.sequence-group": "f1,f2",
                      "fields.f7,f8.sequence-group": "f5,f6"}, ints(9)))
    fold.add(1, None, None, None, None, 1, 1, 1, 3)
    fold.add(1, 2, 2, None, None, 2, 2, 1, 3)
    assert fold.values() == (1, None, None, None, None, 2, 2, 1, 3)
    fold = Fold(fold.options)
    fold.add(1, 1, 1, 1, 1, 1, 1, 1, 3)
    fold.add(1, 2, 2, 2, 2, 2, 1, 1, None)
    assert fold.values() == (1, 2, 2, 2, 2, 1, 1, 1, 3)
    fold.add(1, 1, 3, 1, 3, 3, 3, 3, 2)
    assert fold.values() == (1, 2, 2, 2, 2, 3, 3, 3, 2)
    fold.add(1, 1, 1, 3, 3, 1, 1, None, None, kind=D)
    assert fold.values() == (1, None, None, 3, 3, 3, 3, 3, 2)
    fold.add(1, 1, 1, 3, 1, 1, 1, 4, 4, kind=D)
    assert fold.values() == (1, None, None, 3, 3, None, None, 4, 4)
    fold.add(1, 4, 4, 4, 4, 5, 5, 5, 5)
    assert fold.values() == (1, 4, 4, 4, 4, 5, 5, 5, 5)
    fold.add(1, 1, 1, 6, 1, 1, 1, 6, 1, kind=D)
    assert fold.values() == (1, None, None, 6, 1, None, None, 6, 1)


def test_partial_update_sequence_groups_with_aggregation_and_retraction() -> None:
    # Java: PartialUpdateMergeFunctionTest.testPartialUpdateWithAggregation (f0 is the key,
    # so Java ignores its listagg; tablelog refuses an option it would ignore, so it is left out)
    fold = Fold(opts({
        "merge-engine": "partial-update", "fields.f1.sequence-group": "f2,f3,f4", "fields.f7.sequence-group": "f6",
        "fields.f2.aggregate-function": "sum", "fields.f4.aggregate-function": "last_value",
        "fields.f6.aggregate-function": "last_non_null_value", "fields.f4.ignore-retract": "true",
        "fields.f6.ignore-retract": "true"}, ints(8)))
    fold.add(1, 1, 1, 1, 1, 1, 1, 1)
    fold.add(1, 2, 1, 2, 2, 2, 2, 0)
    assert fold.values() == (1, 2, 2, 2, 2, 2, 1, 1)
    fold.add(1, 1, 1, 1, 1, 1, 2, 0)
    assert fold.values() == (1, 2, 3, 2, 2, 1, 1, 1)
    fold.add(1, 1, -1, 1, 1, 2, 2, 0)
    fold.add(1, 3, None, None, None, None, None, 2)
    assert fold.values() == (1, 3, 2, None, None, 2, 1, 2)
    fold.add(1, 3, 1, 1, 1, 1, 1, 3)
    assert fold.values() == (1, 3, 3, 1, 1, 1, 1, 3)
    fold.add(1, 3, 2, 1, 1, 1, 1, 3, kind=UB)
    assert fold.values() == (1, 3, 1, None, 1, 1, 1, 3)
    fold.add(1, 3, 2, 1, 1, 1, 1, 3, kind=D)
    assert fold.values() == (1, 3, -1, None, 1, 1, 1, 3)
    fold.add(1, 2, 2, 1, 1, 1, 1, 3, kind=D)
    assert fold.values() == (1, 3, -3, None, 1, 1, 1, 3)


def test_partial_update_first_value_in_a_sequence_group() -> None:
    # Java: PartialUpdateMergeFunctionTest.testFirstValue
    fold = Fold(opts({"merge-engine": "partial-update", "fields.f1.sequence-group": "f2,f3",
                      "fields.f2.aggregate-function": "first_value", "fields.f3.aggregate-function": "last_value"},
                     ints(4)))
    fold.add(1, 1, 1, 1)
    fold.add(1, 2, 2, 2)
    assert fold.values() == (1, 2, 1, 2)
    fold.add(1, 0, 3, 3)
    assert fold.values() == (1, 2, 3, 2)


# --- aggregation -------------------------------------------------------------------------

AGGREGATION = {"merge-engine": "aggregation"}


def test_aggregation_default_function_applies_to_columns_without_their_own() -> None:
    # Java: AggregateMergeFunctionTest.testDefaultAggFunc
    fold = Fold(opts({**AGGREGATION, "fields.default-aggregate-function": "first_non_null_value",
                      "fields.f2.aggregate-function": "sum"}, ints(5)))
    for values in ((1, None, 1, 1, 1), (1, 2, None, 2, 2), (1, 3, 3, None, 3), (1, 4, 4, 4, None), (1, 5, 5, 5, 5)):
        fold.add(*values)
    assert fold.values() == (1, 2, 13, 1, 1)


def test_listagg_joins_with_each_columns_delimiter() -> None:
    # Java: AggregateMergeFunctionTest.tesListAggFunc
    schema = pa.schema([pa.field("k", pa.int32(), nullable=False), pa.field("a", pa.string()),
                        pa.field("b", pa.string()), pa.field("c", pa.int32()), pa.field("d", pa.string())])
    fold = Fold(opts({**AGGREGATION, "fields.a.aggregate-function": "listagg", "fields.b.aggregate-function": "listagg",
                      "fields.b.list-agg-delimiter": "-", "fields.d.aggregate-function": "listagg",
                      "fields.d.list-agg-delimiter": "/"}, schema, ("k",)))
    for n in range(1, 6):
        fold.add(1, str(n), str(n), n, str(n))
    assert fold.values() == (1, "1,2,3,4,5", "1-2-3-4-5", 5, "1/2/3/4/5")


def test_listagg_distinct_adds_only_new_tokens_and_skips_blanks() -> None:
    schema = pa.schema([pa.field("k", pa.int32(), nullable=False), pa.field("s", pa.string())])
    fold = Fold(opts({**AGGREGATION, "fields.s.aggregate-function": "listagg", "fields.s.distinct": "true"}, schema, ("k",)))
    for value in ("a,b", " ", "b,c", None, "a,,d"):
        fold.add(1, value)
    assert fold.values() == (1, "a,b,c,d")


def test_sum_retraction_of_a_missing_key_gives_the_negated_value() -> None:
    # FieldSumAgg.retract on a null accumulator; the result is still an insert
    options = opts({**AGGREGATION, "fields.f1.aggregate-function": "sum"}, ints(2))
    assert merge(rows(options, (1, 4), kind=D), options) == KeyValue(INS, {"f0": 1, "f1": -4}, 0)


def test_an_aggregation_delete_never_removes_the_key() -> None:
    options = opts({**AGGREGATION, "fields.f1.aggregate-function": "sum"}, ints(2))
    result = merge([*rows(options, (1, 4)), KeyValue(D, {"f0": 1, "f1": 4}, 1)], options)
    assert merged_row(result) == {"f0": 1, "f1": 0}


def test_aggregation_remove_record_on_delete_removes_the_key() -> None:
    options = opts({**AGGREGATION, "fields.f1.aggregate-function": "sum", "aggregation.remove-record-on-delete": "true"},
                   ints(2))
    result = merge([*rows(options, (1, 4)), KeyValue(D, {"f0": 1, "f1": 1}, 1)], options)
    assert result == KeyValue(D, {"f0": 1, "f1": 1}, 1) and merged_row(result) is None


def test_an_int_sum_that_overflows_is_an_error() -> None:
    options = opts({**AGGREGATION, "fields.f1.aggregate-function": "sum"}, ints(2))
    with pytest.raises(MergeError, match="int overflow"):
        merge(rows(options, (1, 2**31 - 1), (1, 1)), options)


def test_a_float_sum_is_single_precision() -> None:
    schema = pa.schema([pa.field("k", pa.int32(), nullable=False), pa.field("x", pa.float32())])
    options = opts({**AGGREGATION, "fields.x.aggregate-function": "sum"}, schema, ("k",))
    result = merged_row(merge(rows(options, (1, 0.1), (1, 0.2)), options))
    assert result is not None and result["x"] == pytest.approx(0.3, abs=1e-7) and result["x"] != 0.1 + 0.2


def test_a_decimal_sum_keeps_the_columns_scale() -> None:
    schema = pa.schema([pa.field("k", pa.int32(), nullable=False), pa.field("x", pa.decimal128(10, 2))])
    options = opts({**AGGREGATION, "fields.x.aggregate-function": "sum"}, schema, ("k",))
    values = (decimal.Decimal("1.10"), decimal.Decimal("2.25"))
    assert merged_row(merge(rows(options, (1, values[0]), (1, values[1])), options)) == {"k": 1, "x": decimal.Decimal("3.35")}


@pytest.mark.parametrize("function", ["min", "max", "first_value", "first_non_null_value", "bool_and"])
def test_a_retraction_of_a_function_that_cannot_retract_is_an_error(function: str) -> None:
    # Java: FieldAggregatorRetractNullTest
    schema = pa.schema([pa.field("k", pa.int32(), nullable=False),
                        pa.field("x", pa.bool_() if function == "bool_and" else pa.int32())])
    options = opts({**AGGREGATION, "fields.x.aggregate-function": function}, schema, ("k",))
    with pytest.raises(MergeError, match=f"Aggregate function '{function}' does not support retraction.*fields.x.ignore-retract"):
        merge([*rows(options, (1, True)), KeyValue(UB, {"k": 1, "x": True}, 1)], options)


def test_ignore_retract_keeps_the_accumulator() -> None:
    options = opts({**AGGREGATION, "fields.f1.aggregate-function": "max", "fields.f1.ignore-retract": "true"}, ints(2))
    assert merged_row(merge([*rows(options, (1, 7)), KeyValue(UB, {"f0": 1, "f1": 7}, 1)], options)) == {"f0": 1, "f1": 7}


def test_last_non_null_value_retraction_clears_only_for_a_non_null_input() -> None:
    fold = Fold(opts(AGGREGATION, ints(3)))
    fold.add(1, 5, 6)
    fold.add(1, 5, None, kind=UB)
    assert fold.values() == (1, None, 6)


def test_max_min_and_bools_skip_nulls() -> None:
    schema = pa.schema([pa.field("k", pa.int32(), nullable=False), pa.field("hi", pa.int32()), pa.field("lo", pa.string()),
                        pa.field("all", pa.bool_()), pa.field("any", pa.bool_())])
    options = opts({**AGGREGATION, "fields.hi.aggregate-function": "max", "fields.lo.aggregate-function": "min",
                    "fields.all.aggregate-function": "bool_and", "fields.any.aggregate-function": "bool_or"}, schema, ("k",))
    records = rows(options, (1, 3, "b", True, False), (1, None, None, None, None), (1, 9, "a", False, True))
    assert merged_row(merge(records, options)) == {"k": 1, "hi": 9, "lo": "a", "all": False, "any": True}


def test_first_value_keeps_a_first_null() -> None:
    fold = Fold(opts({**AGGREGATION, "fields.f1.aggregate-function": "first_value"}, ints(2)))
    fold.add(1, None)
    fold.add(1, 4)
    assert fold.values() == (1, None)


# --- the lookup changelog ----------------------------------------------------------------

ROW = {"f0": 1, "f1": 5}
NEW = {"f0": 1, "f1": 6}


def test_changelog_of_a_new_key_is_an_insert() -> None:
    assert changelog(None, NEW, opts({}, ints(2))) == [(INS, NEW)]


def test_changelog_of_a_removed_key_is_a_delete_of_the_old_row() -> None:
    assert changelog(ROW, None, opts({}, ints(2))) == [(D, ROW)]


def test_changelog_of_a_changed_row_is_an_update_pair() -> None:
    assert changelog(ROW, NEW, opts({}, ints(2))) == [(UB, ROW), (UA, NEW)]


def test_changelog_of_an_unchanged_row_is_an_update_pair_without_row_deduplicate() -> None:
    assert changelog(ROW, dict(ROW), opts({}, ints(2))) == [(UB, ROW), (UA, ROW)]


def test_changelog_of_an_unchanged_row_is_nothing_with_row_deduplicate() -> None:
    assert changelog(ROW, dict(ROW), opts({"changelog-producer.row-deduplicate": "true"}, ints(2))) == []


def test_row_deduplicate_leaves_out_its_ignore_fields() -> None:
    options = opts({"changelog-producer.row-deduplicate": "true",
                    "changelog-producer.row-deduplicate-ignore-fields": "f2"}, ints(3))
    assert changelog({"f0": 1, "f1": 5, "f2": 1}, {"f0": 1, "f1": 5, "f2": 2}, options) == []


def test_changelog_of_a_key_absent_before_and_after_is_nothing() -> None:
    assert changelog(None, None, opts({}, ints(2))) == []


def test_first_row_changelog_is_an_insert_for_a_new_key_and_nothing_for_a_repeat() -> None:
    options = opts({"merge-engine": "first-row", "changelog-producer": "lookup"}, ints(2))
    assert changelog(None, ROW, options) == [(INS, ROW)]
    assert changelog(ROW, ROW, options) == []


def test_lookup_changelog_merges_the_stored_row_in_sequence_field_order() -> None:
    # Java: LookupChangelogMergeFunctionWrapperTest.testMergeHighLevelOrder (last_value
    # aggregation, sequence.field f1): the stored row sorts among the new records by f1.
    options = opts({**AGGREGATION, "sequence.field": "f1"}, ints(2))

    def lookup(stored: int, *new: int) -> list[tuple[RowKind, Mapping[str, Any]]]:
        before = KeyValue(INS, {"f0": 1, "f1": stored}, 1)
        records = [before, *(KeyValue(INS, {"f0": 1, "f1": v}, 2) for v in new)]
        return changelog(before.row, merged_row(merge(records, options)), options)

    assert lookup(3, 2) == [(UB, {"f0": 1, "f1": 3}), (UA, {"f0": 1, "f1": 3})]
    assert lookup(1, 2) == [(UB, {"f0": 1, "f1": 1}), (UA, {"f0": 1, "f1": 2})]
    assert lookup(2, 1, 3) == [(UB, {"f0": 1, "f1": 2}), (UA, {"f0": 1, "f1": 3})]


# --- against pypaimon 2.1's own merge (inserts only: pypaimon raises on retractions) -----

PYPAIMON_CASES = {
    "aggregation": (
        pa.schema([pa.field("id", pa.int64(), nullable=False), ("s", pa.int64()), ("hi", pa.int64()), ("lo", pa.string()),
                   ("lst", pa.string()), ("fv", pa.string()), ("fnn", pa.string()), ("lv", pa.string()),
                   ("lnn", pa.string()), ("ba", pa.bool_()), ("bo", pa.bool_())]),
        {"merge-engine": "aggregation", "fields.s.aggregate-function": "sum", "fields.hi.aggregate-function": "max",
         "fields.lo.aggregate-function": "min", "fields.lst.aggregate-function": "listagg",
         "fields.lst.list-agg-delimiter": "|", "fields.fv.aggregate-function": "first_value",
         "fields.fnn.aggregate-function": "first_non_null_value", "fields.lv.aggregate-function": "last_value",
         "fields.ba.aggregate-function": "bool_and", "fields.bo.aggregate-function": "bool_or"},
    ),
    "partial-update": (
        pa.schema([pa.field("id", pa.int64(), nullable=False), ("a", pa.string()), ("b", pa.int64()), ("c", pa.bool_())]),
        {"merge-engine": "partial-update"},
    ),
    "sequence-field-descending": (
        pa.schema([pa.field("id", pa.int64(), nullable=False), ("ts", pa.int64()), ("v", pa.string())]),
        {"sequence.field": "ts", "sequence.field.sort-order": "descending"},
    ),
}


def _random_value(rng: Any, type_: pa.DataType) -> Any:
    if rng.random() < 0.3:
        return None
    if pa.types.is_boolean(type_):
        return rng.random() < 0.5
    if pa.types.is_integer(type_):
        return rng.randint(-5, 20)
    return rng.choice(["a", "b", "c", "dd", "e"])


@pytest.mark.parametrize("case", sorted(PYPAIMON_CASES))
def test_the_merge_of_inserts_equals_pypaimons_read(tmp_path: Any, case: str) -> None:
    import random

    import pypaimon

    schema, table_options = PYPAIMON_CASES[case]
    options = parse_merge_options(table_options, schema, ["id"])
    catalog = pypaimon.CatalogFactory.create({"warehouse": str(tmp_path)})
    catalog.create_database("db", True)
    catalog.create_table(
        "db.t", pypaimon.Schema.from_pyarrow_schema(schema, primary_keys=["id"], options={"bucket": "1", **table_options}),
        False,
    )
    table = catalog.get_table("db.t")
    rng = random.Random(29)
    records: list[KeyValue] = []
    for commit in range(3):
        batch = [{"id": rng.randint(1, 4), **{f.name: _random_value(rng, f.type) for f in schema if f.name != "id"}}
                 for _ in range(10)]
        records += [KeyValue(INS, row, len(records) + n) for n, row in enumerate(batch)]
        builder = table.new_stream_write_builder()
        write, commit_ = builder.new_write(), builder.new_commit()
        write.write_arrow(pa.Table.from_pylist(batch, schema=schema))
        commit_.commit(write.prepare_commit(commit), commit)
        write.close()
        commit_.close()
    read = table.new_read_builder()
    theirs = sorted(read.new_read().to_arrow(read.new_scan().plan().splits()).to_pylist(), key=lambda r: r["id"])
    ours = [merged_row(merge([r for r in records if r.row["id"] == key], options))
            for key in sorted({r.row["id"] for r in records})]
    assert ours == theirs


def test_a_lookup_of_an_aggregated_key_emits_the_old_and_new_sums() -> None:
    options = opts({**AGGREGATION, "fields.f1.aggregate-function": "sum"}, ints(2))
    looked_up = lookup(KeyValue(INS, ROW, 3), rows(options, (1, 2), (1, -1)), options)
    assert looked_up.changes == [(UB, ROW), (UA, {"f0": 1, "f1": 6})]


def test_a_lookup_of_a_late_record_changes_nothing_but_emits_the_same_row_twice() -> None:
    options = opts({"sequence.field": "f1", "changelog-producer": "lookup"}, ints(2))
    looked_up = lookup(KeyValue(INS, ROW, 0), [KeyValue(INS, {"f0": 1, "f1": 4}, 1)], options)
    assert looked_up.result == KeyValue(INS, ROW, 0) and looked_up.changes == [(UB, ROW), (UA, ROW)]


def test_a_first_row_lookup_of_a_stored_key_drops_the_new_records() -> None:
    options = opts({"merge-engine": "first-row"}, ints(2))
    assert lookup(KeyValue(INS, ROW, 0), rows(options, (1, 6)), options) == LookupResult(KeyValue(INS, ROW, 0), [])


def test_a_first_row_lookup_of_a_new_key_emits_the_first_record_as_written() -> None:
    options = opts({"merge-engine": "first-row"}, ints(2))
    looked_up = lookup(None, [KeyValue(UA, ROW, 0), KeyValue(INS, NEW, 1)], options)
    assert looked_up.changes == [(UA, ROW)]


def test_a_lookup_without_new_records_changes_nothing() -> None:
    assert lookup(KeyValue(INS, ROW, 0), [], opts({}, ints(2))).changes == []


def test_a_lookup_of_a_partial_update_delete_emits_the_whole_old_row() -> None:
    options = opts({"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"}, ints(2))
    looked_up = lookup(KeyValue(INS, ROW, 0), [KeyValue(D, {"f0": 1, "f1": None}, 1)], options)
    assert looked_up.changes == [(D, ROW)]


def test_row_deduplicate_compares_floats_as_java_does() -> None:
    # EqualiserCodeGenerator: Double.compare, so NaN equals NaN and -0.0 is not 0.0
    schema = pa.schema([pa.field("k", pa.int32(), nullable=False), pa.field("x", pa.float64())])
    options = opts({"changelog-producer.row-deduplicate": "true"}, schema, ("k",))
    assert changelog({"k": 1, "x": float("nan")}, {"k": 1, "x": float("nan")}, options) == []
    assert len(changelog({"k": 1, "x": -0.0}, {"k": 1, "x": 0.0}, options)) == 2


def test_the_merge_of_aggregation_retractions_equals_pypaimon_rusts_native_read(tmp_path: Any) -> None:
    # pypaimon's Python reader raises on retractions; its native (Rust) reader merges them as
    # Java does. One record per commit: pypaimon's write buffer raises on a retraction too.
    import random

    import pypaimon

    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("s", pa.int64()), ("lv", pa.int64()),
                        ("lnn", pa.int64()), ("rk", pa.string())])
    table_options = {"merge-engine": "aggregation", "fields.s.aggregate-function": "sum",
                     "fields.lv.aggregate-function": "last_value"}
    catalog = pypaimon.CatalogFactory.create({"warehouse": str(tmp_path)})
    catalog.create_database("db", True)
    catalog.create_table("db.t", pypaimon.Schema.from_pyarrow_schema(
        schema, primary_keys=["id"], options={"bucket": "1", "rowkind.field": "rk", **table_options}), False)
    table = catalog.get_table("db.t")
    rng = random.Random(1)
    records: list[KeyValue] = []
    for commit in range(15):
        row = {"id": rng.randint(1, 3), "s": rng.randint(-3, 9), "lv": rng.choice([None, 1, 2]),
               "lnn": rng.choice([None, 4, 5]), "rk": rng.choice(["+I", "+I", "-U", "-D", "+U"])}
        records.append(KeyValue(RowKind(row["rk"]), row, commit))
        builder = table.new_stream_write_builder()
        write, commit_ = builder.new_write(), builder.new_commit()
        write.write_arrow(pa.Table.from_pylist([row], schema=schema))
        commit_.commit(write.prepare_commit(commit), commit)
        write.close()
        commit_.close()
    assert {r.kind for r in records} >= {UB, D}
    read = table.copy({"read.native.enabled": "true"}).new_read_builder()
    theirs = sorted(read.new_read().to_arrow(read.new_scan().plan().splits()).to_pylist(), key=lambda r: r["id"])
    options = parse_merge_options(table_options, schema, ["id"])
    ours = [merged_row(merge([r for r in records if r.row["id"] == key], options))
            for key in sorted({r.row["id"] for r in records})]
    assert ours == theirs
