"""Compaction's streaming merge of a bucket's sorted runs (Arrow batches, a k-way merge,
each key merged with the table's engine) writes exactly the key-value rows the row-by-row
merge read it replaced gave: every key, sequence number, row kind and value, over
generated runs of int, string and composite keys, deletes kept or dropped, batches cut
at awkward places, files of an older schema, thin and non-thin files, and every merge
engine. The replaced merge is kept here as the oracle."""

from __future__ import annotations

import functools
import itertools
import math
import random
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tablelog.store import compaction, sorted_runs
from tablelog.store.compaction import BucketFiles, bucket_files, rewrite_bucket
from tablelog.store.layout import VALUE_KIND
from tablelog.store.merged_reads import merged_read_table
from tablelog.store.other_writers import create_paimon_table
from tablelog.store.pypaimon_internals import key_value_file_batches
from tablelog.store.schema_changes import AddColumn
from tablelog.store.warehouse import Warehouse

Change = tuple[str, Mapping[str, Any]]


def merged_by_the_replaced_read(paimon: Any, files: BucketFiles, drop_deletes: bool) -> list[tuple[Any, ...]]:
    """The key-value rows compaction wrote before the streaming merge: pypaimon's merge
    read of the bucket's sections (a merge-engine table's with tablelog's merge function),
    row by row, in key order."""
    from pypaimon.read.interval_partition import IntervalPartition
    from pypaimon.read.reader.concat_record_reader import ConcatRecordReader
    from pypaimon.read.reader.drop_delete_reader import DropDeleteRecordReader
    from pypaimon.read.split import DataSplit
    from pypaimon.read.split_read import MergeFileSplitRead
    from pypaimon.table.row.generic_row import GenericRow

    paimon = merged_read_table(paimon)
    split = DataSplit(files=list(files.files), partition=GenericRow(list(files.partition), paimon.partition_keys_fields),
                      bucket=files.bucket, snapshot_id=files.snapshot_id)
    read = MergeFileSplitRead(table=paimon, predicate=None, read_type=paimon.fields, split=split,
                              row_tracking_enabled=False)
    read._genarate_deletion_file_readers()
    sections = IntervalPartition(split.files).partition()
    reader: Any = ConcatRecordReader([functools.partial(read.section_reader_supplier, s) for s in sections])
    if drop_deletes:
        reader = DropDeleteRecordReader(reader)
    rows = []
    try:
        while (batch := reader.read_batch()) is not None:
            while (kv := batch.next()) is not None:
                rows.append(_comparable(kv._row_tuple))
    finally:
        reader.close()
    return rows


def rows_of(paimon: Any, files: BucketFiles, written: Sequence[Any]) -> list[tuple[Any, ...]]:
    return [_comparable(row.values()) for batch in key_value_file_batches(paimon, files.partition, files.bucket, written)
            for row in batch.to_pylist()]


def _comparable(row: Iterable[Any]) -> tuple[Any, ...]:
    return tuple("NaN" if isinstance(v, float) and math.isnan(v) else v for v in row)  # NaN == NaN


@attrs.frozen
class Case:
    """A table and the commits (each a sorted run of its one bucket) written to it."""

    name: str
    schema: pa.Schema
    key: tuple[str, ...]
    options: Mapping[str, str]
    changes: Callable[[random.Random, int], Iterator[Change]]  # one commit's changes
    added_column: pa.Field | None = None  # added after half of the commits

    @property
    def thin(self) -> bool:
        return self.options.get("data-file.thin-mode") == "true"


def _upserts(values: Callable[[random.Random, int], dict[str, Any]], kinds: Sequence[str] = ("+I",),
             keys: Callable[[int], dict[str, Any]] = lambda k: {"k": k}) -> Callable[[random.Random, int], Iterator[Change]]:
    def changes(rng: random.Random, commit: int) -> Iterator[Change]:
        for k in sorted(rng.sample(range(60), 25)):
            yield rng.choice(kinds), {**keys(k), **values(rng, commit)}
    return changes


