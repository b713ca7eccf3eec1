"""A transactional reader on its own host (tests/hosts): polls a table's changes until it
has ``expect`` of them or ``deadline_s`` passed, going on after a failed poll as a
consumer's loop does, and prints one JSON line per poll that returned something or failed:
``{"t", "ids"}`` or ``{"t", "error"}`` (``t``: seconds since it started), then
``{"done": true}``.

Configuration on standard input: ``warehouse``, ``table``, ``options``, ``expect``,
``deadline_s``.
"""

from __future__ import annotations

import json
import time

import tablelog
from tablelog.testing.processes import child_config


def say(**line: object) -> None:
    print(json.dumps(line), flush=True)


def main() -> None:
    config = child_config()
    table = tablelog.open_table(config["warehouse"], config["table"], config["options"])
    began = time.monotonic()
    seen = 0
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        while seen < int(config["expect"]) and time.monotonic() - began < float(config["deadline_s"]):
            try:
                changes = reader.poll(timeout_s=0.5)
            except Exception as err:  # noqa: BLE001 -- reported; the loop goes on, as a consumer's does
                say(t=time.monotonic() - began, error=f"{type(err).__name__}: {str(err)[:600]}")
                time.sleep(0.5)
                continue
            if changes:
                seen += len(changes)
                say(t=time.monotonic() - began, ids=[c.row["id"] for c in changes])
    say(done=True)


if __name__ == "__main__":
    main()
