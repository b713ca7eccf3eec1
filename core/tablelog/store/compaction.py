"""Compacting a primary-key table's buckets: the merged rows of some of a bucket's sorted
runs rewritten into one run, committed as a Paimon ``COMPACT`` snapshot
(:mod:`tablelog.commit.compaction` decides which runs, and when).

pypaimon 2.1 has no compaction (pypaimon-rust's writer none either: "no background
compaction"); it has the pieces, used here: the merge read of a bucket's sorted runs
(the read path's own merge, with each row's sequence number and row kind kept), the
key-value file writer, and the commit of a ``COMPACT`` snapshot with conflict detection
(a compaction whose input files are no longer all in the table fails, as in Paimon).
Several of them are pypaimon's internals, called through
:mod:`tablelog.store.pypaimon_internals`, which names each and why.

Each rewritten row keeps its sequence number, so files committed meanwhile by writers
(newer sequence numbers, level 0) still win over it; deletes are dropped only when every
run of the bucket is rewritten.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import attrs

from tablelog.store.bucket_plans import SnapshotPairs, delta_pairs, snapshot_files
from tablelog.store.layout import without_key_columns, writes_thin
from tablelog.store.manifests import merge_base_manifests
from tablelog.store.merged_reads import merged_read_table, merges_with_tablelog
from tablelog.store.pypaimon_internals import (
    collect_manifest_entries,
    key_value_tuple,
    open_deletion_file_readers,
    roll_write,
    try_commit,
    with_commit_user,
    write_one_file,
)


@attrs.frozen
class BucketFiles:
    """The data files of one bucket at one snapshot."""

    snapshot_id: int
    partition: tuple[Any, ...]
    bucket: int
    files: tuple[Any, ...]  # pypaimon DataFileMeta

    @property
    def sorted_runs(self) -> int:
        """Paimon's count: every level-0 file is a sorted run, every other level one run."""
        level0 = sum(1 for f in self.files if f.level == 0)
        return level0 + len({f.level for f in self.files if f.level > 0})

    @property
    def rows(self) -> int:
        return sum(int(f.row_count) for f in self.files)

    def runs(self) -> list[tuple[int, int, tuple[Any, ...]]]:
        """The sorted runs, newest first, as ``(level, bytes, files)``: each level-0 file
        (newest first), then each level above 0 (lowest first), as Paimon's ``Levels``."""
        level0 = sorted((f for f in self.files if f.level == 0), key=lambda f: -int(f.max_sequence_number))
        runs = [(0, int(f.file_size), (f,)) for f in level0]
        for level in sorted({f.level for f in self.files if f.level > 0}):
            files = tuple(f for f in self.files if f.level == level)
            runs.append((level, sum(int(f.file_size) for f in files), files))
        return runs

    def subset(self, files: Iterable[Any]) -> BucketFiles:
        return attrs.evolve(self, files=tuple(files))


def bucket_files(paimon: Any, snapshot_id: int) -> list[BucketFiles]:
    """Every (partition, bucket) of the table at ``snapshot_id`` with its data files,
    level-0 files included (a batch read's plan may leave them out), planned from the
    process's last plan of the table (:mod:`.bucket_plans`)."""
    return [
        BucketFiles(snapshot_id, partition, bucket, tuple(files))
        for (partition, bucket), files in sorted(snapshot_files(paimon, snapshot_id).items(), key=lambda item: item[0][1])
    ]


def rewrite_bucket(
    paimon: Any, files: BucketFiles, output_level: int, drop_deletes: bool, *, thin: bool = False
) -> list[Any]:
    """Write the merged rows of ``files`` as new files of one sorted run at ``output_level``;
    the new files' metadata (not committed: :func:`commit_compaction` or
    :func:`delete_files`). ``drop_deletes``: only when ``files`` are all the bucket has
    (older runs could hold a deleted key otherwise). ``thin``: the table declares files
    without key columns (:mod:`tablelog.store.layout`). Empty when no row survives."""
    import pyarrow as pa
    from pypaimon.schema.data_types import PyarrowFieldParser
    from pypaimon.write.writer.key_value_data_writer import KeyValueDataWriter

    schema_fields, rows = _merged_key_values(paimon, files, drop_deletes)
    if not rows:
        return []
    arrow_schema = PyarrowFieldParser.from_paimon_schema(schema_fields)
    columns = list(zip(*rows, strict=True))
    data = pa.Table.from_arrays(
        [pa.array(list(column), type=field.type) for column, field in zip(columns, arrow_schema, strict=True)],
        schema=arrow_schema,
    )
    if thin:
        data = without_key_columns(data)
    writer = KeyValueDataWriter(paimon, files.partition, files.bucket, 0, options=paimon.options)
    # A file's delete_row_count must be right: pypaimon reads a file it says has none
    # without merging (and without dropping retractions).
    retractions = sum(1 for kind in data.column(_VALUE_KIND).to_pylist() if kind in _RETRACT_KINDS)
    try:
        if retractions:
            write_one_file(writer, data)  # one file, so the count is that file's
        else:
            # The merge returns keys in order and once each: the writer's file rolling
            # keeps that, so the new files are one sorted run with the rows' own sequence numbers.
            roll_write(writer, data)
    except BaseException:
        writer.abort()
        raise
    # file_source 1: written by a compaction (Paimon's FileSource.COMPACT).
    return [
        dataclasses.replace(meta, level=output_level, file_source=1, delete_row_count=retractions)
        for meta in writer.committed_files
    ]