def _text(rng: random.Random, commit: int) -> str | None:
    return rng.choice([None, f"c{commit}", f"x{rng.randrange(9)}", "ü" * rng.randrange(3)])


_V = pa.field("v", pa.string())
CASES = [
    Case("deduplicate, int key", pa.schema([("k", pa.int64()), _V]), ("k",), {},
         _upserts(lambda rng, c: {"v": _text(rng, c)}, ("+I", "+I", "+U", "-D"))),
    Case("deduplicate, string key, thin", pa.schema([("k", pa.string()), _V]), ("k",), {"data-file.thin-mode": "true"},
         _upserts(lambda rng, c: {"v": _text(rng, c)}, ("+I", "+U", "-U", "-D"), lambda k: {"k": f"{'aäzA'[k % 4]}{k}"})),
    Case("deduplicate, composite key", pa.schema([("k", pa.string()), ("n", pa.int32()), _V]), ("k", "n"), {},
         _upserts(lambda rng, c: {"v": _text(rng, c)}, ("+I", "+I", "-D"), lambda k: {"k": "ab"[k % 2], "n": k // 2})),
    Case("deduplicate, partitioned", pa.schema([("p", pa.string()), ("k", pa.int64()), _V]), ("p", "k"),
         {"partition": "p", "data-file.thin-mode": "true"},
         _upserts(lambda rng, c: {"v": _text(rng, c)}, ("+I", "-D"), lambda k: {"p": "xy"[k % 2], "k": k // 2})),
    Case("deduplicate, a column added", pa.schema([("k", pa.int64()), _V]), ("k",), {"data-file.thin-mode": "true"},
         _upserts(lambda rng, c: {"v": _text(rng, c), **({"w": rng.randrange(5)} if c > 2 else {})}, ("+I", "-D")),
         added_column=pa.field("w", pa.int64())),
    Case("sequence.field", pa.schema([("k", pa.int64()), ("ts", pa.int64()), _V]), ("k",), {"sequence.field": "ts"},
         _upserts(lambda rng, c: {"ts": rng.choice([None, *range(5)]), "v": _text(rng, c)}, ("+I", "+I", "-D"))),
    Case("sequence.field descending", pa.schema([("k", pa.int64()), ("ts", pa.float64()), _V]), ("k",),
         {"sequence.field": "ts", "sequence.field.sort-order": "descending"},
         _upserts(lambda rng, c: {"ts": rng.choice([None, -0.0, 0.0, 1.5, float("nan")]), "v": _text(rng, c)})),
    Case("first-row", pa.schema([("k", pa.int64()), _V]), ("k",), {"merge-engine": "first-row"},
         _upserts(lambda rng, c: {"v": _text(rng, c)}, ("+I", "+U"))),
    Case("partial-update, a column added", pa.schema([("k", pa.int64()), ("a", pa.int64()), _V]), ("k",),
         {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"},
         _upserts(lambda rng, c: {"a": rng.choice([None, c]), "v": _text(rng, c),
                                  **({"w": rng.choice([None, c])} if c > 2 else {})}, ("+I", "+I", "+I", "-D")),
         added_column=pa.field("w", pa.int64())),
    Case("partial-update, sequence groups", pa.schema([("k", pa.int64()), ("g", pa.int64()), ("a", pa.int64()),
                                                       ("h", pa.int64()), _V]), ("k",),
         {"merge-engine": "partial-update", "fields.g.sequence-group": "a", "fields.h.sequence-group": "v"},
         _upserts(lambda rng, c: {"g": rng.choice([None, c, 9 - c]), "a": rng.choice([None, c]),
                                  "h": rng.choice([None, c]), "v": _text(rng, c)}, ("+I", "+I", "-D", "-U"))),
    Case("aggregation", pa.schema([("k", pa.int64()), ("total", pa.int64()), ("last", pa.string()),
                                   ("tags", pa.string())]), ("k",),
         {"merge-engine": "aggregation", "fields.total.aggregate-function": "sum",
          "fields.last.aggregate-function": "last_non_null_value", "fields.tags.aggregate-function": "listagg",
          "fields.tags.ignore-retract": "true", "data-file.thin-mode": "true"},
         _upserts(lambda rng, c: {"total": rng.randrange(-3, 9), "last": _text(rng, c), "tags": _text(rng, c)},
                  ("+I", "+I", "+I", "-U", "-D"))),
    Case("aggregation in Arrow", pa.schema([("k", pa.int64()), ("total", pa.int64()), ("last", pa.string())]), ("k",),
         {"merge-engine": "aggregation", "fields.total.aggregate-function": "sum",
          "fields.last.aggregate-function": "last_non_null_value"},
         _upserts(lambda rng, c: {"total": rng.choice([None, *range(9)]), "last": _text(rng, c)},
                  ("+I", "+I", "+I", "+I", "+U", "-D"))),
]


def table_of(case: Case, directory: Path) -> Any:
    """The case's table, with 5 runs in its one bucket."""
    warehouse = str(directory)
    wh = Warehouse(warehouse)
    create_paimon_table(wh, "db.t", case.schema, list(case.key), bucket=1, options=case.options)
    files = wh.open("db.t")
    rng = random.Random(case.name)
    for commit in range(5):
        if commit == 3 and case.added_column is not None:
            files.alter([AddColumn(case.added_column.name, case.added_column.type)])
            files = Warehouse(warehouse).open("db.t")
        changes = list(case.changes(rng, commit))
        write = files.new_write()
        try:
            write.write_arrow(pa.Table.from_pylist([dict(r) for _, r in changes], schema=files.schema),
                              [kind for kind, _ in changes])
            messages = write.prepare_commit(commit + 1)
        finally:
            write.close()
        files.commit(messages, commit_user="test", commit_identifier=commit + 1, properties={})
    return files


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_streaming_merge_writes_what_the_row_by_row_merge_read_gave(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    files = table_of(case, tmp_path)
    buckets = bucket_files(files.paimon, files.latest_snapshot().id)
    assert [bucket.sorted_runs for bucket in buckets] == [5] * len(buckets)
    # Batches read of 1, 7 and 1024 rows, merged a row, a few rows (about 200 bytes of
    # each of the 5 runs) or the whole run at a time: cuts at every row, at awkward
    # places, at the runs' ends.
    cuts = [(1, 1), (7, 1000), (1024, 1000), (1024, sorted_runs.BUFFER_BYTES)]
    for bucket, (batch_rows, buffer_bytes), drop_deletes in itertools.product(buckets, cuts, (True, False)):
        monkeypatch.setattr(compaction, "READ_BATCH_ROWS", batch_rows)
        monkeypatch.setattr(sorted_runs, "BUFFER_BYTES", buffer_bytes)
        paimon = files.paimon.copy({"read.batch-size": str(batch_rows)})
        expected = merged_by_the_replaced_read(files.paimon, bucket, drop_deletes)
        new_files = rewrite_bucket(paimon, bucket, 5, drop_deletes, thin=case.thin, target_file_size=600)
        assert rows_of(files.paimon, bucket, new_files) == expected, (batch_rows, buffer_bytes, drop_deletes)
        assert len(new_files) > 1  # files rolled at the target size
        for meta in new_files:
            data = pq.read_table(meta.file_path)
            assert meta.level == 5 and meta.file_source == 1 and meta.row_count == data.num_rows
            assert meta.delete_row_count == sum(1 for kind in data.column(VALUE_KIND).to_pylist() if kind in (1, 3))
            assert any(n.startswith("_KEY_") for n in data.schema.names) is not case.thin
        if drop_deletes:
            assert all(meta.delete_row_count == 0 for meta in new_files)
        maxima = [tuple(meta.max_key.values) for meta in new_files]
        minima = [tuple(meta.min_key.values) for meta in new_files]
        assert all(high < low for high, low in zip(maxima, minima[1:], strict=False))  # one sorted run
