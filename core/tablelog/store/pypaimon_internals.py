"""Every pypaimon internal tablelog calls, each named with the reason, in one module.

pypaimon 2.1 has no compaction, no snapshot expiry, no manifest merging and no
conditional snapshot commit for object stores; tablelog builds them from pypaimon's own
pieces, some of which are private (a leading ``_``) or live in modules that are not
pypaimon's public API. Such a piece can move in any release, so:

- ``pyproject.toml`` pins pypaimon and pypaimon-rust to the minor versions tested
  (:data:`TESTED_VERSIONS`);
- every private method or attribute is called through a function of this module, never
  directly (``tests/core/test_pypaimon_internals.py`` checks that no other module names
  one);
- :func:`missing_internals` resolves every internal named here and every name the store
  imports from pypaimon's modules, and the test suite fails with the list of what the
  installed pypaimon lacks (``python -m tablelog.store.pypaimon_internals`` prints it).

Long because: collecting every internal in one module is the point (one place to read
and to check when pypaimon moves).
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib
import importlib.metadata
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

#: The distributions whose internals are used, and the version range tested with them
#: (the same bounds as ``pyproject.toml``'s dependencies).
TESTED_VERSIONS: Mapping[str, tuple[str, str]] = {"pypaimon": ("2.1", "2.2"), "pypaimon-rust": ("0.4", "0.5")}


@attrs.frozen
class Internal:
    """One internal of pypaimon: ``module:Qualified.name``, and why tablelog needs it."""

    path: str
    why: str


INTERNALS: tuple[Internal, ...] = (
    Internal("pypaimon.write.writer.key_value_data_writer:KeyValueDataWriter._write_data_to_file",
             "compaction writes a bucket's merged rows as the files of one sorted run, each "
             "row keeping its sequence number (the public writer assigns new ones), each file "
             "with its exact delete_row_count (pypaimon reads a file without deletes unmerged)"),
    Internal("pypaimon.table.row.key_value:KeyValue._row_tuple",
             "a merge read of a merge-engine table hands each key-value row whole (key, "
             "sequence number, row kind and value) to tablelog's merge function"),
    Internal("pypaimon.write.write_builder:StreamWriteBuilder._with_commit_user",
             "commits name their writer (Paimon's commit user) so that a replayed commit "
             "identifier is recognised: exactly-once commits"),
    Internal("pypaimon.write.file_store_commit:FileStoreCommit._collect_manifest_entries",
             "a COMPACT snapshot's entries (old files deleted, new files added) are built "
             "from commit messages as an append's are"),
    Internal("pypaimon.write.file_store_commit:FileStoreCommit._try_commit",
             "a COMPACT snapshot is committed with conflict detection (the public commit "
             "writes APPEND snapshots only)"),
    Internal("pypaimon.read.streaming_table_scan:AsyncStreamingTableScan._create_delta_plan",
             "a snapshot's own changes (its delta files) are read for readers that fall "
             "back from the log to the table files"),
    Internal("pypaimon.schema.schema_manager:SchemaManager._list_versioned_files",
             "the ids of a table's schema files: the latest schema, and the oldest one "
             "(whose text identifies the table)"),
    Internal("pypaimon.schema.schema_manager:SchemaManager._to_schema_path",
             "one existence check tells whether the table was altered, without a listing"),
    Internal("pypaimon.consumer.consumer_manager:ConsumerManager._consumer_directory",
             "every registered consumer id is listed (pypaimon reads them one id at a time)"),
    # Public names of internal objects, set or replaced rather than called.
    Internal("pypaimon.write.file_store_commit:FileStoreCommit.snapshot_commit",
             "an object-store warehouse swaps in its conditional (If-None-Match) snapshot "
             "commit: pypaimon's renaming commit is atomic only on a local file system"),
    Internal("pypaimon.write.file_store_commit:FileStoreCommit.commit_max_retries",
             "a conditional commit makes one attempt: the caller re-reads the table first"),
    Internal("pypaimon.write.file_store_commit:FileStoreCommit.manifest_list_manager",
             "a COMPACT commit merges the base manifests (pypaimon never does)"),
    Internal("pypaimon.write.file_store_commit:FileStoreCommit.manifest_file_manager",
             "the same: the merged manifests are written with it"),
    Internal("pypaimon.write.file_store_commit:FileStoreCommit.manifest_target_size",
             "the same: the merged manifests' size"),
    # Merge reads of merge-engine tables with tablelog's merge functions, on table
    # copies marked for it (tablelog.store.merged_reads); other reads are unchanged.
    Internal("pypaimon.read.split_read:MergeFileSplitRead._build_merge_function",
             "a marked table's merge read merges with tablelog's Java-faithful merge function "
             "(pypaimon's refuses sequence groups, ignore-retract and retractions)"),
    Internal("pypaimon.read.split_read:MergeFileSplitRead.trimmed_primary_key",
             "the same: the key's arity in the merged key-value rows"),
    Internal("pypaimon.read.split_read:MergeFileSplitRead.value_fields",
             "the same: the columns of the merged value rows"),
    Internal("pypaimon.read.split_read:SplitRead.file_reader_supplier",
             "a lookup reads a key's records, and compaction a bucket's sorted runs, unmerged, "
             "from each file as Arrow batches with the key-value columns, older schemas mapped "
             "to the table's; tablelog's reads pass each Parquet file's whole row range, so "
             "that it is decoded a batch at a time (read_files_by_row_group)"),
    Internal("pypaimon.utils.range:Range",
             "the same: a file's whole row range"),
    Internal("pypaimon.read.split_read:MergeFileSplitRead._get_final_read_data_fields",
             "the same: the columns of a key-value file to read"),
    Internal("pypaimon.filesystem.resolving_file_io:ResolvingFileIO._get_fileio",
             "a Parquet file of the table's current schema is read with pyarrow directly, "
             "through the file IO pypaimon's reader would use (key_value_file_batches)"),
    Internal("pypaimon.common.file_io:FileIO.to_filesystem_path",
             "the same: the file's path on the file IO's pyarrow file system (its instance "
             "attribute filesystem; a file IO without one is left to pypaimon's reader)"),
    Internal("pypaimon.read.merge_engine_support:check_supported",
             "a marked table's read is not refused for merge options pypaimon does not build"),
    Internal("pypaimon.common.options.core_options:CoreOptions.batch_scan_skip_level0",
             "a marked first-row table's read includes level-0 files (the table's state)"),
    Internal("pypaimon.manifest.manifest_list_manager:ManifestListManager.read_all",
             "the same: replaced, within one commit, by a read returning the merged list"),
    Internal("pypaimon.manifest.manifest_file_manager:ManifestFileManager.rolling_write",
             "the same: writes the merged entries"),
    Internal("pypaimon.manifest.manifest_list_manager:ManifestListManager.read_delta",
             "a snapshot's files are planned from the process's last plan and the delta "
             "manifests of the snapshots since (tablelog.store.bucket_plans)"),
    Internal("pypaimon.manifest.manifest_file_manager:ManifestFileManager.read",
             "the same: a delta manifest's added and deleted files"),
    Internal("pypaimon.manifest.manifest_file_manager:ManifestFileManager.read_entries_parallel",
             "the same: a whole plan merges every manifest's entries as pypaimon's scan does"),
    Internal("pypaimon.read.split:DataSplit",
             "a full scan's task reads the part of a bucket's files tablelog planned for it "
             "(tablelog.store.split_reads): pypaimon's plan keeps overlapping sections whole, "
             "so a bucket under level-0 files spanning its keys would be one task"),
    Internal("pypaimon.write.writer.key_value_data_writer:KeyValueDataWriter.committed_files",
             "compaction takes the metadata of the files it wrote"),
    Internal("pypaimon.read.split_read:MergeFileSplitRead.read_fields",
             "compaction writes the merged rows with the fields a merge read returns"),
    # The writes of a table whose row kinds are Paimon's own (``_VALUE_KIND``, no
    # row-kind column) and whose files follow ``data-file.thin-mode``: pypaimon takes
    # row kinds from a ``rowkind.field`` column only, and its writers ignore thin mode.
    Internal("pypaimon.write.native_write:NativeTableWrite._native_writer",
             "pypaimon-rust's writer takes each row's kind from a _VALUE_KIND column of the "
             "batch; pypaimon's wrapper refuses a column that is not the table's"),
    Internal("pypaimon.write.native_write:NativeTableWrite._python_writer",
             "the same: only when the wrapper has not switched to the Python writer"),
    Internal("pypaimon.write.native_write:NativeTableWrite._written",
             "the same: the wrapper must know data was written (it then never switches writers)"),
    Internal("pypaimon.write.table_write:TableWrite.table_pyarrow_schema",
             "the Python writer accepts the _VALUE_KIND column beside the table's columns"),
    Internal("pypaimon.write.file_store_write:FileStoreWrite._load_seq_number_stats",
             "an unpartitioned table's largest sequence numbers come from tablelog's "
             "incremental plan (tablelog.store.bucket_plans), not a whole plan per commit"),
    Internal("pypaimon.write.file_store_write:FileStoreWrite._create_data_writer",
             "the Python writer's key-value file writers become tablelog's (below)"),
    Internal("pypaimon.write.writer.key_value_data_writer:KeyValueDataWriter._add_system_fields",
             "tablelog's key-value file writer takes each row's kind from the _VALUE_KIND column"),
    Internal("pypaimon.write.writer.key_value_data_writer:KeyValueDataWriter._merge_pending_by_pk",
             "tablelog's key-value file writer passes rows of distinct keys through a deduplicate "
             "fold unchanged (pypaimon's folds row by row in Python)"),
    Internal("pypaimon.write.writer.key_value_data_writer:KeyValueDataWriter._merge_function",
             "the same: only when the fold is deduplicate's"),
    Internal("pypaimon.write.table_write:TableWrite.row_key_extractor",
             "the Python writer's buckets of integer keys are computed vectorized "
             "(pypaimon's fixed-bucket extractor hashes row by row in Python)"),
    Internal("pypaimon.write.row_key_extractor:FixedBucketRowKeyExtractor._extract_buckets_batch",
             "the same: replaced on the writer's extractor"),
    Internal("pypaimon.write.row_key_extractor:RowKeyExtractor._input_columns",
             "the same: the bucket-key columns of a batch, as pypaimon resolves them"),
    Internal("pypaimon.write.row_key_extractor:FixedBucketRowKeyExtractor.bucket_key_indices",
             "the same"),
    Internal("pypaimon.write.row_key_extractor:FixedBucketRowKeyExtractor.num_buckets",
             "the same"),
    # A compaction's files written as their rows come (tablelog.store.streamed_file), with
    # the metadata the writer gives a file it writes whole.
    Internal("pypaimon.write.writer.data_writer:DataWriter._generate_file_path",
             "a streamed compaction file goes where the writer puts its files"),
    Internal("pypaimon.write.writer.data_writer:DataWriter._get_column_stats",
             "the same: each row group's column statistics, as the writer computes them"),
    Internal("pypaimon.write.writer.data_writer:DataWriter._collect_value_stats",
             "the same: the file's key and value statistics from them"),
    Internal("pypaimon.write.writer.data_writer:DataWriter._create_data_file_meta",
             "the same: the file's DataFileMeta"),
    Internal("pypaimon.write.writer.data_writer:DataWriter._finish_data_file",
             "the same: the file recorded among the writer's files"),
    Internal("pypaimon.write.writer.data_writer:DataWriter._should_write_row_sidecar",
             "a writer that adds a sidecar file writes its files whole"),
    Internal("pypaimon.filesystem.pyarrow_file_io:PyArrowFileIO._create_s3_retry_config",
             "an s3:// warehouse's table files are read and written with the warehouse's "
             "s3.connect-timeout, s3.request-timeout and s3.max-attempts: pypaimon fixes them at "
             "60 s, 60 s and 10 attempts, so a process cut off from the store would hang for "
             "many minutes"),
    Internal("pypaimon.filesystem.pyarrow_file_io:PyArrowFileIO.properties",
             "the same: the options the file IO was made with"),
)


# ---- the calls ----------------------------------------------------------------------

def with_commit_user(builder: Any, commit_user: str) -> Any:
    """``builder`` (a stream write builder) committing as ``commit_user``."""
    return builder._with_commit_user(commit_user)


def writes_data_file_only(writer: Any) -> bool:
    """Whether a pypaimon data writer writes nothing beside a data file and does not
    rewrite its columns (no row sidecar, no variant shredding)."""
    return not getattr(writer, "_variant_shredding", None) and not writer._should_write_row_sidecar()


def new_data_file(writer: Any) -> tuple[str, str]:
    """A new data file of the writer's partition and bucket: its name and path."""
    import uuid

    name = f"{writer.options.data_file_prefix()}{uuid.uuid4()}-0.{writer.file_format}"
    return name, writer._generate_file_path(name)