_VALUE_KIND = "_VALUE_KIND"
#: The row kinds that retract (-U, -D), as Paimon stores them.
_RETRACT_KINDS = (1, 3)


def _merged_key_values(
    paimon: Any, files: BucketFiles, drop_deletes: bool
) -> tuple[list[Any], list[tuple[Any, ...]]]:
    """The key-value rows (key, sequence number, row kind, value) of ``files`` after the
    merge, in key order (with ``drop_deletes``, retractions dropped); and their fields,
    in the table's current schema."""
    from pypaimon.read.interval_partition import IntervalPartition
    from pypaimon.read.reader.concat_record_reader import ConcatRecordReader
    from pypaimon.read.reader.drop_delete_reader import DropDeleteRecordReader
    from pypaimon.read.split import DataSplit
    from pypaimon.read.split_read import MergeFileSplitRead
    from pypaimon.table.row.generic_row import GenericRow

    paimon = merged_read_table(paimon)  # a merge engine's merge is tablelog's (Java's)
    split = DataSplit(
        files=list(files.files),
        partition=GenericRow(list(files.partition), paimon.partition_keys_fields),
        bucket=files.bucket,
        snapshot_id=files.snapshot_id,
    )
    read = MergeFileSplitRead(
        table=paimon, predicate=None, read_type=paimon.fields, split=split, row_tracking_enabled=False
    )
    open_deletion_file_readers(read)
    sections = IntervalPartition(split.files).partition()
    reader: Any = ConcatRecordReader([functools.partial(read.section_reader_supplier, section) for section in sections])
    if drop_deletes:
        reader = DropDeleteRecordReader(reader)
    rows: list[tuple[Any, ...]] = []
    try:
        for batch in _batches(reader):
            while (kv := batch.next()) is not None:
                rows.append(key_value_tuple(kv))
    finally:
        reader.close()
    return list(read.read_fields), rows


def _batches(reader: Any) -> Iterator[Any]:
    while (batch := reader.read_batch()) is not None:
        yield batch


def commit_compaction(
    paimon: Any, rewrites: Sequence[tuple[BucketFiles, Sequence[Any]]], *, commit_user: str,
    commit_identifier: int, properties: Mapping[str, str], snapshot_commit: Any = None,
) -> None:
    """Commit one ``COMPACT`` snapshot: for each bucket its old files deleted and its
    rewritten files added (and the table's manifests merged, :mod:`.manifests`). Raises when an old file is no longer in the table (another
    compaction took it first: Paimon's "file deletion conflict"); nothing is committed then.
    With ``snapshot_commit`` (an object-store warehouse's conditional commit): one attempt."""
    from pypaimon.write.commit_message import CommitMessage

    messages = [
        CommitMessage(partition=old.partition, bucket=old.bucket, new_files=list(new), deleted_files=list(old.files))
        for old, new in rewrites
    ]
    commit = with_commit_user(paimon.new_stream_write_builder(), commit_user).new_commit()
    store_commit = commit.file_store_commit
    if snapshot_commit is not None:
        store_commit.snapshot_commit = snapshot_commit
        store_commit.commit_max_retries = 0
    merge_base_manifests(store_commit)
    entries = collect_manifest_entries(store_commit, messages)
    try:
        try_commit(store_commit, commit_kind="COMPACT", commit_identifier=commit_identifier,
                   entries_plan=lambda _latest: entries, snapshot_properties=properties)
    finally:
        commit.close()


