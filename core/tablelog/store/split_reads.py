"""A full scan of a snapshot in splits (:mod:`.scan_splits`), each read as a stream of
Arrow batches: what a Spark task of a batch read or of a ``latest-full`` start reads, in
memory bounded by a batch and the files it merges at once, not by its bucket.

The planning reads the snapshot's manifests alone (as pypaimon's scan plans a read); a
split carries its files' metadata, so a task reads no manifest. A split's files are read
by pypaimon's read of the table marked for tablelog's merge functions
(:func:`.merged_reads.merged_read_table`), the read :meth:`~tablelog.store.PaimonTable.read_rows`
does of a whole bucket: every merge engine returns the same rows.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import attrs
import pyarrow as pa

from tablelog.store.merged_reads import merged_read_table
from tablelog.store.partitions import partition_predicate
from tablelog.store.scan_splits import FileSpan, Key, in_range, orders_like_paimon, plan_bucket
from tablelog.store.schema import KIND_FIELD


@attrs.frozen(eq=False)
class ScanSplit:
    """Part of one bucket's rows at a snapshot (pickled to the task that reads it): its
    files (pypaimon's ``DataFileMeta``), whether they are merged, and the key range
    ``[lo, hi)`` kept of them (None: unbounded)."""

    snapshot_id: int
    #: The table partition's values (pypaimon's ``GenericRow``).
    partition: Any
    bucket: int
    files: tuple[Any, ...]
    merged: bool
    lo: Key | None = None
    hi: Key | None = None

    @property
    def size(self) -> int:
        """The bytes of its data files."""
        return sum(int(f.file_size) for f in self.files)

    @property
    def partition_values(self) -> tuple[Any, ...]:
        return tuple(self.partition.values)

    def __repr__(self) -> str:
        return (f"ScanSplit(snapshot {self.snapshot_id}, partition {self.partition_values}, bucket {self.bucket}, "
                f"{len(self.files)} files, {'merged' if self.merged else 'raw'}, [{self.lo}, {self.hi}))")


def plan_splits(
    paimon: Any, snapshot_id: int, target_size: int, partitions: Sequence[Mapping[str, Any]] | None = None,
) -> list[ScanSplit]:
    """The splits of a full scan of ``paimon`` (pypaimon's table) at ``snapshot_id``: per
    (table partition, bucket), of about ``target_size`` bytes each; only the files of
    ``partitions`` (mappings of partition column to typed value; None: all)."""
    table = merged_read_table(paimon, {"scan.snapshot-id": str(snapshot_id)})
    builder = table.new_read_builder()
    if partitions:
        builder = builder.with_filter(partition_predicate(builder, partitions))
    buckets: dict[tuple[tuple[Any, ...], int], tuple[Any, list[Any]]] = {}
    for split in builder.new_scan().plan().splits():
        _, files = buckets.setdefault((tuple(split.partition.values), int(split.bucket)), (split.partition, []))
        files.extend(split.files)
    keyed = bool(table.table_schema.primary_keys)
    ranges = keyed and orders_like_paimon([field.type for field in _key_fields(table)])
    result = []
    for (_, bucket), (partition, files) in sorted(buckets.items(), key=lambda item: (repr(item[0][0]), item[0][1])):
        spans = [_span(f) for f in files]
        for plan in plan_bucket(spans, target_size, keyed=keyed, ranges=ranges):
            result.append(ScanSplit(snapshot_id, partition, bucket, tuple(files[i] for i in plan.files),
                                    plan.merged, plan.lo, plan.hi))
    return result


def read_split(paimon: Any, split: ScanSplit) -> tuple[int, Iterator[pa.Table]]:
    """The rows of ``split`` as a stream of tables, without the kind column, in the schema
    its snapshot was committed with (returned with that schema's id)."""
    from pypaimon.read.split import DataSplit

    table = merged_read_table(paimon, {"scan.snapshot-id": str(split.snapshot_id)})
    data_split = DataSplit(files=list(split.files), partition=split.partition, bucket=split.bucket,
                           raw_convertible=not split.merged, snapshot_id=split.snapshot_id)
    key_columns = [f.name for f in _key_fields(table)]

    def batches() -> Iterator[pa.Table]:
        reader = table.new_read_builder().new_read().to_arrow_batch_reader([data_split])
        for batch in reader:
            rows = pa.Table.from_batches([batch])
            if KIND_FIELD in rows.schema.names:
                rows = rows.drop_columns([KIND_FIELD])
            rows = in_range(rows, key_columns, split.lo, split.hi)
            if rows.num_rows:
                yield rows

    return int(table.table_schema.id), batches()


def _key_fields(table: Any) -> list[pa.Field]:
    """The key columns of the table's data files, in order: the primary key without the
    partition columns (Paimon's ``trimmedPrimaryKeys``), as Arrow fields."""
    from pypaimon.schema.data_types import PyarrowFieldParser

    partition = set(table.table_schema.partition_keys or ())
    by_name = {f.name: f for f in table.table_schema.fields}
    return [PyarrowFieldParser.from_paimon_field(by_name[k])
            for k in table.table_schema.primary_keys or () if k not in partition]


def _span(file: Any) -> FileSpan:
    return FileSpan(int(file.level), int(file.file_size), tuple(file.min_key.values), tuple(file.max_key.values),
                    bool(file.delete_row_count))
