"""Deleting many files at once, as expiry does (thousands of data files and manifests per
run on a large table): on an object store, S3's ``DeleteObjects`` of up to 1,000 keys a
request, several requests at a time; elsewhere, the file IO's own deletes in a few
threads. A file already gone is no error (Paimon's ``deleteQuietly``); a file that
cannot be deleted is logged and left, an orphan at worst.
"""

from __future__ import annotations

import concurrent.futures
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from tablelog.store.s3 import split_s3_url

log = logging.getLogger("tablelog.expiry")

#: The most keys one ``DeleteObjects`` request takes (S3's limit).
S3_BATCH = 1_000
#: Requests, or deletes, at a time.
THREADS = 8
#: Fewer files than this are deleted one after another: threads cost more than they save.
_FEW = 16
_S3_SCHEMES = ("s3://", "s3a://")


def delete_files(file_io: Any, paths: Iterable[str], s3_client: Any = None) -> None:
    """Delete ``paths`` (each once, whatever the order)."""
    unique = list(dict.fromkeys(paths))
    if not unique:
        return
    if s3_client is not None and all(p.startswith(_S3_SCHEMES) for p in unique):
        by_bucket: dict[str, list[str]] = {}
        for path in unique:
            bucket, key = split_s3_url(path)
            by_bucket.setdefault(bucket, []).append(key)
        requests = [(bucket, keys[i:i + S3_BATCH]) for bucket, keys in by_bucket.items()
                    for i in range(0, len(keys), S3_BATCH)]
        _in_threads(lambda request: _delete_objects(s3_client, *request), requests)
        return
    if len(unique) < _FEW:
        for path in unique:
            file_io.delete_quietly(path)
        return
    _in_threads(file_io.delete_quietly, unique)


def delete_in_order(file_io: Any, paths: Iterable[str], s3_client: Any = None) -> None:
    """Delete ``paths`` one after another, in their order (expiry's snapshot files, oldest
    first: a crash leaves the oldest gone, never a hole). On an object store, one
    ``DeleteObject`` request each: pyarrow's delete also looks, with several requests, for
    the folder around the file and writes a marker object when it would be empty."""
    for path in paths:
        if s3_client is None or not path.startswith(_S3_SCHEMES):
            file_io.delete_quietly(path)
            continue
        bucket, key = split_s3_url(path)
        try:
            s3_client.delete_object(Bucket=bucket, Key=key)
        except Exception as err:  # noqa: BLE001 - quiet, as Paimon's deleteQuietly
            log.warning("expiry: %s was not deleted (%s)", path, err)


def parallel_map(function: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
    """``function`` of each item, in order, a few at a time (reads of snapshot and
    manifest files, whose latency on an object store dominates)."""
    if len(items) < 2:
        return [function(item) for item in items]
    with concurrent.futures.ThreadPoolExecutor(min(THREADS, len(items)), thread_name_prefix="tablelog-io") as pool:
        return list(pool.map(function, items))


def _in_threads(function: Callable[[Any], Any], items: Sequence[Any]) -> None:
    if len(items) == 1:
        function(items[0])
        return
    parallel_map(function, items)


def _delete_objects(client: Any, bucket: str, keys: Sequence[str]) -> None:
    try:
        response = client.delete_objects(
            Bucket=bucket, Delete={"Objects": [{"Key": key} for key in keys], "Quiet": True})
    except Exception as err:  # noqa: BLE001 - left as orphans, as a failed single delete would be
        log.warning("expiry: %d objects of bucket %s were not deleted (%s)", len(keys), bucket, err)
        return
    for error in response.get("Errors", ()):
        log.warning("expiry: s3://%s/%s was not deleted (%s: %s)", bucket, error.get("Key"), error.get("Code"),
                    error.get("Message"))
