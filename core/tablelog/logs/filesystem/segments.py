"""A partition's segments: its records in several files, each holding the frames from
its base position on, so that retention can delete whole files from the front.

Positions stay byte offsets in the partition as if it were one file: a record at byte
``o`` of the segment with base ``b`` has position ``b + o``, and a segment's base is
where the one before it ended. The first segment is ``partition-00000.log`` (base 0);
the others are named by their base (``partition-00000-00000000000067108864.log``).

A writer rolls to a new segment, under the partition's lock, when the last one has
reached ``filesystem.segment-bytes``: it cuts a torn tail off the old one first, so the
new base is exactly the old segment's valid end. Readers find the next segment by that
name (one ``stat``) when they reach the end of one, and list the directory only when
a position is before the segments they know (retention deleted them meanwhile).
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

import attrs

from .files import not_writable
from .topic import partition_file_name

_LATER_SEGMENT = re.compile(r"partition-(\d{5})-(\d{20})\.log")


def segment_file_name(partition: int, base: int) -> str:
    if base == 0:
        return partition_file_name(partition)
    return f"partition-{partition:05d}-{base:020d}.log"


def lock_file_name(partition: int) -> str:
    return f"partition-{partition:05d}.lock"


def list_bases(directory: Path, partition: int) -> list[int]:
    """The bases of the partition's segment files, ascending."""
    first = partition_file_name(partition)
    bases = []
    for name in os.listdir(directory):
        if name == first:
            bases.append(0)
            continue
        match = _LATER_SEGMENT.fullmatch(name)
        if match is not None and int(match[1]) == partition:
            bases.append(int(match[2]))
    return sorted(bases)


@attrs.define
class Segment:
    """One segment file of a partition, opened on first use."""

    base: int
    path: Path
    fd: int | None = None
    writable: bool = False

    def open(self) -> int:
        """The file descriptor; FileNotFoundError when retention deleted the file."""
        if self.fd is None:
            try:
                self.fd = os.open(self.path, os.O_RDWR | os.O_CLOEXEC)
                self.writable = True
            except OSError as err:  # a reader on a read-only copy or mount of the log
                if not not_writable(err):
                    raise
                self.fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
                self.writable = False
        return self.fd

    def size(self) -> int:
        """The file's size."""
        return os.fstat(self.open()).st_size

    def read(self, position: int, length: int) -> bytes:
        """``length`` bytes at the partition position ``position`` (in this segment)."""
        return os.pread(self.open(), length, position - self.base)

    def close(self) -> None:
        fd, self.fd = self.fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
