"""A committer on its own host (tests/hosts): makes its commits one after another and
prints one JSON line per outcome as it happens.

Configuration on standard input (the options hold the S3 secret): ``warehouse``,
``table``, ``options``, ``who`` (written into each row), ``rows`` per commit,
``commits``: a list of ``{"writer", "identifier"}``, whose rows have the ids
``identifier * rows + offset ..`` (``offset``: per writer, ``offsets[writer]``, default 0),
``pause_s`` between commits (default none), and ``retry_unknown_s``: a commit whose outcome
is unknown (CommitOutcomeUnknown) or that committed nothing (another CommitError: the store
could not be reached) is retried with the same identifier every that many seconds, as a
user is told to, until it has an answer or ``give_up_s`` passed.

A line: ``{"writer", "identifier", "outcome": "committed" | "already" | "unknown" |
"not committed" | "log failed" | "error" | "write failed", "snapshot", "seconds", "error"}``;
a failed write attempt is given up and made again (at most ``write_attempts``, default
:data:`WRITE_ATTEMPTS`), as Spark runs a failed task again; a commit the log failed (its
records gone with a broker that lost them) is written again (at most :data:`REPLAYS`), as
Spark replays a micro-batch whose commit failed.
"""

from __future__ import annotations

import json
import time
from typing import Any

import tablelog
from tablelog.errors import CommitError, CommitOutcomeUnknown, LogSystemError
from tablelog.testing.processes import child_config

#: Attempts of one commit's write before the driver gives up.
WRITE_ATTEMPTS = 3
#: Writes of one commit whose records the log lost before it committed, before the driver gives up.
REPLAYS = 3


def say(**line: object) -> None:
    print(json.dumps(line), flush=True)


def write(table: tablelog.Table, config: dict[str, Any], writer: str, identifier: int, who: str,
          first: int, rows: int, replay: int) -> Any:
    """The receipt of a write attempt, made again after each failure (None: every one failed)."""
    for attempt in range(int(config.get("write_attempts", WRITE_ATTEMPTS))):  # as Spark runs a failed task again
        task = table.write_task(writer, identifier, task=f"{who}-{replay}-{attempt}")
        began = time.monotonic()
        try:
            task.write([{"id": i, "who": who, "identifier": identifier} for i in range(first, first + rows)])
            return task.finish()
        except Exception as err:  # noqa: BLE001 -- reported; the attempt is given up and made again
            task.abort()
            say(writer=writer, identifier=identifier, outcome="write failed", seconds=time.monotonic() - began,
                error=f"{type(err).__name__}: {str(err)[:800]}")
    return None


def commit(table: tablelog.Table, config: dict[str, Any], writer: str, identifier: int, receipt: Any) -> str:
    """Commit until answered: ``"answered"``, ``"write again"`` (the log no longer has the
    attempt's records, as after a broker that lost them: Spark replays the micro-batch), or
    ``"stop"``."""
    began = time.monotonic()
    while True:
        line = {"writer": writer, "identifier": identifier}
        try:
            result = table.commit(writer, identifier, [receipt])
        except CommitError as err:  # unknown, or nothing committed: either way the retry commits it once
            outcome = "unknown" if isinstance(err, CommitOutcomeUnknown) else "not committed"
            say(**line, outcome=outcome, seconds=time.monotonic() - began, error=str(err)[:800])
            if time.monotonic() - began > float(config.get("give_up_s", 120)):
                return "stop"
            time.sleep(float(config.get("retry_unknown_s", 1.0)))
            continue
        except LogSystemError as err:
            say(**line, outcome="log failed", seconds=time.monotonic() - began,
                error=f"{type(err).__name__}: {str(err)[:800]}")
            return "write again"
        except Exception as err:  # noqa: BLE001 -- reported to the test, which judges it
            say(**line, outcome="error", seconds=time.monotonic() - began,
                error=f"{type(err).__name__}: {str(err)[:800]}")
            return "stop"
        say(**line, outcome="committed" if result.committed else "already", snapshot=result.snapshot_id,
            seconds=time.monotonic() - began, records=result.records)
        return "answered"


def main() -> None:
    config = child_config()
    table = tablelog.open_table(config["warehouse"], config["table"], config["options"])
    rows, who, offsets = int(config["rows"]), config["who"], config.get("offsets", {})
    for planned in config["commits"]:
        writer, identifier = planned["writer"], int(planned["identifier"])
        first = identifier * rows + int(offsets.get(writer, 0))
        for replay in range(REPLAYS):
            receipt = write(table, config, writer, identifier, who, first, rows, replay)
            outcome = "stop" if receipt is None else commit(table, config, writer, identifier, receipt)
            if outcome != "write again":
                break
        if outcome != "answered":
            return
        time.sleep(float(config.get("pause_s", 0)))


if __name__ == "__main__":
    main()
