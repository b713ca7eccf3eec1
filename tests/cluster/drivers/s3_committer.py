"""One committer process of the S3 commit race (tests/cluster/test_s3_commits.py): it shares
nothing with the other committer but the S3 server (and the file log's directory).

    python s3_committer.py CONFIG_JSON ME ROUNDS SYNC_DIR

Each round, after both committers are ready (files in SYNC_DIR), it commits identifier
round + 1 as its own writer ("distinct"), then the same identifier as the writer both
share ("replay", a replayed batch racing the original). Prints one JSON line of results.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import tablelog
from tablelog.testing.processes import child_config

ROWS = 5


def barrier(sync: Path, name: str, me: str, other: str) -> None:
    (sync / f"{name}.{me}").touch()
    deadline = time.monotonic() + 120
    while not (sync / f"{name}.{other}").exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the other committer never reached {name}")
        time.sleep(0.002)


def commit(table: tablelog.Table, writer: str, identifier: int, ids: range, me: str) -> dict[str, object]:
    task = table.write_task(writer, identifier, task=me)
    task.write([{"id": i, "who": me, "round": identifier} for i in ids])
    result = table.commit(writer, identifier, [task.finish()])
    return {"writer": writer, "identifier": identifier, "snapshot": result.snapshot_id,
            "committed": result.committed, "rows": result.rows, "records": result.records, "me": me}


def main() -> None:
    config = child_config()  # on standard input: the options hold the S3 secret key
    me, rounds, sync = config["me"], int(config["rounds"]), Path(config["sync"])
    other = "B" if me == "A" else "A"
    offset = 0 if me == "A" else 100_000
    table = tablelog.open_table(config["warehouse"], config["table"], config["options"])
    results = []
    for r in range(rounds):
        identifier = r + 1
        barrier(sync, f"distinct-{r}", me, other)
        results.append(commit(table, f"writer-{me}", identifier, range(offset + r * ROWS, offset + (r + 1) * ROWS), me))
        barrier(sync, f"replay-{r}", me, other)
        start = 1_000_000 + r * ROWS
        results.append(commit(table, "replayed", identifier, range(start, start + ROWS), me))
    print(json.dumps(results))


if __name__ == "__main__":
    main()
