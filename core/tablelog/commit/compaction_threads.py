"""Where and how fast a compaction's pair rewrites run: one after another on the caller's
thread, or several at once on a pool of threads (``tablelog compact --threads``); and, in a
writer's background, pausing between the batches of a merge (:class:`Pacer`). Reading,
decoding and writing a pair's files release Python's lock, and on object storage one
pair's reads wait on the network while another's merge runs."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait

from tablelog.commit.compaction_commit import PairRewrite, PairTask


def rewrite_pairs(
    tasks: Sequence[PairTask], rewrite: Callable[[PairTask], PairRewrite],
    discard: Callable[[Sequence[PairRewrite]], None], *, stop: Callable[[], bool], threads: int,
) -> list[PairRewrite]:
    """Each task's ``rewrite``, in plan order, ``threads`` at a time, a task started only
    while ``stop()`` is false; when one fails, none starts after it, and every rewrite
    done is ``discard``-ed before the error is raised."""
    failed = threading.Event()

    def one(task: PairTask) -> PairRewrite | None:
        return None if failed.is_set() or stop() else rewrite(task)

    done: list[PairRewrite] = []
    try:
        if min(threads, len(tasks)) <= 1:
            for task in tasks:
                if (rewritten := one(task)) is None:
                    break
                done.append(rewritten)
            return done
        with ThreadPoolExecutor(min(threads, len(tasks)), thread_name_prefix="tablelog-compact") as pool:
            futures = [pool.submit(one, task) for task in tasks]
            try:
                for future in futures:
                    if (rewritten := future.result()) is not None:
                        done.append(rewritten)
            except BaseException:
                failed.set()
                wait(futures)  # the rewrites under way end, and their files go with the others'
                done = [r for f in futures if not f.cancelled() and f.exception() is None
                        and (r := f.result()) is not None]
                raise
        return done
    except BaseException:
        discard(done)
        raise


class Pacer:
    """Holds a compaction to ``share`` of the wall-clock time: called between the batches of
    its merge, it waits ``(1 - share) / share`` times as long as the work since its last
    call (or its creation). On a machine whose cores a writer keeps busy, a compaction at
    full speed slows whatever writes it overlaps by about what it takes; paced, it slows
    more of them, each by less. ``wait(seconds)``: how to wait (a cancel event's ``wait``
    ends the pause when the compaction is cancelled); ``clock``: monotonic seconds."""

    def __init__(self, share: float, wait: Callable[[float], object] = time.sleep,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not 0 < share <= 1:
            raise ValueError(f"a compaction's share of the time is above 0 and at most 1, not {share}")
        self._factor = (1 - share) / share
        self._wait, self._clock = wait, clock
        self._since = clock()
        self.paused_s = 0.0  # the pauses so far

    def __call__(self) -> None:
        pause = (self._clock() - self._since) * self._factor
        if pause > 0:
            self._wait(pause)
            self.paused_s += pause
        self._since = self._clock()
