"""A topic's metadata: ``topic.json`` (the partition count), read, or created with the
partition files by one process at a time."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tablelog.plugin import LogUnavailableError, TopicError

from . import frames
from .files import flock, fsync_directory
from .location import WHERE_HINT

FORMAT_NAME = "tablelog-filesystem-log"
META_NAME = "topic.json"
LOCK_NAME = "topic.lock"


def partition_file_name(partition: int) -> str:
    return f"partition-{partition:05d}.log"


def read_partition_count(directory: Path, topic: str) -> int | None:
    """The partition count ``topic.json`` declares, or None while the topic does not exist."""
    meta_path = directory / META_NAME
    try:
        meta = json.loads(meta_path.read_bytes())
    except FileNotFoundError:
        return None
    except OSError as err:  # the storage itself fails (not a directory, no access): an outage
        raise LogUnavailableError(f"cannot read {meta_path}: {err}{WHERE_HINT}", topic=topic) from None
    except ValueError as err:
        raise TopicError(f"cannot read {meta_path}: {err}", topic=topic) from None
    count = meta.get("partitions") if isinstance(meta, dict) else None
    if not isinstance(count, int) or count < 1 or meta.get("format") != FORMAT_NAME:
        raise TopicError(f"{meta_path} is not a filesystem log topic file", topic=topic)
    return count


def create_topic(directory: Path, topic: str, partitions: int) -> int:
    """Create the partition files, then publish ``topic.json`` by an atomic rename:
    a topic either exists whole or not at all, even if this process dies here."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        lock_fd = os.open(directory / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as err:
        raise LogUnavailableError(f"cannot create {directory}: {err}{WHERE_HINT}", topic=topic) from None
    try:
        with flock(lock_fd, exclusive=True):
            existing = read_partition_count(directory, topic)
            if existing is not None:  # another process won the race
                return existing
            for partition in range(partitions):
                fd = os.open(
                    directory / partition_file_name(partition),
                    os.O_RDWR | os.O_CREAT | os.O_CLOEXEC,
                    0o644,
                )
                os.close(fd)
            meta = {"format": FORMAT_NAME, "version": frames.VERSION, "partitions": partitions}
            temporary = directory / f".{META_NAME}.{os.getpid()}.tmp"
            temporary.write_bytes(json.dumps(meta).encode())
            with open(temporary, "rb") as handle:
                os.fsync(handle.fileno())
            os.replace(temporary, directory / META_NAME)
            fsync_directory(directory)
    except OSError as err:
        raise LogUnavailableError(
            f"cannot create topic in {directory}: {err}{WHERE_HINT}", topic=topic
        ) from None
    finally:
        os.close(lock_fd)
    return partitions