def column_stats_function(writer: Any) -> Any:
    """How the writer computes a column's statistics (``(table, name) -> dict``)."""
    return writer._get_column_stats


def finished_data_file(writer: Any, *, name: str, path: str, rows: int, min_key: Any, max_key: Any,
                       key_fields: Any, value_fields: Any, column_stats: Any, sequences: tuple[int, int]) -> Any:
    """The ``DataFileMeta`` of a file written outside the writer, as it makes its own,
    recorded among the writer's files."""
    from pypaimon.data.timestamp import Timestamp

    meta = writer._create_data_file_meta(
        file_name=name, file_path=path, row_count=rows, min_key=min_key, max_key=max_key,
        key_stats=writer._collect_value_stats(None, key_fields, column_stats),
        value_stats=writer._collect_value_stats(None, value_fields, column_stats),
        min_sequence_number=sequences[0], max_sequence_number=sequences[1], extra_files=[],
        creation_time=Timestamp.now())
    writer._finish_data_file(meta)
    return meta


def set_row_group_rows(writer: Any, rows: int) -> None:
    """Have a pypaimon data writer's Parquet files hold row groups of ``rows`` rows (the
    options it hands ``pyarrow.parquet.write_table``; other formats ignore them)."""
    writer.parquet_writer_options = {**writer.parquet_writer_options, "row_group_size": int(rows)}


