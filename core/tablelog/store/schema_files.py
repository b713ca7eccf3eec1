"""A table's schema files (``schema/schema-<id>``), each created by exactly one of the
processes that create the table, or alter it, at the same time.

pypaimon writes a schema file as "does it exist? write a temporary file, rename it over":
two writers can both pass the check, and the second rename replaces the first one's
schema (on S3 a rename is a copy, so the window is wide). Two creators would both believe
they created the table; of two alters on S3, one would be lost without an error. Here a
schema file is created only if it is absent, hard-linked into place on a local disk and
put with ``If-None-Match: *`` on S3 (as snapshot files are, :mod:`tablelog.store.s3`):
the writer that comes second learns that the file exists, and pypaimon's alter starts
over from the new latest schema.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from typing import Any

from tablelog.store.metadata import MainBranchSchemas
from tablelog.store.s3 import create_if_absent, split_s3_url


class _CreateOnlyFileIO:
    """The warehouse's file IO for one schema manager: its atomic write creates the file
    or returns False, never replaces one."""

    def __init__(self, file_io: Any, s3_client: Any) -> None:
        self._file_io = file_io
        self._s3_client = s3_client

    def __getattr__(self, name: str) -> Any:
        return getattr(self._file_io, name)

    def try_to_write_atomic(self, path: str, content: str) -> bool:
        if self._s3_client is not None:
            bucket, key = split_s3_url(path)
            return create_if_absent(self._s3_client, bucket, key, content.encode())
        return _link_into_place(path, content)


def _link_into_place(path: str, content: str) -> bool:
    """Create the local file ``path`` holding ``content``, unless it exists. Readers never
    see it half written: the content is written to a temporary file first, and a hard link,
    unlike a rename, fails when its target exists."""
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(content)
        try:
            os.link(temporary, path)
        except FileExistsError:
            return False
        return True
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)


def schema_files(file_io: Any, table_path: str, s3_client: Any) -> MainBranchSchemas:
    """pypaimon's schema manager of the table at ``table_path``, creating its schema files
    only if absent. ``s3_client``: the boto3 client of an ``s3://`` warehouse, else None."""
    return MainBranchSchemas(_CreateOnlyFileIO(file_io, s3_client), table_path)


def create_first_schema(file_io: Any, table_path: str, schema: Any, s3_client: Any) -> bool:
    """Commit pypaimon's ``schema`` as the first schema of the table at ``table_path``:
    True when this call created the table, False when it exists (another creator's came
    first)."""
    try:
        schema_files(file_io, table_path, s3_client).create_table(schema)
    except RuntimeError as err:
        if isinstance(err.__cause__, OSError):  # pypaimon wraps a failed write: the caller says why
            raise err.__cause__ from None
        # "Schema in filesystem exists, creation is not allowed": another creator's came first
        if MainBranchSchemas(file_io, table_path).latest() is None:
            raise
        return False
    return True
