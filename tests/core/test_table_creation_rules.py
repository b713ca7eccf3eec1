"""At creation, what tablelog cannot write and read back is refused with the reason:
column names the product uses itself, and Paimon options whose routing, merging or
file layout tablelog cannot follow. What it accepts works end to end."""

from pathlib import Path

import pyarrow as pa
import pytest

import tablelog
from tablelog.definition import (
    FILE_COMPRESSIONS,
    FILE_FORMATS,
    REFUSED_PAIMON_OPTIONS,
    reserved_column_names,
)
from tablelog.errors import OptionError, SchemaChangeError, SchemaMismatchError
from tablelog.verify import verify

ROOT = Path(__file__).resolve().parents[2]


def create(tmp_path: Path, schema: pa.Schema, primary_key: tuple[str, ...] = ("id",), bucket: int = 3,
           **options: str) -> tablelog.Table:
    return tablelog.create_table(str(tmp_path / "wh"), "db.t", schema, primary_key=list(primary_key),
                                 bucket=bucket, options={"log.system": "filesystem", **options})


def assert_not_created(tmp_path: Path) -> None:
    assert not (tmp_path / "wh" / "db.db" / "t").exists()
    assert not (tmp_path / "wh" / ".tablelog").exists()  # no topic either


@pytest.mark.parametrize("column", [
    "_kind", "_KIND", "_tablelog_kind", "_SEQUENCE_NUMBER", "_VALUE_KIND", "_ROW_ID", "_KEY_id",
])
def test_a_column_the_product_uses_itself_is_refused_at_create(tmp_path: Path, column: str) -> None:
    schema = pa.schema([("id", pa.int64()), (column, pa.string())])
    with pytest.raises(SchemaMismatchError, match=rf"column '{column}' is a reserved name.*_kind, _tablelog_kind"):
        create(tmp_path, schema)
    assert_not_created(tmp_path)


@pytest.mark.parametrize("unit", ["us", "ns"])
def test_a_time_column_finer_than_milliseconds_is_refused_at_create_naming_what_is_allowed(
    tmp_path: Path, unit: str
) -> None:
    # pypaimon keeps a time of day to the millisecond: created as time32[ms] without a word,
    # the column would then refuse the microseconds its declared type holds.
    schema = pa.schema([("id", pa.int64()), ("opens", pa.time64(unit))])
    with pytest.raises(SchemaMismatchError, match=rf"column 'opens': type time64\[{unit}\] cannot be a table "
                       r"column: a Paimon table keeps it as time32\[ms\].*declare the column time32\[ms\]"):
        create(tmp_path, schema)
    assert_not_created(tmp_path)
    with pytest.raises(SchemaChangeError, match=r"time64.*declare the column time32\[ms\]"):
        create(tmp_path, pa.schema([("id", pa.int64())])).alter(tablelog.AddColumn("opens", pa.time64(unit)))


def test_a_time_column_in_milliseconds_or_seconds_keeps_its_values(tmp_path: Path) -> None:
    import datetime as dt

    schema = pa.schema([("id", pa.int64()), ("ms", pa.time32("ms")), ("s", pa.time32("s"))])
    table = create(tmp_path, schema)
    row = {"id": 1, "ms": dt.time(23, 59, 59, 999000), "s": dt.time(12, 30, 5)}
    with table.writer() as writer:
        writer.write([row])
        writer.commit()
    assert table.rows().to_pylist() == [row]


def test_the_reserved_names_cover_every_column_tablelog_and_paimon_add() -> None:
    assert {"_kind", "_tablelog_kind", "_SEQUENCE_NUMBER", "_VALUE_KIND", "_ROW_ID", "_KEY_*"} <= set(
        reserved_column_names()
    )


@pytest.mark.parametrize(("columns", "message"), [
    (["id", ""], "column names may not be empty"),
    (["id", "name", "NAME"], "columns 'name' and 'NAME' have the same name"),
    (["id", "id"], "columns 'id' and 'id' have the same name"),
])
def test_empty_and_duplicate_column_names_are_refused(tmp_path: Path, columns: list[str], message: str) -> None:
    schema = pa.schema([(c, pa.int64()) for c in columns])
    with pytest.raises(SchemaMismatchError, match=message):
        create(tmp_path, schema)
    assert_not_created(tmp_path)