def write_one_file(writer: Any, data: Any) -> None:
    """Write ``data`` through ``writer`` as exactly one file."""
    writer._write_data_to_file(data)


def key_value_tuple(kv: Any) -> tuple[Any, ...]:
    """A merged ``KeyValue``'s whole row: key, sequence number, row kind, value."""
    return tuple(kv._row_tuple)


def collect_manifest_entries(store_commit: Any, messages: Sequence[Any]) -> list[Any]:
    """The manifest entries ``messages`` make (files added and deleted)."""
    return list(store_commit._collect_manifest_entries(list(messages)))


def try_commit(store_commit: Any, *, commit_kind: str, commit_identifier: int,
               entries_plan: Callable[[Any], list[Any]], snapshot_properties: Mapping[str, str]) -> Any:
    """Commit one snapshot of ``commit_kind`` with conflict detection and no rollback."""
    return store_commit._try_commit(
        commit_kind=commit_kind,
        commit_identifier=commit_identifier,
        commit_entries_plan=entries_plan,
        detect_conflicts=True,
        allow_rollback=False,
        snapshot_properties=dict(snapshot_properties),
    )


def schema_ids(schemas: Any) -> list[int]:
    """The ids of the schema files a ``SchemaManager`` lists."""
    return list(schemas._list_versioned_files())


