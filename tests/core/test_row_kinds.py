"""A primary-key table keeps its rows' kinds where Paimon does, in ``_VALUE_KIND``: it has no
column of tablelog's, Paimon readers apply its updates and deletes (compacted or not), and
a foreign writer writes only the table's columns. Tables of earlier tablelog versions, with
the ``_tablelog_kind`` column, keep working."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pypaimon import CatalogFactory

import tablelog
from tablelog.table import internals
from tablelog.testing.file_layout import layout_problems
from tablelog.verify import verify

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def _plain_pypaimon_rows(warehouse: Path) -> list[dict[str, Any]]:
    table = CatalogFactory.create({"warehouse": str(warehouse)}).get_table("db.t")
    builder = table.new_read_builder()
    return builder.new_read().to_arrow(builder.new_scan().plan().splits()).sort_by("id").to_pylist()


def _pypaimon_rust_rows(warehouse: Path) -> list[dict[str, Any]]:
    from pypaimon.write.native_commit import create_native_write_table

    table = create_native_write_table(CatalogFactory.create({"warehouse": str(warehouse)}).get_table("db.t"))
    builder = table.new_read_builder()
    batches = builder.new_read().read(builder.new_scan().plan().splits())
    return pa.Table.from_batches(batches).sort_by("id").to_pylist()


def _write_changes(table: tablelog.Table) -> list[dict[str, Any]]:
    """Inserts, then an update and a delete of keys only the first commit's files hold."""
    with table.writer() as writer:
        writer.write([{"id": i, "name": str(i)} for i in range(4)])
        writer.commit()
        writer.write([("-U", {"id": 1, "name": "1"}), ("+U", {"id": 1, "name": "one"}),
                      ("-D", {"id": 2, "name": "2"})])
        writer.commit()
    return [{"id": 0, "name": "0"}, {"id": 1, "name": "one"}, {"id": 3, "name": "3"}]


@pytest.mark.parametrize("native", ["true", "false"], ids=["native-writer", "python-writer"])
def test_a_primary_key_table_has_no_row_kind_column_and_paimon_readers_apply_its_deletes(
    tmp_path: Path, native: str
) -> None:
    table = tablelog.create_table(str(tmp_path), "db.t", SCHEMA, primary_key=["id"], bucket=1, options={
        "log.system": "filesystem", "write.native.enabled": native, "num-sorted-run.compaction-trigger": "10"})
    expected = _write_changes(table)

    paimon = CatalogFactory.create({"warehouse": str(tmp_path)}).get_table("db.t")
    assert [f.name for f in paimon.table_schema.fields] == ["id", "name"]
    assert "rowkind.field" not in paimon.table_schema.options
    files = internals(table).files
    kinds = sorted(k for f in files.data_files().at(files.latest_snapshot().id)  # type: ignore[union-attr]
                   for k in pq.read_table(f.path, columns=["_VALUE_KIND"]).column(0).to_pylist())
    assert kinds == [0, 0, 0, 0, 2, 3]  # four inserts; the +U and the -D (the -U folded into the +U)
    assert _plain_pypaimon_rows(tmp_path) == expected == _pypaimon_rust_rows(tmp_path)

    table.compact()  # every run: the delete is applied and dropped
    assert _plain_pypaimon_rows(tmp_path) == expected == table.rows().sort_by("id").to_pylist()
    assert _pypaimon_rust_rows(tmp_path) == expected
    assert layout_problems(table) == []
    assert verify(table).consistent
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        changes = [(c.kind.value, c.row["id"]) for c in reader.read_all()]
    assert changes == [("+I", 0), ("+I", 1), ("+I", 2), ("+I", 3), ("+U", 1), ("-D", 2)]  # an upsert log: no -U


