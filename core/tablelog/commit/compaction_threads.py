"""Where a compaction's pair rewrites run: several at once on a pool of threads
(``tablelog compact --threads``), or one after another, each below the caller's CPU
priority when it asks (the background maintainer, :mod:`tablelog.commit.maintenance`).

A thread that lowered its priority cannot raise it again without privileges, so a
lowered rewrite runs on a thread of its own, started for that pair: the priority is
chosen again for every pair (the maintainer rewrites at full priority once its pairs fall
past ``num-sorted-run.stop-trigger``). Threads such a thread starts inherit its priority
(Arrow's pool threads, when it is the first to need them).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import TypeVar

from tablelog.commit.compaction_commit import PairRewrite, PairTask

logger = logging.getLogger("tablelog.compaction")

#: How far below the caller's CPU priority a rewrite runs (a nice increment, Linux): a
#: number, or a function asked before each pair.
Nice = int | Callable[[], int]

_T = TypeVar("_T")


def rewrite_pairs(
    tasks: Sequence[PairTask], rewrite: Callable[[PairTask], PairRewrite],
    discard: Callable[[Sequence[PairRewrite]], None], *, stop: Callable[[], bool], threads: int, nice: Nice = 0,
) -> list[PairRewrite]:
    """Each task's ``rewrite``, in plan order, a task started only while ``stop()`` is
    false, ``threads`` at a time (one: each at ``nice``, asked before it); when one fails,
    none starts after it, and every rewrite done is ``discard``-ed before the error is
    raised."""
    failed = threading.Event()

    def one(task: PairTask) -> PairRewrite | None:
        return None if failed.is_set() or stop() else rewrite(task)

    done: list[PairRewrite] = []
    workers = min(threads, len(tasks))
    try:
        if workers <= 1:
            for task in tasks:
                steps = nice() if callable(nice) else nice
                rewritten = one(task) if steps <= 0 else _on_a_thread_of_its_own(steps, one, task)
                if rewritten is None:
                    break
                done.append(rewritten)
            return done
        steps = nice() if callable(nice) else nice
        with ThreadPoolExecutor(workers, thread_name_prefix="tablelog-compact",
                                initializer=lower_thread_priority, initargs=(steps,)) as pool:
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


def lower_thread_priority(steps: int) -> None:
    """Nice the calling thread by ``steps`` (Linux: a thread's id is a process id to
    ``setpriority``; elsewhere that would renice the whole process, so nothing)."""
    if steps <= 0 or not sys.platform.startswith("linux"):
        return
    thread = threading.get_native_id()
    try:
        os.setpriority(os.PRIO_PROCESS, thread, min(19, os.getpriority(os.PRIO_PROCESS, thread) + steps))
    except OSError as err:  # a sandbox may refuse it: the rewrite runs at the caller's priority
        logger.debug("a compaction thread keeps its priority: %s", err)


def _on_a_thread_of_its_own(steps: int, work: Callable[[PairTask], _T], task: PairTask) -> _T:
    """``work(task)`` on a new thread ``steps`` below the caller's priority; its result or error."""
    outcome: list[tuple[bool, object]] = []

    def run() -> None:
        lower_thread_priority(steps)
        try:
            outcome.append((True, work(task)))
        except BaseException as err:  # noqa: BLE001 -- raised again in the caller's thread
            outcome.append((False, err))

    thread = threading.Thread(target=run, name="tablelog-compact-low", daemon=True)
    thread.start()
    thread.join()
    ok, value = outcome[0]
    if not ok:
        raise value  # type: ignore[misc]
    return value  # type: ignore[return-value]