def schema_path(schemas: Any, schema_id: int) -> str:
    """The path of schema ``schema_id``'s file."""
    return str(schemas._to_schema_path(schema_id))


def consumer_directory(manager: Any) -> str:
    """The directory of a ``ConsumerManager``'s consumer files."""
    return str(manager._consumer_directory())


def delta_plan(scan: Any, snapshot: Any) -> Any:
    """The plan reading the data files ``snapshot``'s commit added."""
    return scan._create_delta_plan(snapshot)


def merge_reads_with(marker: str, merge_function: Callable[[Any, int, Sequence[Any]], Any]) -> None:
    """Make merge reads of a table copy whose options hold ``marker`` merge with
    ``merge_function(table, key_arity, value_fields)`` (pypaimon's ``MergeFunction``
    interface), read level-0 files, and skip pypaimon's check of the merge options it
    builds. Installed once; tables without the marker read as pypaimon reads them."""
    _install_merge_reads(marker, merge_function)


@functools.cache
def _install_merge_reads(marker: str, merge_function: Callable[[Any, int, Sequence[Any]], Any]) -> None:
    from pypaimon.common.options.core_options import CoreOptions
    from pypaimon.read import merge_engine_support
    from pypaimon.read.split_read import MergeFileSplitRead

    def marked(options: Any) -> bool:
        return bool(options.options.contains_key(marker))

    build = MergeFileSplitRead._build_merge_function
    check = merge_engine_support.check_supported
    skip_level0 = CoreOptions.batch_scan_skip_level0

    def build_merge_function(self: Any) -> Any:
        if marked(self.table.options):
            return merge_function(self.table, len(self.trimmed_primary_key), list(self.value_fields))
        return build(self)

    def check_supported(table: Any) -> None:
        if not (table.is_primary_key_table and marked(table.options)):
            check(table)

    def batch_scan_skip_level0(self: Any) -> bool:
        return False if marked(self) else bool(skip_level0(self))

    MergeFileSplitRead._build_merge_function = build_merge_function
    merge_engine_support.check_supported = check_supported
    CoreOptions.batch_scan_skip_level0 = batch_scan_skip_level0


def use_s3_timeouts() -> None:
    """Make pypaimon's S3 file systems (pyarrow's) take their connect and request
    timeouts and their attempts from the ``s3.*`` options their file IO is made with
    (:func:`tablelog.store.s3.s3_timeouts`); file IOs made without them keep pypaimon's.
    Installed once."""
    _install_s3_timeouts()


@functools.cache
def _install_s3_timeouts() -> None:
    from pypaimon.filesystem.pyarrow_file_io import PyArrowFileIO

    from tablelog.store.s3 import TIMEOUT_DEFAULTS, s3_timeouts

    fixed = PyArrowFileIO._create_s3_retry_config

    def retry_config(self: Any, max_attempts: int = 10, request_timeout: int = 60, connect_timeout: int = 60) -> Any:
        given = {k: v for k, v in self.properties.to_map().items() if k in TIMEOUT_DEFAULTS}
        if not given:
            return fixed(self, max_attempts, request_timeout, connect_timeout)
        timeouts = s3_timeouts(given)
        return fixed(self, timeouts.attempts, timeouts.request_s, timeouts.connect_s)

    PyArrowFileIO._create_s3_retry_config = retry_config