def test_a_foreign_pypaimon_write_needs_only_the_tables_columns(tmp_path: Path) -> None:
    table = tablelog.create_table(str(tmp_path), "db.t", SCHEMA, primary_key=["id"], bucket=1,
                                  options={"log.system": "filesystem"})
    with table.writer() as writer:
        writer.write([{"id": 1, "name": "a"}, {"id": 2, "name": "b"}])
        writer.commit()
    paimon = CatalogFactory.create({"warehouse": str(tmp_path)}).get_table("db.t")
    builder = paimon.new_batch_write_builder()
    write, commit = builder.new_write(), builder.new_commit()
    write.write_arrow(pa.table({"id": [3, 1], "name": ["c", "A"]}, schema=paimon_schema(paimon)))
    commit.commit(write.prepare_commit())
    write.close()
    commit.close()
    assert tablelog.open_table(str(tmp_path), "db.t").rows().sort_by("id").to_pylist() == [
        {"id": 1, "name": "A"}, {"id": 2, "name": "b"}, {"id": 3, "name": "c"}]


def paimon_schema(paimon: Any) -> pa.Schema:
    from pypaimon.schema.data_types import PyarrowFieldParser

    return PyarrowFieldParser.from_paimon_schema(paimon.table_schema.fields)


def _earlier_version_table(tmp_path: Path) -> tablelog.Table:
    """A table as an earlier tablelog created it: a `_tablelog_kind` column read by Paimon's
    rowkind.field, and no data-file.thin-mode."""
    tablelog.create_table(str(tmp_path), "db.t", SCHEMA, primary_key=["id"], bucket=1,
                          options={"log.system": "filesystem", "num-sorted-run.compaction-trigger": "10"})
    schema_file = tmp_path / "db.db" / "t" / "schema" / "schema-0"
    stored = json.loads(schema_file.read_text())
    stored["fields"].append({"id": 2, "name": "_tablelog_kind", "type": "STRING"})
    stored["highestFieldId"] = 2
    stored["options"]["rowkind.field"] = "_tablelog_kind"
    del stored["options"]["data-file.thin-mode"]
    schema_file.write_text(json.dumps(stored))
    return tablelog.open_table(str(tmp_path), "db.t")


def test_a_table_with_the_row_kind_column_of_earlier_versions_keeps_working(tmp_path: Path) -> None:
    table = _earlier_version_table(tmp_path)
    assert table.schema.names == ["id", "name"]

    expected = _write_changes(table)
    assert table.rows().sort_by("id").to_pylist() == expected
    table.compact()
    assert table.rows().sort_by("id").to_pylist() == expected
    assert [r["_tablelog_kind"] for r in _plain_pypaimon_rows(tmp_path)] == ["+I", "+U", "+I"]
    assert layout_problems(table) == []
    assert verify(table).consistent
    table.alter(tablelog.AddColumn("email", pa.string()))
    table = tablelog.open_table(str(tmp_path), "db.t")
    with table.writer() as writer:
        writer.write([("-D", {"id": 0, "name": "0", "email": None})])
        writer.commit()
    assert [r["id"] for r in table.rows().to_pylist()] == [1, 3]
    paimon = CatalogFactory.create({"warehouse": str(tmp_path)}).get_table("db.t")
    assert [f.name for f in paimon.table_schema.fields][-1] == "_tablelog_kind"  # stays last


def test_a_delete_in_the_only_file_of_a_bucket_written_by_the_python_writer_is_not_read_as_a_row(
    tmp_path: Path,
) -> None:
    # pypaimon's Python writer recorded no retraction in the file's metadata, and pypaimon
    # reads a bucket's only file without merging: the -D came back as a row.
    table = tablelog.create_table(str(tmp_path), "db.t", SCHEMA, primary_key=["id"], bucket=1,
                                  options={"log.system": "filesystem", "write.native.enabled": "false"})
    with table.writer() as writer:
        writer.write([{"id": 9, "name": "n"}])
        writer.write([("-D", {"id": 1, "name": ""})])
        writer.commit()
    assert table.rows().to_pylist() == [{"id": 9, "name": "n"}]
    assert _plain_pypaimon_rows(tmp_path) == [{"id": 9, "name": "n"}]
