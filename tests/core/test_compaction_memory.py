"""A compaction's memory is bounded by its sorted runs' batches and one output file, not by
the bucket: a bucket whose rows take more memory than a process is allowed compacts in
it. The child process's address space is limited (``RLIMIT_AS``) to what it has after
its imports plus a budget; a failure there may be a ``MemoryError`` or a panic of Rust
code, so success is a line the child prints last. The output is written as its rows come
(:class:`tablelog.store.streamed_file.StreamedFile`): its files and their metadata are
those pypaimon's writer gives the same rows written whole."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import tablelog
from tablelog.store import compaction_files
from tablelog.store.compaction import bucket_files, rewrite_bucket
from tablelog.store.other_writers import create_paimon_table
from tablelog.store.pypaimon_internals import key_value_file_batches
from tablelog.store.streamed_file import StreamedFile as RealStreamedFile
from tablelog.store.warehouse import Warehouse

BUDGET_MB = 300
#: Runs the compaction under the limit, the readers' and writers' threads and modules
#: made before it is set (the limit counts address space, threads' stacks included).
CHILD = """
import resource, sys
warehouse, budget = sys.argv[1], int(sys.argv[2])
import pypaimon.read.interval_partition, pypaimon.write.writer.key_value_data_writer
import tablelog
from tablelog.commit.compaction import compact
from tablelog.store.compaction import bucket_files
from tablelog.store.pypaimon_internals import key_value_file_batches
from tablelog.table import internals
table = tablelog.open_table(warehouse, "db.t")
files = internals(table).files
(bucket,) = bucket_files(files.paimon, files.latest_snapshot().id)
smallest = min(bucket.files, key=lambda f: f.file_size)
next(iter(key_value_file_batches(files.paimon, bucket.partition, bucket.bucket, [smallest])))
size = int(next(line for line in open("/proc/self/status") if line.startswith("VmSize")).split()[1]) * 1024
resource.setrlimit(resource.RLIMIT_AS, (size + (budget << 20), size + (budget << 20)))
result = compact(internals(table))
print("COMPACTED", result.summary(), flush=True)
"""


def write_bucket(warehouse: Path, keys: int, width: int) -> int:
    """A one-bucket table of ``keys`` rows of about ``width`` bytes, then a quarter and
    another quarter of them updated (3 sorted runs), files rolled at 16 MB; the bytes its
    rows take in Arrow."""
    wh = Warehouse(str(warehouse))
    schema = pa.schema([("k", pa.int64()), ("n", pa.int64()), ("payload", pa.string())])
    create_paimon_table(wh, "db.t", schema, ["k"], bucket=1, options={"target-file-size": "16 mb"})
    files = wh.open("db.t")
    every = np.arange(keys, dtype=np.int64)
    size = 0
    for commit, (chosen, tag) in enumerate([(every, "a"), (every[::4], "b"), (every[2::4], "c")], start=1):
        write = files.new_write()
        try:
            for start in range(0, len(chosen), 10_000):
                part = chosen[start:start + 10_000]
                rows = pa.table({"k": part, "n": part, "payload": pa.array([tag * width] * len(part))}, schema=files.schema)
                size += rows.nbytes
                write.write_arrow(rows, ["+I"] * len(part))
            messages = write.prepare_commit(commit)
        finally:
            write.close()
        files.commit(messages, commit_user="test", commit_identifier=commit, properties={})
    return size


def compact_under_limit(warehouse: Path, budget_mb: int) -> subprocess.CompletedProcess[str]:
    core = Path(tablelog.__file__).parents[1]
    # glibc's own malloc (Arrow's pool included), two arenas, and a fixed mmap threshold:
    # with glibc's dynamic one, the large blocks a long compaction allocates and frees
    # come to fragment the heap, whose address space (not what is in use) the limit counts.
    env = {**os.environ, "MALLOC_ARENA_MAX": "2", "ARROW_DEFAULT_MEMORY_POOL": "system",
           "MALLOC_MMAP_THRESHOLD_": str(8 << 20),
           "PYTHONPATH": os.pathsep.join([str(core), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-c", CHILD, str(warehouse), str(budget_mb)],
                          capture_output=True, text=True, env=env, timeout=600, check=False)


def check_compacted(warehouse: Path, keys: int, width: int, budget_mb: int, times: float) -> None:
    size = write_bucket(warehouse, keys, width)
    assert size > times * (budget_mb << 20)
    done = compact_under_limit(warehouse, budget_mb)
    assert "COMPACTED table db.t: compacted bucket(s) 0" in done.stdout, done.stdout + done.stderr[-3000:]
    files = Warehouse(str(warehouse)).open("db.t")
    (bucket,) = bucket_files(files.paimon, files.latest_snapshot().id)
    assert bucket.sorted_runs == 1
    seen = 0
    for batch in key_value_file_batches(files.paimon, bucket.partition, bucket.bucket, bucket.files):
        assert batch.column("k").to_pylist() == list(range(seen, seen + batch.num_rows))
        firsts = pc.utf8_slice_codeunits(batch.column("payload"), 0, 1).to_pylist()
        assert firsts == ["baca"[k % 4] for k in range(seen, seen + batch.num_rows)]
        seen += batch.num_rows
    assert seen == keys


def test_a_bucket_larger_than_the_memory_allowed_compacts_in_it(tmp_path: Path) -> None:
    check_compacted(tmp_path, 60_000, 4_000, BUDGET_MB, 1.1)


@pytest.mark.matrix
def test_a_bucket_ten_times_the_memory_allowed_compacts_in_it(tmp_path: Path) -> None:
    check_compacted(tmp_path, 540_000, 4_000, BUDGET_MB, 10)


def test_a_compaction_s_files_hold_row_groups_of_a_bounded_size_not_one_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tablelog.commit.compaction import compact
    from tablelog.store import layout
    from tablelog.table import internals

    monkeypatch.setattr(layout, "ROW_GROUP_BYTES", 1 << 20)
    size = write_bucket(tmp_path, 200_000, 100)
    compact(internals(tablelog.open_table(str(tmp_path), "db.t")))

    files = Warehouse(str(tmp_path)).open("db.t")
    (bucket,) = bucket_files(files.paimon, files.latest_snapshot().id)
    per_row = size / (200_000 * 1.5)  # the three commits' rows
    groups = [pq.ParquetFile(next(tmp_path.rglob(f.file_name))).metadata for f in bucket.files]
    rows = [m.row_group(g).num_rows for m in groups for g in range(m.num_row_groups)]
    assert sum(rows) == 200_000
    assert all(m.num_row_groups > 1 for m in groups)
    assert max(rows) <= max(layout.MIN_ROW_GROUP_ROWS, 1.2 * (1 << 20) / per_row)


#: What differs between two writes of the same rows.
_PER_WRITE = ("file_name", "file_path", "file_size", "creation_time", "external_path")


def _described(meta: Any) -> dict[str, Any]:
    fields = {name: getattr(meta, name) for name in vars(meta) if name not in _PER_WRITE}
    return {name: repr(value) for name, value in fields.items()}


@pytest.mark.parametrize("thin", [False, True], ids=["keys", "thin"])
def test_a_streamed_file_has_the_metadata_and_rows_of_the_same_rows_written_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, thin: bool,
) -> None:
    write_bucket(tmp_path, 30_000, 50)
    files = Warehouse(str(tmp_path)).open("db.t")
    (bucket,) = bucket_files(files.paimon, files.latest_snapshot().id)

    opened = []
    monkeypatch.setattr(compaction_files, "StreamedFile",
                        lambda *args: opened.append(args) or RealStreamedFile(*args))
    streamed = rewrite_bucket(files.paimon, bucket, 5, True, thin=thin, target_file_size=1 << 20)
    assert len(opened) == len(streamed)  # each file written as its rows came
    monkeypatch.setattr(compaction_files, "streams", lambda writer: False)
    whole = rewrite_bucket(files.paimon, bucket, 5, True, thin=thin, target_file_size=1 << 20)

    assert len(streamed) == len(whole) > 1
    assert [_described(m) for m in streamed] == [_described(m) for m in whole]
    for one, other in zip(streamed, whole, strict=True):
        assert pq.read_table(one.file_path).equals(pq.read_table(other.file_path))
