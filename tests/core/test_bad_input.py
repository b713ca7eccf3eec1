"""Bad input gets a clear error naming the problem, and commits nothing."""

import pyarrow as pa
import pytest

import tablelog
from tablelog.errors import (
    OptionError,
    PluginNotFoundError,
    SchemaMismatchError,
    TableNotFoundError,
)
from tablelog.table import internals
from tablelog.writing.log_batches import SLICE_ROWS

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


@pytest.fixture
def table(tmp_path):  # type: ignore[no-untyped-def]
    return tablelog.create_table(str(tmp_path), "db.t", SCHEMA, primary_key=["id"], bucket=2,
                                 options={"log.system": "filesystem"})


def assert_nothing_committed(table: tablelog.Table) -> None:
    assert internals(table).files.latest_snapshot() is None
    with table.reader(consistency="eventual", scan_mode="earliest") as reader:
        assert reader.read_all(idle_timeout_s=0.1) == []


def test_unknown_log_system_fails_before_the_table_exists(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(PluginNotFoundError, match="unknown log.system 'kafak'"):
        tablelog.create_table(str(tmp_path), "db.t", SCHEMA, options={"log.system": "kafak"})
    with pytest.raises(TableNotFoundError):
        tablelog.open_table(str(tmp_path), "db.t")


def test_missing_required_backend_option_is_named(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(OptionError, match="kafka.bootstrap.servers"):
        tablelog.create_table(str(tmp_path), "db.t", SCHEMA, options={"log.system": "kafka"})


def test_fewer_log_partitions_than_buckets_is_refused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(OptionError, match="fewer than bucket=4"):
        tablelog.create_table(str(tmp_path), "db.t", SCHEMA, bucket=4,
                              options={"log.system": "filesystem", "log.system.partitions": "2"})


@pytest.mark.parametrize("name", ["../escape.t", "db/../../x.t", "db.t;rm", "nodot", "db.a.b"])
def test_table_names_cannot_leave_the_warehouse(tmp_path, name: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(OptionError, match="invalid table name"):
        tablelog.create_table(str(tmp_path), name, SCHEMA)


def test_missing_and_unknown_columns_are_named(table: tablelog.Table) -> None:
    with pytest.raises(SchemaMismatchError, match=r"missing columns \['name'\]; unknown columns \['nmae'\]"):
        table.writer().write([{"id": 1, "nmae": "x"}])
    assert_nothing_committed(table)


def test_a_missing_key_column_is_named_without_the_nullable_columns_a_row_may_leave_out(tmp_path) -> None:  # type: ignore[no-untyped-def]
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("score", pa.float64()),
                        pa.field("region", pa.string(), nullable=False)])
    table = tablelog.create_table(str(tmp_path), "db.wide", schema, primary_key=["id"], bucket=1,
                                  options={"log.system": "filesystem"})
    with pytest.raises(SchemaMismatchError) as refused:
        table.writer().write([{"name": "no key"}])
    assert "missing columns ['id', 'region'] (every row needs the primary-key and NOT NULL columns; " \
        "nullable columns may be left out)" in str(refused.value)
    assert "'score'" not in str(refused.value).split("table columns")[0]
    assert_nothing_committed(table)


def test_uncastable_column_type_is_named(table: tablelog.Table) -> None:
    with pytest.raises(SchemaMismatchError, match="column 'id' has type string"):
        table.writer().write(pa.table({"id": ["one"], "name": ["x"]}))
    assert_nothing_committed(table)


def test_null_primary_key_names_the_column_and_row(table: tablelog.Table) -> None:
    with pytest.raises(SchemaMismatchError, match="primary-key column 'id' is null in 1 row.*row 1"):
        table.writer().write([{"id": 1, "name": "a"}, {"id": None, "name": "b"}])
    assert_nothing_committed(table)


def test_invalid_row_kind_names_value_and_allowed_kinds(table: tablelog.Table) -> None:
    with pytest.raises(SchemaMismatchError, match=r"row 0 has row kind '\+X'.*allowed: \+I, -U, \+U, -D"):
        table.writer().write([("+X", {"id": 1, "name": "a"})])
    assert_nothing_committed(table)


def test_oversized_record_fails_before_anything_is_produced(tmp_path) -> None:  # type: ignore[no-untyped-def]
    table = tablelog.create_table(str(tmp_path), "db.big", SCHEMA, primary_key=["id"],
                                  options={"log.system": "filesystem", "log.max-record-bytes": "200"})
    with pytest.raises(SchemaMismatchError, match="row 1 encodes to .* bytes, more than log.max-record-bytes=200"):
        table.writer().write([{"id": 1, "name": "small"}, {"id": 2, "name": "x" * 500}])
    assert_nothing_committed(table)


def test_oversized_record_is_named_by_its_input_row_when_rows_span_partitions(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # the writer encodes rows grouped by partition: the error must still name the input row
    table = tablelog.create_table(str(tmp_path), "db.big4", SCHEMA, primary_key=["id"], bucket=4,
                                  options={"log.system": "filesystem", "log.max-record-bytes": "200"})
    rows = [{"id": i, "name": "small"} for i in range(40)]
    rows[29]["name"] = "x" * 500
    with pytest.raises(SchemaMismatchError, match="row 29 encodes to .* bytes"):
        table.writer().write(rows)
    assert_nothing_committed(table)


def test_oversized_record_past_the_first_encoded_slice_is_named_by_its_input_row(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # rows are encoded SLICE_ROWS at a time, all before any is produced
    table = tablelog.create_table(str(tmp_path), "db.big_write", SCHEMA, primary_key=["id"], bucket=2,
                                  options={"log.system": "filesystem", "log.max-record-bytes": "200"})
    rows = [{"id": i, "name": "small"} for i in range(SLICE_ROWS + 50)]
    rows[SLICE_ROWS + 7]["name"] = "x" * 500
    with pytest.raises(SchemaMismatchError, match=f"row {SLICE_ROWS + 7} encodes to .* bytes"):
        table.writer().write(pa.Table.from_pylist(rows, schema=SCHEMA))
    assert_nothing_committed(table)


def test_table_without_primary_key_refuses_deletes(tmp_path) -> None:  # type: ignore[no-untyped-def]
    table = tablelog.create_table(str(tmp_path), "db.append", SCHEMA, options={"log.system": "filesystem"})
    with pytest.raises(SchemaMismatchError, match="only takes '\\+I' rows"):
        table.writer().write([("-D", {"id": 1, "name": "a"})])