def read_files_by_row_group(marker: str) -> None:
    """Make the reads of a table copy whose options hold ``marker`` decode each Parquet
    data file a batch at a time (pyarrow's ``ParquetFile.iter_batches``, pypaimon's read of
    a file given a row range), where pypaimon's dataset scanner holds several decoded
    row groups of each file it reads: memory that grows with the files, and so with the
    table. Only reads without a predicate (a row range turns its push-down off), of
    tables without row tracking. Installed once; other tables read as pypaimon reads them."""
    _install_row_group_reads(marker)


@functools.cache
def _install_row_group_reads(marker: str) -> None:
    from pypaimon.read.split_read import SplitRead

    supplier = SplitRead.file_reader_supplier

    def file_reader_supplier(self: Any, file: Any, for_merge_read: bool, read_fields: Any, row_tracking_enabled: bool,
                             row_ranges: Any = None, physical_row_ranges: Any = None, shard_range: Any = None) -> Any:
        if (row_ranges is None and physical_row_ranges is None and self.predicate is None and not row_tracking_enabled
                and file.file_name not in self.deletion_file_readers and self.table.options.options.contains_key(marker)):
            physical_row_ranges = _whole_file(file)
        return supplier(self, file, for_merge_read, read_fields, row_tracking_enabled, row_ranges, physical_row_ranges,
                        shard_range)

    SplitRead.file_reader_supplier = file_reader_supplier


def _whole_file(file: Any) -> Any:
    """The row range of a Parquet data file with rows (None for another)."""
    from pypaimon.utils.range import Range

    return [Range(0, file.row_count - 1)] if file.row_count > 0 and file.file_name.endswith(".parquet") else None


def key_value_schema(paimon: Any, partition: Sequence[Any], bucket: int) -> Any:
    """The Arrow schema of the key-value rows of ``paimon``'s (``partition``, ``bucket``),
    as its merge read returns them and its key-value files hold them: ``_KEY_`` columns,
    ``_SEQUENCE_NUMBER``, ``_VALUE_KIND`` and the table's columns, in the current schema."""
    from pypaimon.read.split import DataSplit
    from pypaimon.read.split_read import MergeFileSplitRead
    from pypaimon.schema.data_types import PyarrowFieldParser
    from pypaimon.table.row.generic_row import GenericRow

    split = DataSplit(files=[], partition=GenericRow(list(partition), paimon.partition_keys_fields),
                      bucket=bucket, snapshot_id=None)
    read = MergeFileSplitRead(table=paimon, predicate=None, read_type=paimon.fields, split=split,
                              row_tracking_enabled=False)
    return PyarrowFieldParser.from_paimon_schema(list(read.read_fields))


def key_value_file_batches(paimon: Any, partition: Sequence[Any], bucket: int, files: Sequence[Any]) -> Any:
    """The Arrow batches of each key-value file of ``files`` (one bucket), unmerged, one
    file at a time: ``_SEQUENCE_NUMBER``, ``_VALUE_KIND`` and the table's columns."""
    from pypaimon.read.split import DataSplit
    from pypaimon.read.split_read import MergeFileSplitRead
    from pypaimon.table.row.generic_row import GenericRow

    split = DataSplit(files=list(files), partition=GenericRow(list(partition), paimon.partition_keys_fields),
                      bucket=bucket, snapshot_id=None)
    read = MergeFileSplitRead(table=paimon, predicate=None, read_type=paimon.fields, split=split,
                              row_tracking_enabled=False)
    fields = read._get_final_read_data_fields()
    direct = _reads_parquet_directly(paimon)
    if direct:
        from pypaimon.schema.data_types import PyarrowFieldParser

        columns = [field.name for field in read.read_fields]
        types = {field.name: field.type for field in PyarrowFieldParser.from_paimon_schema(list(paimon.fields))}
    for file in files:
        if direct and (batches := _parquet_batches(paimon, file, columns, types)) is not None:
            yield from batches
            continue
        reader = read.file_reader_supplier(file, True, fields, False, physical_row_ranges=_whole_file(file))
        try:
            while (batch := reader.read_arrow_batch()) is not None:
                yield batch
        finally:
            reader.close()


