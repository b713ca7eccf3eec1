"""A machine-wide cache of data files decoded for key lookups, as Paimon's Java writer
keeps local lookup files (``LookupLevels``).

Paimon data files are immutable and uniquely named, so a file's records, decoded into
the rows a lookup takes (:func:`record_schema`), are written once as an uncompressed
Arrow IPC file in a local directory and memory-mapped by every later lookup, of this
process or another: a lookup of a table whose files are cached decodes no Parquet.

A cache file is named by a hash of all that decides its records: the table's location,
its current schema (older files are mapped to it by field id), the partition, the bucket
and the data file's name. It is written under a temporary name and renamed into place,
so no process sees half of one; one that cannot be read (truncated, corrupt, evicted by
another process meanwhile) is built again. Paimon's ``lookup.cache-max-disk-size`` and
``lookup.cache-file-retention`` bound the directory: files not used for the retention
are removed, then the least recently used (a hit touches its file's mtime) until the
directory fits. Where the cache lives is the machine's choice, not a table's:
``TABLELOG_LOOKUP_CACHE_DIR``, by default ``tablelog-lookup-<uid>`` in the temp directory.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import pyarrow as pa

from tablelog.store.layout import SEQUENCE_NUMBER, VALUE_KIND
from tablelog.store.pypaimon_internals import key_value_file_batches

if TYPE_CHECKING:
    from tablelog.merging import MergeOptions

#: The environment variable naming the cache directory.
CACHE_DIR_VARIABLE = "TABLELOG_LOOKUP_CACHE_DIR"
#: Part of every cache file's name: changed when what a cache file holds changes.
_LAYOUT = "records-1"
_SUFFIX = ".arrow"
_TEMP_PREFIX = ".building-"
#: A directory without size bound is swept (for retention) at most this often, by a process.
_SWEEP_INTERVAL_SECONDS = 60.0
#: A temporary file older than this is a build that died: removed by a sweep.
_STALE_BUILD_SECONDS = 600.0


def record_schema(options: MergeOptions) -> pa.Schema:
    """The columns of a lookup's records: the table's (current schema), then each
    record's sequence number and Paimon row-kind byte."""
    return pa.schema([
        *(pa.field(c, options.types[c]) for c in options.columns),
        pa.field(SEQUENCE_NUMBER, pa.int64()), pa.field(VALUE_KIND, pa.int8()),
    ])


def cache_directory() -> Path:
    """``TABLELOG_LOOKUP_CACHE_DIR``, else ``tablelog-lookup-<uid>`` in the temp directory."""
    given = os.environ.get(CACHE_DIR_VARIABLE, "").strip()
    if given:
        return Path(given)
    user = os.getuid() if hasattr(os, "getuid") else os.environ.get("USERNAME", "user")
    return Path(tempfile.gettempdir()) / f"tablelog-lookup-{user}"


@attrs.frozen
class LookupCache:
    """The lookup cache in ``directory``, bounded by Paimon's two options."""

    directory: Path
    #: ``lookup.cache-max-disk-size`` in bytes (None: unbounded).
    max_disk_size: int | None = None
    #: ``lookup.cache-file-retention``.
    retention_seconds: float = 3600.0

    def file_records(
        self, paimon: Any, options: MergeOptions, partition: Sequence[Any], bucket: int, file: Any,
    ) -> pa.Table:
        """Every record of the data file ``file`` of (``partition``, ``bucket``), as a
        table of :func:`record_schema`. A hit is memory-mapped: the mapping lasts as long as
        the table, so keep filtered copies only."""
        schema = record_schema(options)
        if not _usable(self.directory):
            return decoded_records(paimon, options, schema, partition, bucket, file)
        path = self.directory / (_entry_name(paimon, schema, partition, bucket, file) + _SUFFIX)
        mapped = _read(path, schema)
        if mapped is not None:
            with contextlib.suppress(OSError):
                os.utime(path)  # the least recently used is evicted first
            self._sweep(inserted=False)
            return mapped
        records = decoded_records(paimon, options, schema, partition, bucket, file)
        self._write(path, records)
        self._sweep(inserted=True)
        return records

    def put(
        self, paimon: Any, options: MergeOptions, partition: Sequence[Any], bucket: int, file: Any, rows: Any,
    ) -> None:
        """Keep the records of a data file this process just wrote (``rows``: what the file
        holds, the table's current columns with ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND``),
        so that no lookup decodes it. Rows that do not hold every column are not kept."""
        schema = record_schema(options)
        if not _usable(self.directory):
            return
        partition_values = dict(zip(paimon.partition_keys or (), partition, strict=False))
        if set(options.columns) - set(rows.schema.names) - set(partition_values):
            return  # a column neither in the rows nor the partition: what it holds is not known
        try:
            records = pa.Table.from_batches(
                [_as_records(batch, options, schema, partition_values) for batch in (rows.to_batches() if isinstance(rows, pa.Table) else [rows])],
                schema=schema)
        except pa.ArrowException:
            return
        self._write(self.directory / (_entry_name(paimon, schema, partition, bucket, file) + _SUFFIX), records)
        self._sweep(inserted=True)

    def _write(self, path: Path, records: pa.Table) -> None:
        """``records`` as ``path``, whole or not at all (a cache that cannot be written is
        a cache that misses, not a failed lookup)."""
        try:
            descriptor, temporary = tempfile.mkstemp(prefix=_TEMP_PREFIX, dir=self.directory)
        except OSError:
            return
        try:
            with os.fdopen(descriptor, "wb") as sink, pa.ipc.new_file(sink, records.schema) as writer:
                writer.write_table(records)
            os.replace(temporary, path)
        except OSError:
            with contextlib.suppress(OSError):
                os.remove(temporary)

    def _sweep(self, *, inserted: bool) -> None:
        """Evict, after an insertion into a bounded directory, else at most every
        :data:`_SWEEP_INTERVAL_SECONDS`, so a lookup of cached files lists no directory."""
        now = time.time()
        key = str(self.directory)
        with _SWEEP_LOCK:
            due = (inserted and self.max_disk_size is not None) or now - _LAST_SWEEP.get(key, 0.0) >= min(
                _SWEEP_INTERVAL_SECONDS, self.retention_seconds)
            if not due:
                return
            _LAST_SWEEP[key] = now
        evict(self.directory, self.max_disk_size, self.retention_seconds, now)


