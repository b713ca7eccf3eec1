"""Compacting a primary-key table's buckets: the merged rows of some of a bucket's sorted
runs rewritten into one run, committed as a Paimon ``COMPACT`` snapshot
(:mod:`tablelog.commit.compaction` decides which runs, and when).

pypaimon 2.1 has no compaction (pypaimon-rust's writer none either: "no background
compaction"); it has the pieces, used here: the reader of a key-value file's Arrow
batches (each row's sequence number and row kind kept, older schemas read in the
current one), the key-value file writer, and the commit of a ``COMPACT`` snapshot with
conflict detection (a compaction whose input files are no longer all in the table
fails, as in Paimon). Its merge read is a heap of one Python object per row, so the
merge is tablelog's (:mod:`.sorted_runs`, :mod:`.key_merge`), in Arrow.
Several of them are pypaimon's internals, called through
:mod:`tablelog.store.pypaimon_internals`, which names each and why.

Each rewritten row keeps its sequence number, so files committed meanwhile by writers
(newer sequence numbers, level 0) still win over it; deletes are dropped only when every
run of the bucket is rewritten.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import attrs
import pyarrow as pa

from tablelog.store.bucket_plans import SnapshotPairs, delta_pairs, snapshot_files
from tablelog.store.compaction_files import CompactionFiles, OnFile
from tablelog.store.key_merge import key_merge
from tablelog.store.layout import KEY_PREFIX, retractions, writes_thin
from tablelog.store.manifests import merge_base_manifests
from tablelog.store.merged_reads import merges_with_tablelog, paimon_merge_options
from tablelog.store.pypaimon_internals import (
    collect_manifest_entries,
    key_value_file_batches,
    key_value_schema,
    try_commit,
    with_commit_user,
)
from tablelog.store.sorted_runs import MergeOrder, merged_chunks


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


#: The fewest rows compaction reads from a file at a time.
READ_BATCH_ROWS = 8192


def rewrite_bucket(
    paimon: Any, files: BucketFiles, output_level: int, drop_deletes: bool, *, thin: bool = False,
    target_file_size: int | None = None, on_file: OnFile | None = None, pace: Callable[[], None] | None = None,
) -> list[Any]:
    """Write the merged rows of ``files`` as new files of one sorted run at ``output_level``;
    the new files' metadata (not committed: :func:`commit_compaction` or
    :func:`delete_files`). ``drop_deletes``: only when ``files`` are all the bucket has
    (older runs could hold a deleted key otherwise). ``thin``: the table declares files
    without key columns (:mod:`tablelog.store.layout`). ``target_file_size``: the files'
    size (default: the table's ``target-file-size``); ``on_file``: told of each file
    written; ``pace``: called after each merged batch (a background compaction's pauses:
    :class:`~tablelog.commit.compaction_threads.Pacer`). Empty when no row survives.

    The files' sorted runs are merged as a stream (:mod:`.sorted_runs`), a section of
    overlapping files after another (Paimon's ``IntervalPartition``), each key's records
    merged with the table's merge engine (:mod:`.key_merge`): what is held is a batch per
    run and a row group of output (:mod:`.compaction_files`), not the bucket."""
    from pypaimon.read.interval_partition import IntervalPartition

    options = paimon_merge_options(paimon)
    assert options is not None, "a table with a primary key is compacted"
    schema = key_value_schema(paimon, files.partition, files.bucket)
    key = tuple(f"{KEY_PREFIX}{name}" for name in paimon.trimmed_primary_keys)
    order = MergeOrder(key, options.sequence_fields, options.sequence_ascending)
    merge_keys = key_merge(options, key, merged_by_tablelog=merges_with_tablelog(paimon))
    output = CompactionFiles(
        paimon, files.partition, files.bucket, level=output_level, thin=thin, on_file=on_file,
        target_size=target_file_size or int(paimon.options.target_file_size(True)))
    # pypaimon's reader decodes a file's row group whole and hands out slices of it: larger
    # batches cost no memory, and fewer of them less time in Python.
    reading = paimon.copy({"read.batch-size": str(max(READ_BATCH_ROWS, int(paimon.options.read_batch_size())))})
    try:
        for section in IntervalPartition(list(files.files)).partition():
            runs = [_run_batches(reading, files, run.files, schema) for run in section]
            for chunk in merged_chunks(runs, order):
                rows = merge_keys(chunk)
                if drop_deletes:
                    rows = rows.filter(pa.array(~retractions(rows)))
                output.add(rows)
                if pace is not None:
                    pace()
        return output.finish()
    except BaseException:
        output.abort()
        raise


def _run_batches(paimon: Any, files: BucketFiles, run: Sequence[Any], schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """The rows of one sorted run's files (in key order) in ``schema``: files of an older
    schema are read in the current one (by field id, as pypaimon reads them)."""
    for batch in key_value_file_batches(paimon, files.partition, files.bucket, run):
        if batch.num_rows:
            yield _conformed(batch, schema)


def _conformed(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """``batch`` in ``schema`` (its columns by name, cast where their type differs, null
    where it has none), zero-copy when only the fields' nullability differs."""
    given = batch.schema
    return pa.RecordBatch.from_arrays([
        pa.nulls(batch.num_rows, field.type) if (index := given.get_field_index(field.name)) < 0
        else batch.column(index) if given.field(index).type == field.type
        else batch.column(index).cast(field.type)
        for field in schema
    ], schema=schema)


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

    def __init__(self, paimon: Any, s3_client: Any = None, on_file: OnFile | None = None) -> None:
        self._paimon = paimon  # pypaimon FileStoreTable
        self._s3_client = s3_client  # an object-store warehouse's boto3 client (None: local)
        self._thin = writes_thin(paimon.table_schema.options or {})  # files without key columns
        self._on_file = on_file  # told of each file a rewrite writes

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

    def rewrite_bucket(self, files: BucketFiles, output_level: int, drop_deletes: bool,
                       pace: Callable[[], None] | None = None) -> list[Any]:
        """:func:`rewrite_bucket` (uncommitted: :meth:`commit`, or :meth:`delete_rewritten`)."""
        return rewrite_bucket(self._paimon, files, output_level, drop_deletes, thin=self._thin, on_file=self._on_file,
                              pace=pace)

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
