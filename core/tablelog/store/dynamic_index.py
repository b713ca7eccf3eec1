"""Dynamic buckets (``bucket = -1``) with more than one writer: the keys' HASH index
reconciled at commit.

Paimon keeps, per table partition and bucket, an index file of the hashes of the keys
the bucket holds; a writer looks a key up there (an unknown key goes to a bucket with
room) and commits, with its data files, the bucket's whole index again: Paimon takes a
bucket's latest index file as the whole truth, so it allows one writer per bucket.
tablelog has several: the tasks of one Spark write, and writers in other processes, each
starting from the snapshot that was latest when it opened. Unreconciled, the later
commit's index would drop the keys an earlier one added (a later write of such a key
lands in another bucket: the table keeps two rows for it), and two writers could put
one new key in two buckets.

So a commit, holding the table's commit (the lock, or the snapshot id it creates),
reconciles its index files with the snapshot it follows: a bucket's index becomes the
union of the committed one and every one this commit adds; a key this commit put in a
bucket while the committed index (or another file of this commit) has it in another
bucket refuses the commit (:class:`KeyInTwoBuckets`): nothing is committed, and the
write, started again, finds the key's bucket.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

from tablelog.errors import CommitError


class KeyInTwoBuckets(CommitError):
    """This commit put a key in another bucket than the one the table (or another part
    of this commit) has it in."""


def reconcile_hash_indexes(paimon: Any, messages: Sequence[Any], base_snapshot: Callable[[], Any]) -> None:
    """Make the HASH index files ``messages`` add (pypaimon ``CommitMessage``\\s of a
    dynamic-bucket table) right on top of the snapshot ``base_snapshot()`` returns (None:
    an empty table; asked only when there is an index to reconcile), in place; raises
    :class:`KeyInTwoBuckets`. Like Paimon's own writer, which reads the key index of the
    partition to place new keys, it reads the index of each partition the commit adds keys to."""
    # A partition drop (store.partitions.PartitionDrop) adds no index: Paimon's overwrite drops the partition's.
    messages = [m for m in messages if getattr(m, "index_adds", None)]
    if not messages:
        return  # fixed buckets, no new key, or a partition drop: nothing to read
    from pypaimon.index.dynamic_bucket import HASH_INDEX
    from pypaimon.index.index_file_handler import IndexFileHandler

    adds = [(m, e) for m in messages for e in m.index_adds if e.index_file.index_type == HASH_INDEX]
    if not adds:
        return
    base = base_snapshot()
    partitions = {tuple(e.partition.values) for _, e in adds}
    committed: dict[tuple[tuple[Any, ...], int], set[int]] = {}
    for entry in IndexFileHandler(paimon).scan(base) if base is not None else []:
        part = tuple(entry.partition.values)
        if entry.index_file.index_type == HASH_INDEX and part in partitions:
            committed[(part, int(entry.bucket))] = _hashes(paimon, entry)
    owner = {(part, h): bucket for (part, bucket), hashes in committed.items() for h in hashes}
    added: dict[tuple[tuple[Any, ...], int], set[int]] = {}
    for _, entry in adds:
        added.setdefault((tuple(entry.partition.values), int(entry.bucket)), set()).update(_hashes(paimon, entry))
    for (part, bucket), hashes in added.items():
        for h in hashes - committed.get((part, bucket), set()):
            other = owner.setdefault((part, h), bucket)
            if other != bucket:
                raise KeyInTwoBuckets(
                    f"dynamic buckets: a key (hash {h}) of this commit went to bucket {bucket} of partition "
                    f"{list(part)} while the table, or another task of this commit, has it in bucket {other} "
                    "(writers that started from the same snapshot chose apart); nothing was committed: write "
                    "again, the new write finds the key's bucket"
                )
    _replace(paimon, adds, added, committed)


def _replace(
    paimon: Any, adds: list[tuple[Any, Any]], added: dict[tuple[tuple[Any, ...], int], set[int]],
    committed: dict[tuple[tuple[Any, ...], int], set[int]],
) -> None:
    """One index file per bucket, holding the union: where a bucket has a single added
    file that already holds it, that file; else a new one replacing the added ones."""
    from pypaimon.index.dynamic_bucket import DynamicBucketIndexMaintainer

    by_bucket: dict[tuple[tuple[Any, ...], int], list[tuple[Any, Any]]] = {}
    for message, entry in adds:
        by_bucket.setdefault((tuple(entry.partition.values), int(entry.bucket)), []).append((message, entry))
    for key, entries in by_bucket.items():
        union = added[key] | committed.get(key, set())
        if len(entries) == 1 and union == added[key]:
            continue
        writer = DynamicBucketIndexMaintainer(paimon, ignore_existing=True)
        for h in union:
            writer.notify_new_record(key[0], key[1], h)
        (replacement,) = writer.prepare_commit()[key].additions
        writer.release_prepared()
        for number, (message, entry) in enumerate(entries):
            message.index_adds.remove(entry)
            if number == 0:
                message.index_adds.append(replacement)
            paimon.file_io.delete_quietly(_path(paimon, entry))


def _path(paimon: Any, entry: Any) -> str:
    return str(paimon.path_factory().bucket_index_path(
        tuple(entry.partition.values), entry.bucket, entry.index_file, paimon.file_io
    ))


def _hashes(paimon: Any, entry: Any) -> set[int]:
    """The key hashes of one HASH index file: big-endian 32-bit integers."""
    with paimon.file_io.new_input_stream(_path(paimon, entry)) as stream:
        payload = stream.read()
    return {value for (value,) in struct.iter_unpack(">i", payload)}
