"""The peak resident memory of Spark's Python task workers, sampled from outside: every
process this one started that is a worker forked by a ``pyspark.daemon`` running
``pyspark.worker`` (the module that runs tasks: a Python data source's reads, a
``mapInArrow``), its ``VmHWM`` (the kernel's high-water mark of its resident set, so a
peak between two samples is not missed while the worker lives). Run it in a process whose
Spark session is new: a reused worker's high-water mark includes its earlier tasks."""

from __future__ import annotations

import os
import threading
from typing import Any


def _high_water_kb(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _is_task_worker(process: Any) -> bool:
    try:
        cmdline = process.cmdline()
        parent = process.parent()
        return (len(cmdline) >= 2 and cmdline[-1] == "pyspark.worker" and "pyspark.daemon" in " ".join(cmdline)
                and parent is not None and parent.cmdline() == cmdline)
    except Exception:  # noqa: BLE001 -- the process ended meanwhile
        return False


class TaskMemory:
    """Samples every ``interval_s`` from :meth:`start` to :meth:`stop`; :meth:`peak_mb`
    is the largest high-water mark of a task worker, :attr:`workers` how many were seen."""

    def __init__(self, interval_s: float = 0.1) -> None:
        self._interval_s = interval_s
        self._peaks: dict[int, int] = {}
        self._known: dict[int, bool] = {}  # pid -> whether it is a task worker
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="task-memory")

    def start(self) -> TaskMemory:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._sample()
        self._stop.set()
        self._thread.join(5)

    @property
    def workers(self) -> int:
        return len(self._peaks)

    def peak_mb(self) -> float | None:
        return max(self._peaks.values()) / 1024 if self._peaks else None

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            self._sample()

    def _sample(self) -> None:
        import psutil

        for process in psutil.Process(os.getpid()).children(recursive=True):
            worker = self._known.get(process.pid)
            if worker is None:
                worker = self._known[process.pid] = _is_task_worker(process)
            if worker:
                peak = _high_water_kb(process.pid)
                if peak is not None:
                    self._peaks[process.pid] = max(peak, self._peaks.get(process.pid, 0))
