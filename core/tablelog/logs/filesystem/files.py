"""The file operations the log is built from: locks, positioned reads and writes, fsync."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from . import frames


@contextlib.contextmanager
def flock(fd: int, exclusive: bool) -> Iterator[None]:
    fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


def not_writable(err: OSError) -> bool:
    """Whether opening for writing failed because this process may only read there (a
    read-only mount, directory or file): a reader then opens read-only."""
    return err.errno in (errno.EACCES, errno.EPERM, errno.EROFS)


def reader(fd: int) -> frames.Reader:
    return lambda offset, size: os.pread(fd, size, offset)


def pwrite_all(fd: int, data: bytes, offset: int) -> None:
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, offset)
        view = view[written:]
        offset += written


def fsync_directory(directory: Path) -> None:
    """Make a created or renamed entry durable, not only the file contents."""
    fd = os.open(directory, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
