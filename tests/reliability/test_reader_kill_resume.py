"""A reader process killed with SIGKILL and restarted from its saved position: no
gap, no duplicate (transactional). The reader follows the documented pattern
(docs/reliability.md): each poll's output and the position after it are written
together, as one file, with an atomic rename; a restarted reader resumes from the
position in the newest file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import textwrap
import time
from collections import Counter
from pathlib import Path

import pytest

import tablelog
from tablelog.testing.processes import start_python
from tablelog.testing.scenarios import SCHEMA, rows

COMMITS, ROWS = 12, 100

READER = textwrap.dedent("""
    import json, os, tablelog
    from tablelog.testing.processes import child_config
    config = child_config()  # on standard input: table options may hold secrets
    warehouse, name, out_dir, expected = config["warehouse"], config["table"], config["out"], config["expected"]
    options = config["options"]
    files = sorted(f for f in os.listdir(out_dir) if f.endswith(".json"))
    position, seen, seq = None, 0, 0
    for f in files:  # only complete files exist: each was renamed into place whole
        with open(os.path.join(out_dir, f)) as handle:
            doc = json.load(handle)
        position, seen, seq = doc["position"], seen + len(doc["changes"]), int(f[:8]) + 1
    table = tablelog.open_table(warehouse, name, options)
    reader = (table.reader(position=position) if position
              else table.reader(consistency="transactional", scan_mode="earliest"))
    with reader:
        while seen < expected:
            batch = reader.poll(max_records=37, timeout_s=0.5)
            if not batch:
                continue
            doc = {"changes": [[c.kind.value, c.row["id"], c.snapshot_id] for c in batch],
                   "position": reader.position.to_json()}
            tmp = os.path.join(out_dir, f"{seq:08d}.tmp")
            with open(tmp, "w") as handle:
                json.dump(doc, handle)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, os.path.join(out_dir, f"{seq:08d}.json"))  # output + position, atomically
            seq, seen = seq + 1, seen + len(batch)
""")


def _outputs(out_dir: Path) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(p.read_text()) for p in sorted(out_dir.glob("*.json"))]


@pytest.fixture(params=["filesystem", "kafka"])
def log_options(request: pytest.FixtureRequest) -> dict[str, str]:
    if request.param == "filesystem":
        return {"log.system": "filesystem"}
    broker = request.getfixturevalue("tansu")
    return {"log.system": "kafka", "kafka.bootstrap.servers": broker.bootstrap}


def test_reader_killed_with_sigkill_resumes_from_its_saved_position_with_no_gap_and_no_duplicate(
    tmp_path: Path, log_options: dict[str, str]
) -> None:
    warehouse = str(tmp_path / "wh")
    table = tablelog.create_table(warehouse, "db.followed", SCHEMA, primary_key=["id"], bucket=2,
                                  options=log_options)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    expected = COMMITS * ROWS

    def start() -> subprocess.Popen[str]:
        config = {"warehouse": warehouse, "table": "db.followed", "out": str(out_dir), "expected": expected,
                  "options": log_options}
        return start_python(READER, config, stderr=subprocess.PIPE, text=True)

    kills = 0
    reader = start()
    try:
        with table.writer("w") as writer:
            for commit in range(COMMITS):
                writer.write(rows(ROWS, start=commit * ROWS))
                files = len(list(out_dir.glob("*.json")))  # before the commit: the reader may be quick
                writer.commit()
                # Kill the reader mid-stream, once it has saved something of this commit; not
                # after the last commit, where a quick reader may already have finished.
                if commit % 4 == 3 and commit < COMMITS - 1:
                    deadline = time.monotonic() + 30
                    while len(list(out_dir.glob("*.json"))) == files and time.monotonic() < deadline:
                        assert reader.poll() is None, reader.stderr.read() if reader.stderr else ""
                        time.sleep(0.02)
                    os.kill(reader.pid, signal.SIGKILL)
                    reader.wait(timeout=10)
                    kills += 1
                    reader = start()
        _, err = reader.communicate(timeout=60)
        assert reader.returncode == 0, err
    finally:
        if reader.poll() is None:
            reader.kill()
            reader.wait(timeout=10)
    assert kills == (COMMITS - 1) // 4
    # a *.tmp left by a killed reader is never read: only renamed (complete) files count
    changes = [c for doc in _outputs(out_dir) for c in doc["changes"]]
    assert Counter(c[1] for c in changes) == Counter(range(expected))  # no gap, no duplicate
    snapshots = [c[2] for c in changes]
    assert snapshots == sorted(snapshots)  # in commit order
