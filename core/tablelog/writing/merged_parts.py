"""A merged-changelog attempt's records and changes (:func:`~tablelog.writing.merged.merged_write`)
computed in parts, each in a worker thread while the writer encodes the part before.

Keys are parted by bucket (fixed buckets): a part's lookup reads only its buckets' files,
so the parts together read what one lookup reads, and the lookup and merge of a part
(mostly numpy and Arrow, which release the GIL) run beside the encoding of the previous
part's changes on the machine's other core. Every part is computed against the same base
snapshot; together they hold the attempt's records and changes, each key's in one part.
The encoded changes are all produced after the last part is encoded, as for one part: a
row too large for the log fails the write with nothing sent.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from tablelog.writing.merged import MergedWrite, PendingRows, merged_changes, merged_write

if TYPE_CHECKING:
    from tablelog.records import ProduceBatch, RowKind
    from tablelog.store import TableFiles

#: Parts an attempt's keys are computed in, at most (a bucket is never split).
MAX_PARTS = 4
#: Fewer rows than this are computed in one part: a part has a fixed cost.
MIN_PART_ROWS = 4_096


def merged_and_encoded(
    files: TableFiles, schema: pa.Schema, pending: PendingRows,
    encode: Callable[[pa.Table, list[RowKind]], tuple[list[ProduceBatch], list[ProduceBatch]]], *, changes: bool,
) -> tuple[MergedWrite, tuple[list[ProduceBatch], list[ProduceBatch]]]:
    """The attempt's records and changes (:func:`merged_in_parts` put together), and its
    changes encoded by ``encode`` (the batches of the table topic and of its projection
    stream), each part's while the next is computed."""
    parts: list[MergedWrite] = []
    batches: list[ProduceBatch] = []
    projected: list[ProduceBatch] = []
    for part in merged_in_parts(files, schema, pending, changes=changes):
        if part.changes.num_rows:
            more, more_projected = encode(part.changes, part.change_kinds)
            batches += more
            projected += more_projected
        parts.append(part)
    if len(parts) == 1:
        return parts[0], (batches, projected)
    keys = [p.keys for p in parts if p.keys is not None]
    write = MergedWrite(
        records=pa.concat_tables([p.records for p in parts]), kinds=[k for p in parts for k in p.kinds],
        changes=pa.concat_tables([p.changes for p in parts]), change_kinds=[k for p in parts for k in p.change_kinds],
        base_snapshot=parts[0].base_snapshot, keys=pa.concat_tables(keys) if keys else None)
    return write, (batches, projected)


def merged_in_parts(
    files: TableFiles, schema: pa.Schema, pending: PendingRows, *, changes: bool = True,
) -> Iterator[MergedWrite]:
    """:func:`merged_write`'s result in parts (keys grouped by bucket; one part without
    ``changes``, with dynamic buckets or few rows), the parts computed one after another
    in a worker thread while the caller takes them in order."""
    arrow, _ = pending.rows(schema)
    bucket_count = files.bucket
    if not changes or bucket_count < 2 or arrow.num_rows < 2 * MIN_PART_ROWS:
        yield merged_write(files, schema, pending, changes=changes)
        return
    latest = files.latest_snapshot()
    base = None if latest is None else latest.id
    parts = _parts(files, arrow, bucket_count, max(1, min(MAX_PARTS, arrow.num_rows // MIN_PART_ROWS)))
    if len(parts) < 2:
        yield merged_changes(files, schema, pending, base)
        return
    pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="tablelog-merged-part")
    try:
        pendings = pending.parts(schema, [rows for _, rows in parts])
        ahead = [pool.submit(merged_changes, files, schema, part, base, buckets)
                 for (buckets, _), part in zip(parts, pendings, strict=True)]
        for future in ahead:
            yield future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # a caller that stopped early: no part left running


def _parts(
    files: TableFiles, arrow: pa.Table, bucket_count: int, count: int,
) -> list[tuple[frozenset[int], np.ndarray]]:
    """The rows of ``arrow`` in ``count`` parts of whole buckets, each part's buckets and
    its rows (ascending); empty parts left out."""
    by_part: list[list[np.ndarray]] = [[] for _ in range(count)]
    buckets: list[set[int]] = [set() for _ in range(count)]
    for bucket, rows in files.key_hash_rows(arrow, bucket_count):
        by_part[bucket % count].append(np.asarray(rows, np.int64))
        buckets[bucket % count].add(bucket)
    return [(frozenset(held), np.sort(np.concatenate(rows))) for held, rows in zip(buckets, by_part, strict=True)
            if rows]
