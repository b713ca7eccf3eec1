"""The cyclic garbage collector, paused while a reader builds a batch of changes."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a batch of changes is built.

    The records, rows and changes a fetch creates hold no reference cycles, so the
    collector finds nothing in them, but they survive long enough to be promoted,
    and the collections they trigger walk every live object. Reference counting
    still frees everything at once; the collector resumes at the end of the batch
    (unless it was off already).
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
