"""The store reads a table's schemas and snapshots with its own main-branch managers
(tablelog.store.metadata), built without pypaimon's table object: they read what
pypaimon's own managers, as its table object makes them, read."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

import tablelog
from tablelog.store.table import PaimonTable
from tablelog.table import internals
from tablelog.tables import open_table


def _table_with_history(tmp_path: Path) -> PaimonTable:
    table = tablelog.create_table(str(tmp_path), "db.t", pa.schema([("id", pa.int64()), ("v", pa.string())]),
                                  primary_key=["id"], options={"log.system": "filesystem"})
    for i in range(3):
        with table.writer() as writer:
            writer.write([{"id": i, "v": f"v{i}"}])
            writer.commit()
    table.alter(tablelog.AddColumn("note", pa.string()))
    table = open_table(str(tmp_path), "db.t")
    with table.writer() as writer:
        writer.write([{"id": 9, "v": "w", "note": "n"}])
        writer.commit()
    return internals(table).files


def test_snapshots_read_by_the_store_are_those_pypaimons_snapshot_manager_reads(tmp_path: Path) -> None:
    store = _table_with_history(tmp_path)
    own, theirs = store._snapshots, store.paimon.snapshot_manager()
    latest = theirs.get_latest_snapshot()
    assert latest is not None and latest.id >= 4  # four commits
    assert own.snapshot_dir == theirs.snapshot_dir and own.latest_file == theirs.latest_file
    assert own.get_latest_snapshot() == theirs.get_latest_snapshot()
    assert own.try_get_earliest_snapshot() == theirs.try_get_earliest_snapshot()
    for snapshot_id in range(1, latest.id + 2):  # the one past the latest: None from both
        assert own.get_snapshot_by_id(snapshot_id) == theirs.get_snapshot_by_id(snapshot_id)
    assert own.earlier_or_equal_time_mills(latest.time_millis) == theirs.earlier_or_equal_time_mills(
        latest.time_millis)


def test_schemas_read_by_the_store_are_those_pypaimons_schema_manager_reads(tmp_path: Path) -> None:
    store = _table_with_history(tmp_path)
    own, theirs = store._schemas, store.paimon.schema_manager
    assert own.schema_path == theirs.schema_path
    assert sorted(own._list_versioned_files()) == sorted(theirs._list_versioned_files()) == [0, 1]
    for schema_id in (0, 1):
        assert own.get_schema(schema_id) == theirs.get_schema(schema_id)
    assert own.latest() == theirs.latest() == store.table_schema
    assert store.schema.names == ["id", "v", "note"]
    assert store.schema_version(0).schema.names == ["id", "v"]
