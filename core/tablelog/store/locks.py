"""Per-table lock files: held until released (commits), or taken only when free
(expiry, the relay: a process that finds one held does without)."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator


@contextlib.contextmanager
def try_lock(directory: str, name: str) -> Iterator[bool]:
    """Whether this process got the exclusive lock file ``name`` in ``directory`` (a local
    table directory); False while another process holds it. Released on exit."""
    fd = os.open(os.path.join(directory, name), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


@contextlib.contextmanager
def hold_lock(directory: str, name: str) -> Iterator[None]:
    """The exclusive lock file ``name`` in ``directory`` (a local table directory), waited
    for while another process holds it. Released on exit."""
    fd = os.open(os.path.join(directory, name), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
