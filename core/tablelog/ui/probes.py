"""Asking the log systems without ever making a page wait on a broker.

A log query (end positions, earliest positions) runs on a worker thread; a request waits
for it at most ``timeout_s``, and only while nothing was ever known of that log. After
that, requests answer with the last known state at once while a fresh query runs: a
broker that hangs or is down costs each page one bounded wait, then shows as
"unreachable" until it answers again. A query that answers in steps shows its first step
only while nothing complete is known: a refresh does not replace a full answer with a
partial one, so a page never loses a figure it had.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import attrs

#: A log query: returns its answer, or yields better and better answers (each is shown
#: as soon as it comes: a first step that asks the log, a slower one that reads snapshots).
Probe = Callable[[], "dict[str, Any] | None | Iterator[dict[str, Any] | None]"]


@attrs.define
class _State:
    result: dict[str, Any] | None = None
    answered: bool = False
    at: float = 0.0
    running: Future[None] | None = None
    running_since: float = 0.0
    running_answered: bool = False  # the running query gave its first answer (the log's part)
    complete: bool = False  # ``result`` is the last answer of a query, not an error
    first_answer: threading.Event = attrs.field(factory=threading.Event)


class LogProbes:
    """The last answer of each table's log query, refreshed in the background."""

    def __init__(self, timeout_s: float, max_age_s: float, workers: int = 4) -> None:
        self.timeout_s = timeout_s
        self.max_age_s = max_age_s
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tablelog-ui-log")
        self._states: dict[str, _State] = {}
        self._lock = threading.Lock()

    def start(self, key: str, probe: Probe) -> None:
        """Start a query of ``key``'s log unless a recent answer or a running query exists."""
        with self._lock:
            state = self._states.setdefault(key, _State())
            stale = not state.answered or time.monotonic() - state.at >= self.max_age_s
            if stale and state.running is None:
                state.running_since, state.running_answered = time.monotonic(), False
                state.running = self._executor.submit(self._run, key, state, probe)

    def get(self, key: str, probe: Probe, deadline: float | None = None) -> dict[str, Any] | None:
        """The latest answer for ``key`` (``{"error": ...}`` when the log did not answer in
        time); waits, until ``deadline`` (monotonic; default ``timeout_s`` from now), only
        when nothing is known yet. A query that has not answered ``timeout_s`` after it
        started makes the log unreachable, whatever the previous one answered: a broker
        that went away leaves its client retrying, not failing."""
        self.start(key, probe)
        with self._lock:
            state = self._states[key]
            hanging = (state.running is not None and not state.running_answered
                       and time.monotonic() - state.running_since > self.timeout_s)
            if hanging and state.answered:
                state.result, state.complete = self._no_answer(), False
        if not state.answered:
            wait = (time.monotonic() + self.timeout_s if deadline is None else deadline) - time.monotonic()
            if not state.first_answer.wait(max(wait, 0.0)):
                with self._lock:
                    if not state.answered:
                        state.result = self._no_answer()
                        state.answered, state.at = True, time.monotonic()
        with self._lock:
            return state.result

    def _no_answer(self) -> dict[str, Any]:
        return {"error": f"no answer within {self.timeout_s:g} s"}

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)

    def _run(self, key: str, state: _State, probe: Probe) -> None:
        try:
            answers = probe()
            if isinstance(answers, Iterator):
                last: dict[str, Any] | None = None
                for last in answers:
                    self._publish(state, last, final=False)
                self._publish(state, last, final=True)
            else:
                self._publish(state, answers, final=True)
        except Exception as err:  # noqa: BLE001 -- shown on the page, never raised into a request
            self._publish(state, {"error": f"{type(err).__name__}: {err}"}, final=True)
        finally:
            with self._lock:
                state.running = None

    def _publish(self, state: _State, result: dict[str, Any] | None, *, final: bool) -> None:
        with self._lock:
            if final or not state.complete:
                state.result = result
                state.complete = final and not (result is not None and "error" in result)
            state.answered, state.at, state.running_answered = True, time.monotonic(), True
        state.first_answer.set()