SCHEMA = pa.schema([("id", pa.int64()), ("g", pa.int64()), ("v", pa.string())])


@pytest.mark.parametrize(("options", "message"), [
    ({"bucket-key": "g"}, r"bucket-key='g' is not supported: \['g'\] not in the primary key"),
    ({"bucket-key": "nosuch"}, r"unknown columns \['nosuch'\]"),
    ({"merge-engine": "last-row"}, "'merge-engine': allowed: 'deduplicate', 'partial-update', 'aggregation', 'first-row'"),
    ({"merge-engine": "first-row", "sequence.field": "g"}, "Do not support use sequence field on FIRST_ROW"),
    ({"deletion-vectors.enabled": "true"}, "does not maintain deletion vectors"),
    ({"scan.snapshot-id": "1"}, "pin or filter every read"),
    ({"path": "/elsewhere"}, "a table's files live in its warehouse"),
    ({"branch": "dev"}, "Paimon branches are not supported"),
    ({"type": "format-table"}, "of type `table`"),
    ({"auto-create": "true"}, "allowed: 'false'.*tablelog creates its tables itself"),
    ({"bucket": "-2"}, r"postponed buckets \(-2\) are not supported"),
])
def test_a_paimon_option_tablelog_cannot_honour_is_refused_with_the_reason(
    tmp_path: Path, options: dict[str, str], message: str
) -> None:
    with pytest.raises(OptionError, match=message):
        tablelog.create_table(str(tmp_path / "wh"), "db.t", SCHEMA, primary_key=["id"],
                              options={"log.system": "filesystem", **options})
    assert_not_created(tmp_path)


def test_every_refused_paimon_option_is_documented_with_its_reason() -> None:
    page = (ROOT / "docs" / "options.md").read_text()
    for refused in REFUSED_PAIMON_OPTIONS:
        assert f"`{refused.key}`" in page, refused.key


def write_updates(table: tablelog.Table) -> None:
    """Each key written three times with changing non-key columns, then one delete."""
    for round_ in range(3):
        with table.writer() as writer:
            writer.write([{"id": k, "g": k % 2, "v": f"v{round_}"} for k in range(8)])
            writer.commit()
    with table.writer() as writer:
        writer.write([("-D", {"id": 5, "g": 1, "v": "v2"})])
        writer.commit()


def assert_one_row_per_key_and_consistent(table: tablelog.Table, expected: int) -> None:
    rows = table.rows().to_pylist()
    assert len(rows) == expected
    assert all(r["v"] == "v2" for r in rows)
    assert verify(table).consistent
    with table.reader(scan_mode="earliest") as reader:
        assert len(reader.read_all(idle_timeout_s=0.2)) == 3 * 8 + 1


def test_a_bucket_key_inside_the_primary_key_is_honoured_end_to_end(tmp_path: Path) -> None:
    table = create(tmp_path, SCHEMA, primary_key=("id", "g"), **{"bucket-key": "g"})
    write_updates(table)
    assert_one_row_per_key_and_consistent(table, 7)


def test_a_bucket_key_on_a_table_without_primary_key_is_honoured_end_to_end(tmp_path: Path) -> None:
    table = create(tmp_path, SCHEMA, primary_key=(), **{"bucket-key": "g"})
    with table.writer() as writer:
        writer.write([{"id": k, "g": k % 2, "v": "x"} for k in range(8)])
        writer.commit()
    assert table.rows().num_rows == 8 and verify(table).consistent


@pytest.mark.parametrize("options", [
    {"merge-engine": "deduplicate"},
    {"changelog-producer": "input"},
    {"file.format": "orc"},
    {"deletion-vectors.enabled": "false"},
])
def test_allowed_paimon_options_keep_the_table_and_its_log_consistent(tmp_path: Path, options: dict[str, str]) -> None:
    table = create(tmp_path, SCHEMA, **options)
    write_updates(table)
    assert_one_row_per_key_and_consistent(table, 7)