_SWEEP_LOCK = threading.Lock()
_LAST_SWEEP: dict[str, float] = {}


def evict(directory: Path, max_disk_size: int | None, retention_seconds: float, now: float | None = None) -> None:
    """Remove the cache files of ``directory`` unused for ``retention_seconds``, then the
    least recently used until the rest hold at most ``max_disk_size`` bytes."""
    now = time.time() if now is None else now
    kept: list[tuple[float, int, str]] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return
    for entry in entries:
        try:
            stat = entry.stat(follow_symlinks=False)
        except OSError:
            continue  # removed by another process meanwhile
        age = now - stat.st_mtime
        if entry.name.startswith(_TEMP_PREFIX):
            if age > _STALE_BUILD_SECONDS:
                _remove(entry.path)
        elif entry.name.endswith(_SUFFIX):
            if age > retention_seconds:
                _remove(entry.path)
            else:
                kept.append((stat.st_mtime, stat.st_size, entry.path))
    if max_disk_size is None:
        return
    total = sum(size for _, size, _ in kept)
    for _, size, path in sorted(kept):
        if total <= max_disk_size:
            break
        _remove(path)
        total -= size


def _usable(directory: Path) -> bool:
    """Whether ``directory`` exists (made if not) and is this user's alone: a shared temp
    directory may hold one of that name made by someone else, whose files no lookup may
    trust (then every lookup decodes). Checked once per process."""
    key = str(directory)
    if key not in _USABLE:
        try:
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            stat = directory.lstat()
            _USABLE[key] = directory.is_dir() and not directory.is_symlink() and not stat.st_mode & 0o022 and (
                not hasattr(os, "getuid") or stat.st_uid == os.getuid())
        except OSError:
            _USABLE[key] = False
    return _USABLE[key]


_USABLE: dict[str, bool] = {}


def _remove(path: str) -> None:
    # A process that mapped the file keeps its records; one about to open it builds it again.
    with contextlib.suppress(OSError):
        os.remove(path)


def _entry_name(paimon: Any, schema: pa.Schema, partition: Sequence[Any], bucket: int, file: Any) -> str:
    parts = (_LAYOUT, str(paimon.table_path), str(int(paimon.table_schema.id)), repr(tuple(partition)),
             str(int(bucket)), str(file.file_name), schema.to_string(show_schema_metadata=False))
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def _read(path: Path, schema: pa.Schema) -> pa.Table | None:
    """The records cached at ``path``, memory-mapped; None when there are none readable."""
    try:
        with pa.memory_map(str(path), "r") as source:
            table = pa.ipc.open_file(source).read_all()
        table.validate()
    except (OSError, pa.ArrowException):
        return None
    return table if table.schema.equals(schema) else None


def decoded_records(
    paimon: Any, options: MergeOptions, schema: pa.Schema, partition: Sequence[Any], bucket: int, file: Any,
) -> pa.Table:
    """Every record of ``file``, read with pypaimon's reader of key-value files, as a
    table of ``schema``: the columns cast to the current schema's types (the file's schema
    is mapped to it by field id), the partition's columns filled in."""
    partition_values = dict(zip(paimon.partition_keys or (), partition, strict=False))
    batches = [_as_records(batch, options, schema, partition_values)
               for batch in key_value_file_batches(paimon, partition, bucket, [file])]
    return pa.Table.from_batches(batches, schema=schema)


def _as_records(
    batch: pa.RecordBatch, options: MergeOptions, schema: pa.Schema, partition_values: dict[str, Any],
) -> pa.RecordBatch:
    """A data file's ``batch`` as records of ``schema``: its columns cast to the current
    schema's types, the partition's columns filled in, and a column the file does not
    hold (added to the schema after it was written) null."""
    n = batch.num_rows
    names = set(batch.schema.names)
    arrays = [
        batch.column(c).cast(options.types[c]) if c in names
        else pa.array([partition_values.get(c)] * n, options.types[c]) for c in options.columns
    ]
    return pa.RecordBatch.from_arrays(
        [*arrays, batch.column(SEQUENCE_NUMBER).cast(pa.int64()), batch.column(VALUE_KIND).cast(pa.int8())],
        schema=schema)
