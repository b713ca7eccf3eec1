"""``Table.alter`` and ``tablelog alter``: what a schema may become, and that a refused
alter changes nothing (schema id, snapshots, topic). After every allowed change the
table reads right with plain pypaimon, without tablelog."""

from __future__ import annotations

import decimal
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner
from pypaimon import CatalogFactory

import tablelog
from tablelog import AddColumn, DropColumn, RenameColumn, SetOption, WidenColumn
from tablelog.cli import cli
from tablelog.errors import OptionError, SchemaChangeError
from tablelog.table import Table, internals
from tablelog.tables import create_table

SCHEMA = pa.schema([
    ("id", pa.int64()), ("qty", pa.int32()), ("score", pa.float32()),
    ("price", pa.decimal128(6, 2)), ("name", pa.string()),
])
ROWS = [
    {"id": 1, "qty": -3, "score": 1.5, "price": decimal.Decimal("12.34"), "name": "a"},
    {"id": 2, "qty": 2_000_000_000, "score": -0.25, "price": decimal.Decimal("-0.01"), "name": "b"},
]


@pytest.fixture
def table(tmp_path: Path) -> Table:
    table = create_table(str(tmp_path / "wh"), "db.t", SCHEMA, primary_key=["id"], bucket=2,
                         options={"log.system": "filesystem"})
    with table.writer() as writer:
        writer.write(ROWS)
        writer.commit()
    return table


def plain_pypaimon_rows(table: Table) -> list[dict[str, Any]]:
    """The table's rows as pypaimon alone reads them (no tablelog code), by id."""
    paimon = CatalogFactory.create({"warehouse": table.warehouse.path}).get_table(table.identifier)
    builder = paimon.new_read_builder()
    rows = builder.new_read().to_arrow(builder.new_scan().plan().splits()).to_pylist()
    return sorted(({k: v for k, v in r.items() if k != "_tablelog_kind"} for r in rows), key=lambda r: r["id"])


def state(table: Table) -> tuple[int, list[int], dict[int, int], list[str]]:
    """What a refused alter must leave as it was: the latest schema id, the snapshots,
    the topic's end positions and the columns."""
    fresh = tablelog.open_table(table.warehouse.path, table.identifier)
    with internals(fresh).open_log() as log:
        ends = log.end_positions([0, 1])
    return internals(fresh).files.latest_schema_id(), [s.id for s in fresh.snapshots()], ends, fresh.schema.names


def test_a_column_added_after_another_is_null_in_older_rows_and_pypaimon_reads_it(table: Table) -> None:
    assert table.alter(AddColumn("note", pa.string(), after="id")) == 1
    assert table.schema.names == ["id", "note", "qty", "score", "price", "name"]
    assert table.schema.field("note").nullable
    with table.writer() as writer:
        writer.write([{**ROWS[0], "id": 3, "note": "new"}])
        writer.commit()
    expected = [{**ROWS[0], "note": None}, {**ROWS[1], "note": None}, {**ROWS[0], "id": 3, "note": "new"}]
    assert sorted(table.rows().to_pylist(), key=lambda r: r["id"]) == expected
    assert plain_pypaimon_rows(table) == expected


def test_a_column_added_first_or_last_goes_there(table: Table) -> None:
    table.alter(AddColumn("first_col", pa.int64(), first=True), AddColumn("last_col", pa.bool_()))
    assert table.schema.names == ["first_col", "id", "qty", "score", "price", "name", "last_col"]
    assert plain_pypaimon_rows(table) == [{**r, "first_col": None, "last_col": None} for r in ROWS]


def test_a_renamed_column_keeps_its_values_under_the_new_name(table: Table) -> None:
    table.alter(RenameColumn("name", "label"))
    expected = [{**{k: v for k, v in r.items() if k != "name"}, "label": r["name"]} for r in ROWS]
    assert sorted(table.rows().to_pylist(), key=lambda r: r["id"]) == expected
    assert plain_pypaimon_rows(table) == expected


def test_a_dropped_column_is_gone_from_every_row(table: Table) -> None:
    table.alter(DropColumn("score"))
    expected = [{k: v for k, v in r.items() if k != "score"} for r in ROWS]
    assert sorted(table.rows().to_pylist(), key=lambda r: r["id"]) == expected
    assert plain_pypaimon_rows(table) == expected


@pytest.mark.parametrize(("column", "wider"), [
    ("qty", pa.int64()), ("score", pa.float64()), ("price", pa.decimal128(10, 2)), ("price", pa.decimal128(9, 3)),
])
def test_a_widened_column_keeps_every_value(table: Table, column: str, wider: pa.DataType) -> None:
    table.alter(WidenColumn(column, wider))
    assert table.schema.field(column).type == wider
    rows = sorted(table.rows().to_pylist(), key=lambda r: r["id"])
    assert [r[column] for r in rows] == [r[column] for r in ROWS]
    assert [r[column] for r in plain_pypaimon_rows(table)] == [r[column] for r in ROWS]