def _reads_parquet_directly(paimon: Any) -> bool:
    """Whether the key-value files of ``paimon`` may be read with pyarrow alone when they
    are Parquet of the current schema: not for tables whose reads pypaimon reshapes
    (row tracking, data evolution, blob descriptors)."""
    options = paimon.options
    return not (options.row_tracking_enabled() or options.data_evolution_enabled() or options.blob_as_descriptor())


def _parquet_batches(paimon: Any, file: Any, columns: Sequence[str], types: Mapping[str, Any]) -> Any:
    """The batches of ``file`` with pypaimon's reader's ``columns`` (by name; a thin
    file's ``_KEY_`` columns are its key columns), read with pyarrow's
    ``ParquetFile.iter_batches`` a row group at a time; None when pypaimon must read it
    (not Parquet, an older schema, a column missing or of another type than ``types``,
    the current schema's, or nested). pypaimon's reader sets up much per file (its page
    index parsed in Python), which dominates the many small files a background
    compaction merges."""
    import pyarrow.parquet as pq
    import pyarrow.types as arrow_types
    from pypaimon.filesystem.resolving_file_io import ResolvingFileIO

    from tablelog.store.layout import KEY_PREFIX

    if not file.file_name.endswith(".parquet") or file.schema_id != paimon.table_schema.id or file.row_count <= 0:
        return None
    path = file.physical_path()
    file_io = paimon.file_io
    if isinstance(file_io, ResolvingFileIO):
        file_io = file_io._get_fileio(path)
    filesystem = getattr(file_io, "filesystem", None)
    if filesystem is None:
        return None
    parquet = pq.ParquetFile(file_io.to_filesystem_path(path), filesystem=filesystem)
    stored = parquet.schema_arrow
    names = [name if name in stored.names or not name.startswith(KEY_PREFIX) else name[len(KEY_PREFIX):]
             for name in columns]
    for name in names:
        index = stored.get_field_index(name)
        kind = stored.field(index).type if index >= 0 else None
        if kind is None or kind != types.get(name, kind) or arrow_types.is_nested(kind) \
                or arrow_types.is_dictionary(kind):
            parquet.close()
            return None
    return _iter_parquet(parquet, columns, names, max(1, int(paimon.options.read_batch_size())))


def _iter_parquet(parquet: Any, columns: Sequence[str], names: Sequence[str], batch_rows: int) -> Any:
    import pyarrow as pa

    try:
        for batch in parquet.iter_batches(batch_size=batch_rows, columns=list(dict.fromkeys(names))):
            if batch.num_rows:
                yield pa.RecordBatch.from_arrays([batch.column(name) for name in names], names=list(columns))
    finally:
        parquet.close()


def writes_natively(write: Any) -> bool:
    """Whether pypaimon's ``write`` (a stream table write) writes with pypaimon-rust."""
    from pypaimon.write.native_write import NativeTableWrite

    return isinstance(write, NativeTableWrite) and write._python_writer is None


def write_native_with_kinds(write: Any, data: Any, bucket: int | None = None) -> None:
    """Write ``data`` (the table's columns, then ``_VALUE_KIND``: each row's kind as Paimon
    stores it) with pypaimon-rust's writer of ``write`` (:func:`writes_natively`);
    ``bucket``: every row's bucket (None: the writer computes each row's)."""
    from pypaimon.schema.arrow_schema import normalize_arrow_strings

    for batch in normalize_arrow_strings(data).to_batches():
        if batch.num_rows:
            write._written = True  # as NativeTableWrite.write_arrow_batch does
        write._native_writer.write_arrow(batch, bucket)


def use_tablelog_key_value_writer(
    write: Any, *, thin: bool, value_kinds: bool, sequence_floor: int | None = None,
    on_file: Callable[[tuple[Any, ...], int, Any, Any], None] | None = None,
) -> None:
    """Make pypaimon's Python ``write`` (a stream table write of a primary-key table) write
    the key-value files tablelog's table declares: without the ``_KEY_`` columns when
    ``thin``; with ``value_kinds``, each row's kind taken from a ``_VALUE_KIND`` column
    of the data written (every write then carries it). ``sequence_floor``: the rows'
    sequence numbers start above it (and above the bucket's largest, as always).
    ``on_file(partition, bucket, file meta, rows)``: told of each data file written, with
    the rows it holds (the table's columns, ``_SEQUENCE_NUMBER``, ``_VALUE_KIND``)."""
    import pyarrow as pa
    from pypaimon.write.writer.key_value_data_writer import KeyValueDataWriter

    store_write = write.file_store_write
    create = store_write._create_data_writer

    def create_data_writer(partition: Any, bucket: int, options: Any) -> Any:
        writer = create(partition, bucket, options)
        if type(writer) is not KeyValueDataWriter:
            if value_kinds:
                raise NotImplementedError(
                    f"pypaimon writes bucket {bucket} with its {type(writer).__name__}, which takes no "
                    "row kinds but a rowkind.field column's: tablelog cannot write this table's deletes")
            return writer
        writer.__class__ = _tablelog_key_value_writer()
        writer.tablelog_thin = thin
        writer.tablelog_on_file = on_file
        if sequence_floor is not None:
            generator = writer.sequence_generator
            generator.current = max(generator.current, sequence_floor)
        return writer

    store_write._create_data_writer = create_data_writer
    _planned_sequence_numbers(store_write)
    _vectorized_integer_buckets(write)
    if value_kinds:
        write.table_pyarrow_schema = pa.schema([*write.table_pyarrow_schema, pa.field(_VALUE_KIND, pa.int8())])


