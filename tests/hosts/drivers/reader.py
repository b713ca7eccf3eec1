"""A transactional reader on its own host (tests/hosts): polls a table's changes until it
has ``expect`` of them or ``deadline_s`` passed, going on after a failed poll as a
consumer's loop does, and prints one JSON line per poll that returned something, failed
or took longer than :data:`SLOW_POLL_S`: ``{"t", "poll_s", "ids"}`` or ``{"t", "poll_s",
"error"}`` (``t``: seconds since it started, ``poll_s``: how long the poll took), then
``{"done": true}``.

Configuration on standard input: ``warehouse``, ``table``, ``options``, ``expect``,
``deadline_s``.
"""

from __future__ import annotations

import json
import time

import tablelog
from tablelog.testing.processes import child_config

#: A poll that took longer than this (for 0.5 s asked) is reported even when it returned nothing.
SLOW_POLL_S = 1.0


def say(**line: object) -> None:
    print(json.dumps(line), flush=True)


def main() -> None:
    config = child_config()
    table = tablelog.open_table(config["warehouse"], config["table"], config["options"])
    began = time.monotonic()
    seen = 0
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        while seen < int(config["expect"]) and time.monotonic() - began < float(config["deadline_s"]):
            polled = time.monotonic()
            try:
                changes = reader.poll(timeout_s=0.5)
            except Exception as err:  # noqa: BLE001 -- reported; the loop goes on, as a consumer's does
                say(t=time.monotonic() - began, poll_s=time.monotonic() - polled,
                    error=f"{type(err).__name__}: {str(err)[:600]}")
                time.sleep(0.5)
                continue
            if changes or time.monotonic() - polled > SLOW_POLL_S:
                seen += len(changes)
                say(t=time.monotonic() - began, poll_s=time.monotonic() - polled, ids=[c.row["id"] for c in changes])
    say(done=True)


if __name__ == "__main__":
    main()
