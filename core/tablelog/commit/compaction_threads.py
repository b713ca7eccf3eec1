"""Where a compaction's pair rewrites run: one after another on the caller's thread, or
several at once on a pool of threads (``tablelog compact --threads``). Reading, decoding
and writing a pair's files release Python's lock, and on object storage one pair's reads
wait on the network while another's merge runs."""

from __future__ import annotations

import threading
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
