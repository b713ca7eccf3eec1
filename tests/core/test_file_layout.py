"""A primary-key table's data files have the columns its options declare, as Paimon's Java
writer and reader define them (``tablelog.testing.file_layout``), whichever of tablelog's
paths wrote them: pypaimon-rust's writer, pypaimon's Python writer, compaction, writes
after a schema change; and a table created before tablelog declared the layout."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import tablelog
from tablelog.table import internals
from tablelog.testing.file_layout import file_columns, layout_problems

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def _fill(table: tablelog.Table) -> None:
    """Inserts, an update and a delete in two commits, a compaction, a column added, one
    more commit: every path that writes data files."""
    with table.writer() as writer:
        writer.write([{"id": i, "name": str(i)} for i in range(6)])
        writer.commit()
        writer.write([("-U", {"id": 1, "name": "1"}), ("+U", {"id": 1, "name": "one"}), ("-D", {"id": 0, "name": "0"})])
        writer.commit()
    assert table.compact().snapshot_id is not None
    table.alter(tablelog.AddColumn("email", pa.string()))
    table = tablelog.open_table(_warehouse(table), table.identifier)
    with table.writer() as writer:
        writer.write([{"id": 7, "name": "seven", "email": "7@x"}])
        writer.commit()


def _rows(table: tablelog.Table) -> list[dict]:
    return tablelog.open_table(_warehouse(table), table.identifier).rows().sort_by("id").to_pylist()


def _warehouse(table: tablelog.Table) -> str:
    return internals(table).files.path.rsplit("/", 2)[0]


EXPECTED = [
    {"id": 1, "name": "one", "email": None}, {"id": 2, "name": "2", "email": None},
    {"id": 3, "name": "3", "email": None}, {"id": 4, "name": "4", "email": None},
    {"id": 5, "name": "5", "email": None}, {"id": 7, "name": "seven", "email": "7@x"},
]


@pytest.mark.parametrize(
    ("file_format", "native"),
    [("parquet", "true"), ("parquet", "false"), ("orc", "true"), ("avro", "true")],
    ids=["parquet-native-writer", "parquet-python-writer", "orc", "avro"],
)
def test_every_data_file_has_the_columns_the_table_options_declare(tmp_path: Path, file_format: str, native: str) -> None:
    table = tablelog.create_table(str(tmp_path), "db.t", SCHEMA, primary_key=["id"], bucket=2, options={
        "log.system": "filesystem", "file.format": file_format, "write.native.enabled": native})
    _fill(table)
    assert layout_problems(table) == []
    assert _rows(table) == EXPECTED
    assert _pypaimon_rust_rows(tmp_path) == EXPECTED


def _pypaimon_rust_rows(warehouse: Path) -> list[dict[str, Any]]:
    from pypaimon import CatalogFactory
    from pypaimon.write.native_commit import create_native_write_table

    table = create_native_write_table(CatalogFactory.create({"warehouse": str(warehouse)}).get_table("db.t"))
    builder = table.new_read_builder()
    batches = builder.new_read().read(builder.new_scan().plan().splits())
    return pa.Table.from_batches(batches).sort_by("id").to_pylist()


def test_a_table_declaring_the_key_columns_gets_them_from_every_writer(tmp_path) -> None:  # type: ignore[no-untyped-def]
    table = tablelog.create_table(str(tmp_path), "db.t", SCHEMA, primary_key=["id"], bucket=2, options={
        "log.system": "filesystem", "data-file.thin-mode": "false"})
    _fill(table)
    assert layout_problems(table) == []
    files = internals(table).files
    assert all(file_columns(f.path)[0] == "_KEY_id" for f in files.data_files().at(files.latest_snapshot().id))
    assert _rows(table) == EXPECTED
    assert _pypaimon_rust_rows(tmp_path) == EXPECTED


def test_a_table_created_without_the_declaration_gets_the_key_columns_until_it_declares_thin_mode(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # A table of an earlier tablelog: written by pypaimon-rust (no key columns), while its
    # options do not declare data-file.thin-mode.
    table = tablelog.create_table(str(tmp_path), "db.t", SCHEMA, primary_key=["id"], bucket=1,
                                  options={"log.system": "filesystem"})
    with table.writer() as writer:
        writer.write([{"id": i, "name": str(i)} for i in range(3)])
        writer.commit()
    schema_file = tmp_path / "db.db" / "t" / "schema" / "schema-0"
    stored = json.loads(schema_file.read_text())
    del stored["options"]["data-file.thin-mode"]  # as an earlier tablelog created it
    schema_file.write_text(json.dumps(stored))
    table = tablelog.open_table(str(tmp_path), "db.t")
    assert len(layout_problems(table)) == 1  # the earlier file

    with table.writer() as writer:  # new files have the key columns, as the options say
        writer.write([{"id": 3, "name": "3"}])
        writer.commit()
    assert len(layout_problems(table)) == 1
    table.compact()  # rewrites the earlier file too
    assert layout_problems(table) == []

    table.alter(tablelog.SetOption("data-file.thin-mode", "true"))  # back to pypaimon-rust's writer
    table = tablelog.open_table(str(tmp_path), "db.t")
    with table.writer() as writer:
        writer.write([("-D", {"id": 0, "name": "0"})])
        writer.commit()
    table.compact()
    assert layout_problems(table) == []
    assert table.rows().sort_by("id").to_pylist() == [{"id": i, "name": str(i)} for i in (1, 2, 3)]


def test_thin_mode_takes_true_or_false_only(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(tablelog.errors.OptionError, match=r"data-file.thin-mode='yes'.*allowed: 'true', 'false'"):
        tablelog.create_table(str(tmp_path), "db.t", SCHEMA, primary_key=["id"],
                              options={"log.system": "filesystem", "data-file.thin-mode": "yes"})


def test_thin_mode_is_refused_with_the_row_format_which_pypaimon_reads_by_position(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(tablelog.errors.OptionError, match=r"data-file.thin-mode='true' is not supported with file.format='row'"):
        tablelog.create_table(str(tmp_path), "db.t", SCHEMA, primary_key=["id"],
                              options={"log.system": "filesystem", "file.format": "row", "data-file.thin-mode": "true"})
    table = tablelog.create_table(str(tmp_path), "db.t", SCHEMA, primary_key=["id"],
                                  options={"log.system": "filesystem", "file.format": "row"})
    assert internals(table).files.properties["data-file.thin-mode"] == "false"
