"""The rows ``python -m bench.scale`` writes: a partitioned primary-key table
``(p int, id bigint, seq bigint, payload string)``, about 100 bytes a row, key ``(p, id)``
with ``p = id % PARTITIONS``; a micro-batch's rows are new keys (ids counted up) and
updates of old keys (ids drawn at random from those written), each key at most once a
micro-batch, written as parquet files the sink reads as a stream."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

SCHEMA = pa.schema([("p", pa.int32()), ("id", pa.int64()), ("seq", pa.int64()), ("payload", pa.string())])
#: The same, as the stream reader's schema string.
SCHEMA_DDL = "p int, id long, seq long, payload string"
#: Fixed table partitions and buckets: a bucket grows with the table.
PARTITIONS = 4
BUCKETS = 4
#: Random characters at the head of a payload (about 10 bytes of entropy: the files
#: compress as real values do, not to nothing), then a constant tail.
_RANDOM_CHARS = 20
PAYLOAD_CHARS = 80


def payloads(rng: np.random.Generator, n: int) -> pa.Array:
    """``n`` strings of :data:`PAYLOAD_CHARS` characters: random letters a-p, then ``x``s."""
    chars = np.full((n, PAYLOAD_CHARS), ord("x"), dtype=np.uint8)
    chars[:, :_RANDOM_CHARS] = ord("a") + rng.integers(0, 16, size=(n, _RANDOM_CHARS), dtype=np.uint8)
    offsets = np.arange(0, (n + 1) * PAYLOAD_CHARS, PAYLOAD_CHARS, dtype=np.int32)
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(chars.tobytes()))


class RowSource:
    """Keys written so far (``0 .. keys - 1``) and the micro-batches that add to them."""

    def __init__(self, seed: int = 30) -> None:
        self.keys = 0
        self.batches = 0
        self._rng = np.random.default_rng(seed)

    def batch(self, new: int, updates: int) -> pa.Table:
        """``new`` new keys and about ``updates`` updates of old ones (a key drawn twice is
        written once), shuffled; ``seq`` is the batch's number."""
        old = np.unique(self._rng.integers(0, self.keys, size=updates)) if updates and self.keys else np.empty(0, np.int64)
        ids = np.concatenate([np.arange(self.keys, self.keys + new, dtype=np.int64), old.astype(np.int64)])
        self._rng.shuffle(ids)
        self.keys += new
        self.batches += 1
        n = len(ids)
        return pa.table({
            "p": pa.array((ids % PARTITIONS).astype(np.int32)),
            "id": pa.array(ids),
            "seq": pa.array(np.full(n, self.batches, dtype=np.int64)),
            "payload": payloads(self._rng, n),
        }, schema=SCHEMA)


def write_batch_files(rows: pa.Table, directory: Path, first_file: int, files: int) -> int:
    """``rows`` as ``files`` parquet files in ``directory`` (one Spark task each: a key is
    in one file only), numbered from ``first_file``, so a stream reading ``files`` files
    a trigger gets them as one micro-batch; returns the next file number."""
    per_file = -(-rows.num_rows // files)
    for i in range(files):
        part = rows.slice(i * per_file, per_file)
        pq.write_table(part, directory / f"part-{first_file + i:06d}.parquet", compression="none")
    return first_file + files