_VALUE_KIND = "_VALUE_KIND"
_SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"


def _planned_sequence_numbers(store_write: Any) -> None:
    """Make a Python write of an unpartitioned table find each bucket's largest sequence
    number in the latest snapshot's files from :mod:`tablelog.store.bucket_plans` (the
    process's last plan moved forward), not from a whole plan of the table, which reads
    every manifest at each commit's first write."""
    from tablelog.store.bucket_plans import snapshot_files

    load = store_write._load_seq_number_stats
    paimon = store_write.table

    def load_seq_number_stats(partition: Any) -> dict[int, int]:
        if partition or paimon.partition_keys or getattr(store_write, "restore_snapshot_id", None) is not None:
            return load(partition)
        latest = paimon.snapshot_manager().get_latest_snapshot()
        if latest is None:
            return {}
        return {bucket: max(file.max_sequence_number for file in files)
                for (_, bucket), files in snapshot_files(paimon, latest.id).items()}

    store_write._load_seq_number_stats = load_seq_number_stats


def _vectorized_integer_buckets(write: Any) -> None:
    """Give a fixed-bucket ``write``'s row-key extractor the buckets of integer keys from
    :func:`tablelog.store.integer_hash.integer_key_buckets` (the same hash, vectorized);
    other key types keep pypaimon's."""
    from pypaimon.write.row_key_extractor import FixedBucketRowKeyExtractor

    from tablelog.store.integer_hash import INTEGER_WIDTHS, integer_key_buckets

    extractor = write.row_key_extractor
    if type(extractor) is not FixedBucketRowKeyExtractor:
        return
    row_by_row = extractor._extract_buckets_batch

    def extract_buckets_batch(data: Any) -> list[int]:
        columns = extractor._input_columns(data, extractor.bucket_key_indices)
        if not columns or any(c.type not in INTEGER_WIDTHS or c.null_count for c in columns):
            return list(row_by_row(data))
        return list(integer_key_buckets(columns, extractor.num_buckets).tolist())

    extractor._extract_buckets_batch = extract_buckets_batch


