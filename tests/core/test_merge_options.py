"""A table's merge options (docs/merge-engines.md): accepted at create and at the attach of
a log as Paimon checks them, refused with the reason when Paimon or tablelog would not
build them, before anything is written; fixed once the table exists."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner

import tablelog
from tablelog import AddColumn, DropColumn, RenameColumn, SetOption
from tablelog.cli import cli
from tablelog.errors import OptionError, SchemaChangeError
from tablelog.store import Warehouse, create_paimon_table
from tablelog.table import internals

SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False), ("Amount", pa.int64()), ("ts", pa.int64()),
    ("tags", pa.string()), ("name", pa.string()), ("seen", pa.bool_()),
])


def create(tmp_path: Path, options: dict[str, str], primary_key: tuple[str, ...] = ("id",)) -> tablelog.Table:
    return tablelog.create_table(str(tmp_path / "wh"), "db.t", SCHEMA, primary_key=list(primary_key), bucket=2,
                                 options={"log.system": "filesystem", **options})


def assert_not_created(tmp_path: Path) -> None:
    assert not (tmp_path / "wh" / "db.db" / "t").exists()
    assert not (tmp_path / "wh" / ".tablelog").exists()  # no topic either


ACCEPTED: dict[str, dict[str, str]] = {
    "deduplicate_with_lookup_and_row_deduplicate": {
        "merge-engine": "deduplicate", "changelog-producer": "lookup", "changelog-producer.row-deduplicate": "true",
        "changelog-producer.row-deduplicate-ignore-fields": "ts", "sequence.field": "ts",
        "sequence.field.sort-order": "descending", "ignore-delete": "true",
    },
    "deduplicate_with_input": {"changelog-producer": "input", "ignore-update-before": "true"},
    "first_row": {"merge-engine": "first-row", "first-row.ignore-delete": "true", "changelog-producer": "lookup"},
    "partial_update_with_sequence_groups": {
        "merge-engine": "partial-update", "fields.ts.sequence-group": "Amount,tags",
        "fields.Amount.aggregate-function": "sum", "fields.tags.aggregate-function": "listagg",
        "fields.tags.list-agg-delimiter": ";", "fields.tags.distinct": "true",
        "partial-update.remove-record-on-sequence-group": "ts",
    },
    "partial_update_removing_on_delete": {
        "merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true",
        "fields.name.aggregate-function": "last_non_null_value",
    },
    "aggregation": {
        "merge-engine": "aggregation", "fields.default-aggregate-function": "max",
        "fields.Amount.aggregate-function": "sum", "fields.Amount.ignore-retract": "true",
        "fields.seen.aggregate-function": "bool_or", "fields.tags.aggregate-function": "first_non_null_value",
        "sequence.field": "ts",
    },
    "aggregation_removing_on_delete": {"merge-engine": "aggregation", "aggregation.remove-record-on-delete": "true",
                                       "deduplicate.ignore-delete": "false"},
}


@pytest.mark.parametrize("case", sorted(ACCEPTED))
def test_accepted_merge_options_are_stored_with_the_table_and_hold_when_it_is_opened_again(
    tmp_path: Path, case: str
) -> None:
    options = ACCEPTED[case]
    create(tmp_path, options)
    again = tablelog.open_table(str(tmp_path / "wh"), "db.t", options)  # the same values: fine
    properties = internals(again).files.properties
    assert {k: properties.get(k) for k in options} == options  # column names keep their case


REFUSED_AT_CREATE: dict[str, tuple[dict[str, str], str]] = {
    "count": ({"merge-engine": "aggregation", "fields.Amount.aggregate-function": "count"},
              r"fields.Amount.aggregate-function='count' is not supported: Paimon defines no 'count' aggregate "
              r"function .* count with 'sum' over a column that is 1 for each row"),
    "an_unbuilt_function": ({"merge-engine": "aggregation", "fields.default-aggregate-function": "product"},
                            r"'product' is not supported: tablelog does not build this Paimon function \(built: sum"),
    "a_function_no_one_defines": ({"merge-engine": "aggregation", "fields.Amount.aggregate-function": "avg"},
                                  r"Use unsupported aggregation: avg .*allowed: sum, min, max"),
    "sum_of_a_string": ({"merge-engine": "aggregation", "fields.name.aggregate-function": "sum"},
                        r"sum column must be 'NumericType'"),
    "full_compaction": ({"changelog-producer": "full-compaction"},
                        r"tablelog runs no full compaction at each commit .*'lookup' gives the same changes"),
    "input_on_partial_update": ({"merge-engine": "partial-update", "changelog-producer": "input"},
                                r"changelog-producer='input' is not supported: with merge-engine='partial-update' "
                                r"\(allowed: 'none', 'lookup'\)"),
    "input_on_first_row": ({"merge-engine": "first-row", "changelog-producer": "input"},
                           r"Only support 'none' and 'lookup' changelog-producer on FIRST_ROW"),
    "lookup_wait_false": ({"lookup-wait": "false"}, r"lookup-wait='false' is not supported.*allowed: 'true'"),
    "force_lookup": ({"force-lookup": "true"}, r"force-lookup='true' is not supported"),
    "snapshot_ordering": ({"sequence.snapshot-ordering": "true"}, r"orders a key's records by sequence number"),
    "sequence_field_on_first_row": ({"merge-engine": "first-row", "sequence.field": "ts"},
                                    r"Do not support use sequence field on FIRST_ROW merge engine"),
    "an_unknown_sequence_field": ({"sequence.field": "nope"}, r"Sequence field: 'nope' can not be found"),
    "sort_order_without_sequence_field": ({"sequence.field.sort-order": "descending"}, r"without sequence.field"),
    "a_function_outside_a_sequence_group": ({"merge-engine": "partial-update", "fields.Amount.aggregate-function": "sum"},
                                            r"Must use sequence group for aggregation functions"),
    "conflicting_delete_options": ({"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true",
                                    "ignore-delete": "true"}, r"have conflicting behavior"),
    "an_option_of_another_engine": ({"merge-engine": "first-row", "aggregation.remove-record-on-delete": "true"},
                                    r"only merge-engine 'aggregation' uses it; this table's is 'first-row'"),
    "an_option_of_an_unbuilt_function": ({"merge-engine": "aggregation", "fields.tags.nested-key": "a"},
                                         r"an option of Paimon aggregate functions tablelog does not build"),
    "a_field_option_paimon_reads_elsewhere": ({"fields.name.default-value": "x"},
                                              r"fields.name.default-value='x' is not supported: tablelog knows"),
    "a_column_the_table_lacks": ({"merge-engine": "aggregation", "fields.nope.aggregate-function": "sum"},
                                 r"Field nope can not be found in table schema"),
}


@pytest.mark.parametrize("case", sorted(REFUSED_AT_CREATE))
def test_a_refused_merge_option_names_the_reason_and_creates_nothing(tmp_path: Path, case: str) -> None:
    options, message = REFUSED_AT_CREATE[case]
    with pytest.raises(OptionError, match=message):
        create(tmp_path, options)
    assert_not_created(tmp_path)


@pytest.mark.parametrize("options", [
    {"merge-engine": "aggregation"}, {"sequence.field": "ts"}, {"changelog-producer": "input"},
    {"ignore-delete": "true"},
])
def test_merge_options_on_a_table_without_a_primary_key_are_refused(tmp_path: Path, options: dict[str, str]) -> None:
    with pytest.raises(OptionError, match=r"is not supported on a table without a primary key: Paimon merges the rows"):
        create(tmp_path, options, primary_key=())
    assert_not_created(tmp_path)


def test_paimon_defaults_on_a_table_without_a_primary_key_are_accepted(tmp_path: Path) -> None:
    create(tmp_path, {"merge-engine": "deduplicate", "changelog-producer": "none", "ignore-delete": "false"},
           primary_key=())


def state(table: tablelog.Table) -> tuple[int, dict[str, str], list[str]]:
    files = internals(tablelog.open_table(table.warehouse.path, table.identifier)).files
    return files.latest_schema_id(), files.properties, files.schema.names


@pytest.mark.parametrize(("key", "value"), [
    ("merge-engine", "partial-update"),
    ("sequence.field", "id"),
    ("sequence.field.sort-order", "descending"),
    ("fields.Amount.aggregate-function", "max"),
    ("fields.default-aggregate-function", "sum"),
    ("fields.Amount.ignore-retract", "false"),
    ("fields.name.sequence-group", "tags"),
    ("changelog-producer", "none"),
    ("changelog-producer.row-deduplicate", "true"),
    ("ignore-delete", "true"),
    ("aggregation.remove-record-on-delete", "true"),
])
def test_an_alter_of_a_merge_option_is_refused_with_the_reason_and_changes_nothing(
    tmp_path: Path, key: str, value: str
) -> None:
    table = create(tmp_path, {"merge-engine": "aggregation", "sequence.field": "ts", "changelog-producer": "lookup",
                              "fields.Amount.aggregate-function": "sum", "fields.Amount.ignore-retract": "true"})
    before = state(table)
    with pytest.raises(SchemaChangeError, match=rf"set option {key}='{value}' is not allowed \(the table has .*\): "
                       r"a table's merge options are fixed .*merged under the old rule.*nothing was changed"):
        table.alter(AddColumn("harmless", pa.string()), SetOption(key, value))
    assert state(table) == before


def test_an_alter_that_sets_a_merge_option_to_the_tables_value_is_accepted(tmp_path: Path) -> None:
    table = create(tmp_path, {"merge-engine": "aggregation", "fields.Amount.aggregate-function": "sum"})
    table.alter(SetOption("merge-engine", "Aggregation"), SetOption("fields.Amount.aggregate-function", "sum"),
                SetOption("changelog-producer", "none"))  # Paimon's default, not stored
    assert internals(table).files.properties["fields.Amount.aggregate-function"] == "sum"


@pytest.mark.parametrize("change", [DropColumn("ts"), RenameColumn("Amount", "total"), DropColumn("tags")],
                         ids=["sequence_field", "aggregated_column", "sequence_group_member"])
def test_a_column_a_merge_option_names_cannot_be_dropped_or_renamed(tmp_path: Path, change: Any) -> None:
    table = create(tmp_path, {"merge-engine": "partial-update", "fields.ts.sequence-group": "tags,Amount",
                              "fields.Amount.aggregate-function": "sum"})
    before = state(table)
    with pytest.raises(SchemaChangeError, match=r"the table's merge option fields\..* names it; .*nothing was changed"):
        table.alter(change)
    assert state(table) == before
    table.alter(RenameColumn("name", "label"))  # a column no merge option names


def test_tablelog_create_takes_a_merge_engine(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, [
        "create", "-w", str(tmp_path / "wh"), "db.t", "--schema", "id bigint, a string, b bigint", "-k", "id",
        "-o", "log.system=filesystem", "-o", "merge-engine=partial-update",
    ])
    assert result.exit_code == 0, result.output
    table = tablelog.open_table(str(tmp_path / "wh"), "db.t")
    assert internals(table).files.properties["merge-engine"] == "partial-update"


def test_tablelog_create_refuses_count_naming_sum_and_creates_nothing(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, [
        "create", "-w", str(tmp_path / "wh"), "db.t", "--schema", "id bigint, n bigint", "-k", "id",
        "-o", "log.system=filesystem", "-o", "merge-engine=aggregation", "-o", "fields.n.aggregate-function=count",
    ])
    assert result.exit_code == 1, result.output
    assert "Paimon defines no 'count' aggregate function" in result.output
    assert "Traceback" not in result.output
    assert_not_created(tmp_path)


def paimon_table(tmp_path: Path, options: dict[str, str]) -> None:
    """db.t as another Paimon writer (Flink, pypaimon) creates it: no tablelog option."""
    create_paimon_table(Warehouse(str(tmp_path / "wh")), "db.t", SCHEMA, ["id"], bucket=2, options=options)


def test_a_log_is_attached_to_a_paimon_table_with_merge_options_tablelog_builds(tmp_path: Path) -> None:
    paimon_table(tmp_path, {"merge-engine": "partial-update", "changelog-producer": "lookup"})
    table = tablelog.open_table(str(tmp_path / "wh"), "db.t")
    table.alter(SetOption("log.system", "filesystem"))
    assert tablelog.open_table(str(tmp_path / "wh"), "db.t").options.log_system == "filesystem"


@pytest.mark.parametrize(("options", "message"), [
    ({"merge-engine": "aggregation", "fields.Amount.aggregate-function": "count"}, "no 'count' aggregate function"),
    ({"changelog-producer": "full-compaction"}, "runs no full compaction"),
    ({"merge-engine": "aggregation", "fields.tags.aggregate-function": "collect"}, "does not build this Paimon function"),
])
def test_a_log_is_not_attached_to_a_paimon_table_with_merge_options_tablelog_does_not_build(
    tmp_path: Path, options: dict[str, str], message: str
) -> None:
    paimon_table(tmp_path, options)
    table = tablelog.open_table(str(tmp_path / "wh"), "db.t")
    before = state(table)
    with pytest.raises(OptionError, match=rf"table 'db.t': a log cannot be attached: .*{message}.*nothing was changed"):
        table.alter(SetOption("log.system", "filesystem"))
    assert state(table) == before
    assert not (tmp_path / "wh" / ".tablelog").exists()  # no topic


def test_tablelog_alter_refuses_another_merge_engine_in_one_line(tmp_path: Path) -> None:
    table = create(tmp_path, {"merge-engine": "partial-update"})
    before = state(table)
    result = CliRunner().invoke(cli, ["alter", "-w", str(tmp_path / "wh"), "db.t", "--set", "merge-engine=aggregation"])
    assert result.exit_code == 1, result.output
    assert "set option merge-engine='aggregation' is not allowed (the table has 'partial-update')" in result.output
    assert "Traceback" not in result.output
    assert state(table) == before
