"""``log.reader.pause-gc``: the cyclic garbage collector paused while a reader builds a
batch of changes, for readers that opt in.

Off by default: the collector is process-wide state, and pausing it also pauses it
for the application's other threads. Why a reader may want it: the changes of a batch
hold no reference cycles, so the collector finds nothing in them, but they survive
long enough to be promoted, and the full collections they trigger walk every live
object of the process (docs/performance-history.md measures the cost).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterator


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for the block. Reference counting still
    frees everything at once; the collector resumes at the end of the block, unless it
    was off already (then it stays off)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def batch_guard(pause_gc: bool) -> Callable[[], contextlib.AbstractContextManager[None]]:
    """What a reader wraps the building of each batch in: :func:`gc_paused` when the
    reader opted in (``log.reader.pause-gc``), else nothing."""
    return gc_paused if pause_gc else contextlib.nullcontext