def delete_files(paimon: Any, rewrites: Sequence[tuple[BucketFiles, Sequence[Any]]]) -> None:
    """Delete rewritten files that no snapshot references (a compaction that did not commit)."""
    from pypaimon.write.commit_message import CommitMessage

    messages = [
        CommitMessage(partition=old.partition, bucket=old.bucket, new_files=list(new)) for old, new in rewrites
    ]
    commit = paimon.new_stream_write_builder().new_commit()
    try:
        commit.abort(messages)
    finally:
        commit.close()


class TableCompactions:
    """One table's compaction operations, for :mod:`tablelog.commit.compaction`
    (:meth:`tablelog.store.PaimonTable.compactions`)."""

    def __init__(self, paimon: Any, s3_client: Any = None) -> None:
        self._paimon = paimon  # pypaimon FileStoreTable
        self._s3_client = s3_client  # an object-store warehouse's boto3 client (None: local)
        self._thin = writes_thin(paimon.table_schema.options or {})  # files without key columns

    def merges_with_older_runs(self, files: BucketFiles) -> bool:
        """Whether ``files`` (some of a bucket's newest runs) may only be merged together
        with all the bucket's older runs: for every merge engine but deduplicate. Its merge
        of some of a key's records is not the same as of all of them: a record merged from
        several takes the newest one's sequence number while holding older ones' values,
        and several writers' records are ordered by when they were written, not committed
        (:mod:`tablelog.store.writes`), so another run may hold a record ordered between
        them (a partial-update column would then change without a changelog); retractions
        merged alone turn into rows (a ``last_non_null_value`` -D becomes +I null)."""
        del files  # whichever runs were picked
        return merges_with_tablelog(self._paimon)

    @property
    def compacts_level0_at_commit(self) -> bool:
        """Whether each commit's level-0 files must be compacted right after it: a
        ``first-row`` table's (pypaimon's and Java's batch reads skip its level 0, as Java's
        writers lookup-compact at every commit)."""
        engine = str((self._paimon.table_schema.options or {}).get("merge-engine", "")).lower()
        return bool(self._paimon.table_schema.primary_keys) and engine == "first-row"

    def bucket_files(self, snapshot_id: int) -> list[BucketFiles]:
        """Every bucket's data files at ``snapshot_id``."""
        return bucket_files(self._paimon, snapshot_id)

    def rewrite_bucket(self, files: BucketFiles, output_level: int, drop_deletes: bool) -> list[Any]:
        """:func:`rewrite_bucket` (uncommitted: :meth:`commit`, or :meth:`delete_rewritten`)."""
        return rewrite_bucket(self._paimon, files, output_level, drop_deletes, thin=self._thin)

    def commit(
        self, rewrites: Sequence[tuple[BucketFiles, Sequence[Any]]], *, commit_user: str,
        commit_identifier: int, properties: Mapping[str, str],
    ) -> None:
        """Commit the rewritten buckets as one ``COMPACT`` snapshot (local warehouse: the
        caller holds the table's commit lock). Raises if an old file is gone."""
        commit_compaction(
            self._paimon, rewrites, commit_user=commit_user, commit_identifier=commit_identifier,
            properties=properties,
        )

    def try_commit(
        self, rewrites: Sequence[tuple[BucketFiles, Sequence[Any]]], *, commit_user: str,
        commit_identifier: int, properties: Mapping[str, str], snapshot_id: int,
    ) -> bool:
        """Object-store warehouse: :meth:`commit` as snapshot ``snapshot_id`` if no other
        committer created it first (False: another did; as ``PaimonTable.try_commit``)."""
        from tablelog.store.s3 import ConditionalSnapshotCommit

        conditional = ConditionalSnapshotCommit(self._paimon.snapshot_manager(), self._s3_client, snapshot_id)
        try:
            commit_compaction(
                self._paimon, rewrites, commit_user=commit_user, commit_identifier=commit_identifier,
                properties=properties, snapshot_commit=conditional,
            )
        except Exception:
            if not conditional.attempted:
                raise
            return conditional.created
        return conditional.created

    def delete_rewritten(self, rewrites: Sequence[tuple[BucketFiles, Sequence[Any]]]) -> None:
        """Delete rewritten files of a compaction that did not commit."""
        delete_files(self._paimon, rewrites)

    def snapshot_pairs(self, snapshot_id: int) -> SnapshotPairs | None:
        """The (partition, bucket) pairs snapshot ``snapshot_id`` added files to and deleted
        files from, from its delta manifests; None when it has expired."""
        return delta_pairs(self._paimon, snapshot_id)