def test_a_dropped_column_name_added_again_is_a_new_column_without_the_old_values(table: Table) -> None:
    table.alter(DropColumn("name"))
    table.alter(AddColumn("name", pa.string()))
    assert [r["name"] for r in table.rows().to_pylist()] == [None, None]
    assert [r["name"] for r in plain_pypaimon_rows(table)] == [None, None]


REFUSED = {
    "narrowing_a_type": (WidenColumn("qty", pa.int16()), "int32 -> int16 is not a widening"),
    "narrowing_bigint_to_int": (WidenColumn("id", pa.int32()), "primary-key"),
    "changing_a_type_to_another_kind": (WidenColumn("qty", pa.string()), "is not a widening; allowed: int8"),
    "a_decimal_losing_integer_digits": (WidenColumn("price", pa.decimal128(7, 4)), "not a widening"),
    "changing_the_primary_key": (SetOption("primary-key", "id,name"), "the primary key is fixed"),
    "changing_the_bucket_count": (SetOption("bucket", "4"), "the bucket count is fixed"),
    "changing_the_bucket_key": (SetOption("bucket-key", "id"), "the bucket key is fixed"),
    "changing_the_log_format": (SetOption("log.format", "json"), "defines the records of the table.s log: it may "
                                "be set only together with a new log.system"),
    "dropping_a_key_column": (DropColumn("id"), "it is a primary-key column"),
    "renaming_a_key_column": (RenameColumn("id", "key"), "one row would have two keys in the log"),
    "adding_a_non_nullable_column": (AddColumn("c", pa.int64(), nullable=False), "must be nullable"),
    "adding_a_name_that_exists": (AddColumn("NAME", pa.string()), "already has a column 'name'"),
    "renaming_to_a_name_that_exists": (RenameColumn("qty", "score"), "already has a column 'score'"),
    "adding_a_reserved_name": (AddColumn("_kind", pa.string()), "reserved name"),
    "adding_after_a_missing_column": (AddColumn("c", pa.string(), after="nope"), "has no column 'nope'"),
    "dropping_a_missing_column": (DropColumn("nope"), "has no column 'nope'"),
    "adding_a_type_the_log_cannot_carry": (AddColumn("c", pa.uint64()), "column 'c'.*uint64 cannot be a table column"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_refused_alter_names_what_is_not_allowed_and_changes_nothing(table: Table, case: str) -> None:
    change, message = REFUSED[case]
    before = state(table)
    with pytest.raises(SchemaChangeError, match=message) as raised:
        # an allowed change first: the whole alter is refused, not half of it
        table.alter(AddColumn("harmless", pa.string()), change)
    assert "nothing was changed" in str(raised.value)
    assert state(table) == before


def test_dropping_a_bucket_key_column_of_a_table_without_primary_key_is_refused(tmp_path: Path) -> None:
    table = create_table(str(tmp_path / "wh"), "db.events", pa.schema([("a", pa.int64()), ("b", pa.string())]),
                         options={"log.system": "filesystem", "bucket-key": "a"})
    with pytest.raises(SchemaChangeError, match="bucket key"):
        table.alter(DropColumn("a"))
    table.alter(DropColumn("b"))  # not in the bucket key
    assert table.schema.names == ["a"]


def test_an_unknown_option_is_refused_with_a_hint(table: Table) -> None:
    with pytest.raises(OptionError, match="did you mean 'target-file-size'"):
        table.alter(SetOption("target-file-sizee", "64mb"))
    table.alter(SetOption("target-file-size", "64mb"))
    assert internals(table).files.properties["target-file-size"] == "64mb"


def test_an_option_tablelog_cannot_honour_is_refused_as_at_create(table: Table) -> None:
    before = state(table)
    with pytest.raises(OptionError, match="scan.snapshot-id"):
        table.alter(SetOption("scan.snapshot-id", "1"))
    assert state(table) == before


def test_a_table_object_opened_before_an_alter_elsewhere_alters_the_latest_schema(table: Table) -> None:
    stale = tablelog.open_table(table.warehouse.path, table.identifier)
    table.alter(AddColumn("note", pa.string()))
    with pytest.raises(SchemaChangeError, match="already has a column 'note'"):
        stale.alter(AddColumn("note", pa.int64()))
    assert stale.alter(RenameColumn("note", "remark")) == 2


def test_tablelog_alter_changes_the_schema_and_prints_it(table: Table, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TABLELOG_WAREHOUSE", table.warehouse.path)
    result = CliRunner().invoke(cli, [
        "alter", "db.t", "--add", "note string after id", "--add", "big decimal(12,2)",
        "--rename", "name=label", "--widen", "qty bigint", "--drop", "score",
    ], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "altered db.t: schema 1" in result.output
    fresh = tablelog.open_table(os.environ["TABLELOG_WAREHOUSE"], "db.t")
    assert [(f.name, str(f.type)) for f in fresh.schema] == [
        ("id", "int64"), ("note", "string"), ("qty", "int64"), ("price", "decimal128(6, 2)"),
        ("label", "string"), ("big", "decimal128(12, 2)"),
    ]


def test_tablelog_alter_refused_prints_one_error_line_and_changes_nothing(
    table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TABLELOG_WAREHOUSE", table.warehouse.path)
    before = state(table)
    result = CliRunner().invoke(cli, ["alter", "db.t", "--widen", "qty smallint"])
    assert result.exit_code == 1
    assert "error:" in result.output and "int32 -> int16 is not a widening" in result.output
    assert state(table) == before


def test_tail_prints_changes_written_before_a_rename_under_the_new_name(
    table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TABLELOG_WAREHOUSE", table.warehouse.path)
    table.alter(RenameColumn("name", "label"), DropColumn("score"))
    result = CliRunner().invoke(cli, ["tail", "db.t", "--scan-mode", "earliest", "--idle-timeout", "0.3",
                                      "--format", "json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert '"label": "a"' in result.output and '"name"' not in result.output and '"score"' not in result.output


def test_describe_shows_the_schema_id_of_the_table_and_of_each_snapshot(
    table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    monkeypatch.setenv("TABLELOG_WAREHOUSE", table.warehouse.path)
    table.alter(AddColumn("note", pa.string()))
    with table.writer() as writer:
        writer.write([{**ROWS[0], "id": 3}])
        writer.commit()
    result = CliRunner().invoke(cli, ["describe", "db.t", "--format", "json"], catch_exceptions=False)
    document = json.loads(result.output)
    assert document["schema_id"] == 1 and [s["schema_id"] for s in document["snapshots"]] == [1, 0]


@pytest.mark.parametrize("native", ["true", "false"])
def test_both_write_paths_write_the_altered_schema_and_pypaimon_reads_it(tmp_path: Path, native: str) -> None:
    table = create_table(str(tmp_path / "wh"), "db.t", SCHEMA, primary_key=["id"], bucket=2,
                         options={"log.system": "filesystem", "write.native.enabled": native})
    with table.writer() as writer:
        writer.write(ROWS)
        writer.commit()
    table.alter(AddColumn("note", pa.string(), first=True), RenameColumn("name", "label"), DropColumn("score"),
                WidenColumn("qty", pa.int64()))
    with table.writer() as writer:
        writer.write([{"id": 1, "note": "n", "qty": 5_000_000_000, "price": decimal.Decimal("1.00"), "label": "z"}])
        writer.commit()
    expected = [
        {"note": "n", "id": 1, "qty": 5_000_000_000, "price": decimal.Decimal("1.00"), "label": "z"},
        {"note": None, "id": 2, "qty": 2_000_000_000, "price": decimal.Decimal("-0.01"), "label": "b"},
    ]
    assert plain_pypaimon_rows(table) == expected
    assert sorted(table.rows().to_pylist(), key=lambda r: r["id"]) == expected


def test_a_table_without_primary_key_takes_an_added_column_but_keeps_its_bucket_key_columns(tmp_path: Path) -> None:
    schema = pa.schema([("event", pa.string()), ("n", pa.int32())])
    table = create_table(str(tmp_path / "wh"), "db.events", schema, bucket=2, options={"log.system": "filesystem"})
    with table.writer() as writer:
        writer.write([{"event": "click", "n": 1}])
        writer.commit()
    table.alter(AddColumn("user", pa.string()))
    with table.writer() as writer:
        writer.write([{"event": "view", "n": 2, "user": "u"}])
        writer.commit()
    with table.reader(scan_mode="earliest") as reader:
        assert [c.row for c in reader.read_all(idle_timeout_s=0.2)] == [
            {"event": "click", "n": 1, "user": None}, {"event": "view", "n": 2, "user": "u"}]
    with pytest.raises(SchemaChangeError, match="bucket key"):
        table.alter(DropColumn("event"))
    with pytest.raises(SchemaChangeError, match="bucket-key column"):  # all its columns, when created
        table.alter(WidenColumn("n", pa.int64()))
