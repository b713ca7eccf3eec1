"""Fault injection for tests and demos: the ``testing.*`` options of the Spark sink.

They make a task attempt or the driver fail (or wait) at a chosen stage of a write, so
that the exactly-once scenarios (:mod:`tablelog.testing.spark_scenarios`) and the demo
can show what a retry, a replay or a killed driver leaves behind. The sink knows none of
this: it calls :func:`at` once per stage, which does nothing without ``testing.*`` options.

* ``testing.fail-mid-write = "P"`` or ``"B:P"``: attempt 0 of partition P (in micro-batch
  B) raises after writing its first chunk, before ``finish()``: a task that dies with
  records produced, unflushed.
* ``testing.fail-after-finish = "P"`` or ``"B:P"``: attempt 0 of partition P (in
  micro-batch B) raises after its ``finish()`` made its records durable in the log: a
  task that dies after producing.
* ``testing.pause-mid-write = "B:P:SECONDS"``: attempt 0 of partition P in micro-batch B
  sleeps after writing its first chunk, before ``finish()``, having written where it runs
  (process id, working directory: the executor's) as JSON to the file
  ``testing.paused-task-file`` names (a window for a test to kill the task's host).
* ``testing.pause-after-commit = "B:SECONDS"``: the driver sleeps after committing
  micro-batch B to the table, before Spark records the batch in its commit log (a window
  for a test to kill the driver).
"""

from __future__ import annotations

import enum
import json
import os
import time
from collections.abc import Mapping
from typing import Any

from tablelog.errors import OptionError

#: Options for tests and demos only: they make tasks or the driver fail on purpose.
TESTING_PREFIX = "testing."
FAIL_MID_WRITE = "testing.fail-mid-write"
FAIL_AFTER_FINISH = "testing.fail-after-finish"
PAUSE_MID_WRITE = "testing.pause-mid-write"
PAUSED_TASK_FILE = "testing.paused-task-file"
PAUSE_AFTER_COMMIT = "testing.pause-after-commit"
TESTING_KEYS = frozenset({FAIL_AFTER_FINISH, FAIL_MID_WRITE, PAUSE_MID_WRITE, PAUSED_TASK_FILE, PAUSE_AFTER_COMMIT})


class InjectedFailure(RuntimeError):
    """Raised by a task attempt that a ``testing.fail-*`` option tells to fail."""


class Stage(enum.Enum):
    """Where in a write the sink calls :func:`at`."""

    MID_WRITE = FAIL_MID_WRITE  # a task, after each chunk it wrote (before finish)
    AFTER_FINISH = FAIL_AFTER_FINISH  # a task, after finish() made its records durable
    AFTER_COMMIT = PAUSE_AFTER_COMMIT  # the driver, after the table commit of a micro-batch


def testing_options(raw: Mapping[str, str]) -> dict[str, str]:
    """The ``testing.*`` keys of the (lower-cased) data source options; unknown ones refused."""
    testing = {k: v for k, v in raw.items() if k.startswith(TESTING_PREFIX)}
    unknown = sorted(set(testing) - TESTING_KEYS)
    if unknown:
        raise OptionError(f"unknown testing option(s) {unknown}; known: {sorted(TESTING_KEYS)}")
    return testing


def at(
    testing: Mapping[str, str], stage: Stage, batch_id: int | None, partition: int = 0,
    attempt: int = 0, progress: Any = None,
) -> None:
    """Inject the fault the ``testing`` options ask for at ``stage`` of this task attempt
    (or, ``AFTER_COMMIT``, of the driver's commit of micro-batch ``batch_id``): raise
    :class:`InjectedFailure`, sleep, or, as always without such options, nothing.
    ``progress`` is what the task has done (its ``WriteTask`` mid-write, its
    ``WriteReceipt`` after finish), for the failure's message."""
    if not testing:
        return
    if stage is Stage.MID_WRITE:
        _pause_mid_write(testing, batch_id, partition, attempt)
    spec = testing.get(stage.value)
    if spec is None:
        return
    if stage is Stage.AFTER_COMMIT:
        batch, _, seconds = spec.partition(":")
        if batch_id is not None and int(batch) == batch_id:
            time.sleep(float(seconds))
        return
    if not _selects(spec, batch_id, partition, attempt):
        return
    label = f"{'' if batch_id is None else f'b{batch_id}-'}p{partition}-a{attempt}"
    if stage is Stage.MID_WRITE:
        raise InjectedFailure(
            f"{stage.value}: task attempt {label} fails after producing its first "
            f"{progress.rows} row(s), before finish (token {progress.token})"
        )
    raise InjectedFailure(
        f"{stage.value}: task attempt {label} fails after producing "
        f"{sum(r.count for r in progress.ranges)} records (token {progress.token})"
    )


def _pause_mid_write(testing: Mapping[str, str], batch_id: int | None, partition: int, attempt: int) -> None:
    spec = testing.get(PAUSE_MID_WRITE)
    if spec is None:
        return
    batch, part, seconds = spec.split(":")
    if attempt != 0 or batch_id != int(batch) or partition != int(part):
        return
    marker = testing.get(PAUSED_TASK_FILE)
    if marker:
        with open(marker, "w") as f:
            json.dump({"pid": os.getpid(), "cwd": os.getcwd(), "batch": batch_id, "partition": partition}, f)
    time.sleep(float(seconds))


def _selects(spec: str, batch_id: int | None, partition: int, attempt: int) -> bool:
    """Whether ``spec`` (``"P"`` or ``"B:P"``) names attempt 0 of this task."""
    if attempt != 0:
        return False
    batch, _, part = spec.rpartition(":")
    if batch and (batch_id is None or int(batch) != batch_id):
        return False
    return int(part) == partition