@pytest.mark.parametrize(("options", "message"), [
    ({"file.format": "csv"}, r"file.format='csv' is not supported \(allowed: 'parquet', 'orc', 'avro', 'row'\)"),
    ({"file.format": "json"}, r"file.format='json' is not supported \(allowed: 'parquet', 'orc', 'avro', 'row'\)"),
    ({"file.format": "lance"}, r"file.format='lance' is not supported \(allowed: "),
    ({"file.format": "PARQUET"}, r"file.format='PARQUET' is not supported \(allowed: 'parquet', "),
    ({"changelog-producer": "full-compaction"}, r"changelog-producer='full-compaction' is not supported: tablelog "
     r"runs no full compaction at each commit \(allowed: 'none', 'input', 'lookup'\)"),
    ({"changelog-producer": "input", "changelog-file.format": "csv"},
     r"changelog-file.format='csv' is not supported \(allowed: 'parquet', 'orc', 'avro'\)"),
    ({"changelog-producer": "input", "file.format": "row"},
     r"changelog-producer='input' with file.format='row' is not supported: .* set changelog-file.format"),
    ({"file.compression": "brotli"},
     r"file.compression='brotli' is not supported with file.format='parquet' \(allowed: 'zstd', 'snappy', "),
    ({"file.format": "orc", "file.compression": "gzip"}, r"file.compression='gzip' is not supported with file.format='orc'"),
    ({"file.format": "avro", "file.compression": "lz4"}, r"file.compression='lz4' is not supported with file.format='avro'"),
    ({"changelog-producer": "input", "changelog-file.format": "avro", "file.compression": "lz4"},
     r"file.compression='lz4' is not supported with changelog-file.format='avro'"),
])
def test_a_file_format_or_compression_pypaimon_cannot_write_is_refused_at_create_naming_what_is_allowed(
    tmp_path: Path, options: dict[str, str], message: str
) -> None:
    # Accepted, each of these failed every write with pypaimon's ValueError and its traceback.
    with pytest.raises(OptionError, match=message):
        create(tmp_path, SCHEMA, **options)
    assert_not_created(tmp_path)


@pytest.mark.parametrize("file_format", FILE_FORMATS)
def test_every_allowed_file_format_is_written_compacted_and_read_back(tmp_path: Path, file_format: str) -> None:
    table = create(tmp_path, SCHEMA, **{"file.format": file_format})
    write_updates(table)
    assert table.compact().files_after > 0
    assert_one_row_per_key_and_consistent(table, 7)
    data_files = [p for p in (tmp_path / "wh" / "db.db" / "t").rglob("data-*")]
    assert data_files and {p.suffix for p in data_files} == {"." + file_format}


@pytest.mark.parametrize("file_format", sorted(FILE_COMPRESSIONS))
def test_every_allowed_compression_of_a_file_format_is_written_compacted_and_read_back(
    tmp_path: Path, file_format: str
) -> None:
    for compression in FILE_COMPRESSIONS[file_format]:
        table = tablelog.create_table(str(tmp_path / compression), "db.t", SCHEMA, primary_key=["id"], options={
            "file.format": file_format, "file.compression": compression, "changelog-producer": "input"})
        for value in ("a", "b"):  # two sorted runs for the compaction to merge
            with table.writer() as writer:
                writer.write([{"id": k, "g": 0, "v": value} for k in range(3)])
                writer.commit()
        table.compact()
        assert sorted(r["v"] for r in table.rows().to_pylist()) == ["b"] * 3, compression


def test_alter_checks_a_file_format_and_compression_against_the_tables_other_options(tmp_path: Path) -> None:
    table = create(tmp_path, SCHEMA)
    with pytest.raises(OptionError, match=r"file.compression='deflate' is not supported with file.format='parquet'"):
        table.alter(tablelog.SetOption("file.compression", "deflate"))
    with pytest.raises(OptionError, match=r"file.format='csv' is not supported \(allowed: 'parquet', "):
        table.alter(tablelog.SetOption("file.format", "csv"))
    table.alter(tablelog.SetOption("file.format", "avro"), tablelog.SetOption("file.compression", "deflate"))
    write_updates(table)
    assert_one_row_per_key_and_consistent(table, 7)
