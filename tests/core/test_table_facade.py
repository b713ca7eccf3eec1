"""``Table`` shows its user's operations only; what the layers below it need (its files,
log encoding, log connections, ...) is on :func:`tablelog.table.internals`."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

import tablelog
from tablelog.store import TableFiles
from tablelog.table import internals
from tablelog.table_internals import TableInternals

USER_OPERATIONS = {
    # what the table is
    "identifier", "schema", "schema_id", "primary_key", "options", "warehouse", "table_id",
    "changelog_mode", "topic", "log_partitions", "projection",
    # writing
    "writer", "write_task", "commit", "find_commit", "last_commit_identifier",
    # reading
    "reader", "rows", "snapshots",
    # schema evolution and maintenance
    "alter", "compact", "expire_snapshots", "expire_partitions",
}


def public_names(cls: type) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


def test_the_table_facade_shows_only_the_users_operations() -> None:
    assert public_names(tablelog.Table) == USER_OPERATIONS


def test_the_layers_below_the_facade_get_its_internals(tmp_path: Path) -> None:
    table = tablelog.create_table(
        str(tmp_path), "db.t", pa.schema([("id", pa.int64())]), primary_key=["id"],
        options={"log.system": "filesystem"},
    )
    below = internals(table)
    assert isinstance(below, TableInternals)
    files: TableFiles = below.files
    assert files.identifier == table.identifier == "db.t"
    assert below.codec.schema == table.schema
    assert not hasattr(table, "store") and not hasattr(table, "codec")