@functools.cache
def _tablelog_key_value_writer() -> type:
    """pypaimon's key-value file writer, taking row kinds from the ``_VALUE_KIND`` column
    of what is written, and leaving the ``_KEY_`` columns out of a thin table's files."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    from pypaimon.read.reader.deduplicate_merge_function import DeduplicateMergeFunction
    from pypaimon.write.writer.key_value_data_writer import KeyValueDataWriter

    from tablelog.store.layout import row_group_rows

    class TablelogKeyValueWriter(KeyValueDataWriter):  # type: ignore[misc]
        tablelog_thin = False
        tablelog_on_file: Callable[[tuple[Any, ...], int, Any, Any], None] | None = None

        def _add_system_fields(self, data: Any) -> Any:
            index = data.schema.get_field_index(_VALUE_KIND)
            if index < 0:
                return super()._add_system_fields(data)
            kinds = data.column(index).cast(pa.int8())
            data = data.remove_column(index)
            # pypaimon's columns (_KEY_ columns, sequence number, kind, the row), with the
            # sequence numbers made at once, not by one call of its generator per row
            generator = self.sequence_generator
            first = generator.current + 1
            generator.current += data.num_rows
            schema = data.schema
            keys = [schema.field(k) for k in self.trimmed_primary_keys if k in schema.names]
            return type(data).from_arrays(
                [*(data.column(k.name) for k in keys), pa.array(np.arange(first, generator.current + 1)), kinds,
                 *data.columns],
                schema=pa.schema([
                    *(pa.field(f"_KEY_{k.name}", k.type, nullable=k.nullable) for k in keys),
                    pa.field(_SEQUENCE_NUMBER, pa.int64(), nullable=False),
                    pa.field(_VALUE_KIND, pa.int8(), nullable=False), *schema,
                ]))

        def _merge_pending_by_pk(self, data: Any) -> Any:
            # Rows sorted by key, each key once (a merged-changelog table's writes, folded
            # by tablelog), are their own deduplicate fold.
            if type(self._merge_function) is DeduplicateMergeFunction and _distinct_sorted_keys(
                    data, len(self.trimmed_primary_keys)):
                return data
            return super()._merge_pending_by_pk(data)

        def _write_data_to_file(self, data: Any) -> None:
            if self.tablelog_thin:
                keys = [name for name in data.schema.names if name.startswith("_KEY_")]
                data = data.drop_columns(keys) if keys else data
            written = len(self.committed_files)
            set_row_group_rows(self, row_group_rows(data))
            super()._write_data_to_file(data)
            if len(self.committed_files) > written:
                # pypaimon records no retractions (Paimon's deleteRowCount) and then reads
                # a file of a bucket's only run without merging: a -D would read as a row.
                retract = pc.is_in(data.column(_VALUE_KIND), value_set=pa.array([1, 3], pa.int8()))
                retractions = int(pc.sum(retract).as_py() or 0)
                self.committed_files[-1] = dataclasses.replace(self.committed_files[-1], delete_row_count=retractions)
                if self.tablelog_on_file is not None:
                    self.tablelog_on_file(tuple(self.partition), int(self.bucket), self.committed_files[-1], data)

    return TablelogKeyValueWriter


def _distinct_sorted_keys(data: Any, key_arity: int) -> bool:
    """Whether rows sorted by their first ``key_arity`` columns (the key) hold each key once."""
    import pyarrow.compute as pc

    if data.num_rows < 2 or key_arity == 0:
        return data.num_rows < 2
    same = None
    for column in data.columns[:key_arity]:
        equal = pc.equal(column.slice(1), column.slice(0, len(column) - 1))
        same = equal if same is None else pc.and_(same, equal)
    return not pc.any(same).as_py()


# ---- the check ----------------------------------------------------------------------

def _resolve(path: str) -> str | None:
    """None when ``module:Qualified.name`` resolves, else what is missing."""
    module_name, _, qualified = path.partition(":")
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as err:
        return f"module {module_name} ({err})"
    for i, part in enumerate(qualified.split(".") if qualified else ()):
        if not hasattr(target, part) and not _declared_slot(target, part):
            return f"{module_name}:{'.'.join(qualified.split('.')[:i + 1])}"
        target = getattr(target, part, None)
    return None


def _declared_slot(cls: Any, name: str) -> bool:
    """An attribute that ``__init__`` of ``cls`` or a base sets (``self.name = ...``): the
    class itself does not have it."""
    import inspect

    if not isinstance(cls, type):
        return False
    for klass in cls.__mro__:
        try:
            source = inspect.getsource(klass)
        except (OSError, TypeError):
            continue
        if f"self.{name} =" in source or f"self.{name}:" in source:
            return True
    return False


def store_imports() -> list[str]:
    """``module:name`` of every name the store imports from pypaimon's modules."""
    found: list[str] = []
    for path in sorted(Path(__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "pypaimon":
                found.extend(f"{node.module}:{alias.name}" for alias in node.names)
            elif isinstance(node, ast.Import):
                found.extend(f"{a.name}:" for a in node.names if a.name.split(".")[0] in ("pypaimon", "pypaimon_rust"))
    return sorted(set(found))


def version_problems() -> list[str]:
    """The installed distributions outside :data:`TESTED_VERSIONS`."""
    problems = []
    for name, (low, high) in TESTED_VERSIONS.items():
        try:
            installed = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            problems.append(f"{name} is not installed (tested: >={low},<{high})")
            continue
        if not _within(installed, low, high):
            problems.append(f"{name} {installed} is installed; tablelog is tested with >={low},<{high}")
    return problems


def _within(version: str, low: str, high: str) -> bool:
    def key(text: str) -> tuple[int, ...]:
        parts = []
        for piece in text.split(".")[:3]:
            digits = "".join(c for c in piece if c.isdigit())
            parts.append(int(digits) if digits else 0)
        return tuple(parts)

    return key(low) <= key(version) < key(high)


def missing_internals() -> list[str]:
    """What the installed pypaimon lacks of what tablelog calls: empty when all is there."""
    missing = [f"{what} (used because: {i.why})" for i in INTERNALS if (what := _resolve(i.path))]
    missing += [what for path in store_imports() if (what := _resolve(path))]
    return missing


if __name__ == "__main__":
    problems = version_problems() + missing_internals()
    print("\n".join(problems) if problems else "every pypaimon internal tablelog uses is there")
    raise SystemExit(1 if problems else 0)
