"""A table's data files, each with the schema it was written with: what a check of their
columns against the table's options needs (:mod:`tablelog.testing.file_layout`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from tablelog.store.compaction import bucket_files


@attrs.frozen
class DataFile:
    """One data file a snapshot references."""

    #: The file's path (local, or an ``s3://`` URL).
    path: str
    #: The id of the schema it was written with.
    schema_id: int
    level: int


@attrs.frozen
class StoredSchema:
    """One schema of a table as Paimon stores it: every column (tablelog's row-kind column
    too, when the table has one), the key columns of its data files, and its options."""

    schema_id: int
    columns: tuple[str, ...]
    #: The primary key without the partition columns (Paimon's ``trimmedPrimaryKeys``).
    key_columns: tuple[str, ...]
    options: Mapping[str, str]


class DataFiles:
    """The data files of one table (:meth:`tablelog.store.PaimonTable.data_files`)."""

    def __init__(self, paimon: Any, schemas: Any) -> None:
        self._paimon = paimon  # pypaimon FileStoreTable
        self._schemas = schemas  # the table's MainBranchSchemas

    def at(self, snapshot_id: int) -> list[DataFile]:
        """Every data file of the table at ``snapshot_id``, level-0 files included."""
        table_path = str(self._paimon.table_path).rstrip("/")
        return [
            DataFile(str(meta.physical_path() or f"{table_path}/bucket-{bucket.bucket}/{meta.file_name}"),
                     int(meta.schema_id), int(meta.level))
            for bucket in bucket_files(self._paimon, snapshot_id)
            for meta in bucket.files
        ]

    def schema(self, schema_id: int) -> StoredSchema:
        """Schema ``schema_id`` as Paimon stores it (row-kind column and options included)."""
        stored = self._schemas.get_schema(schema_id)
        if stored is None:
            raise LookupError(f"table {self._paimon.identifier}: no schema {schema_id}")
        partition = set(stored.partition_keys or ())
        return StoredSchema(
            int(stored.id), tuple(f.name for f in stored.fields),
            tuple(k for k in stored.primary_keys or () if k not in partition),
            {str(k): str(v) for k, v in (stored.options or {}).items()},
        )
