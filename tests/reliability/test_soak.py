"""Soak: a bounded run of writes with random injected faults — attempts that die
after producing, replayed commits, writer processes killed with SIGKILL, readers
restarted from their saved positions — ending with every committed change seen
exactly once, the table equal to a model of the commits, and ``verify`` consistent.

The short run (a few seconds, filesystem log) is part of the default suite. The
long runs are marked ``slow`` and excluded by default; run them with
``tox -e soak`` or ``pytest -m slow tests/reliability`` (``TABLELOG_SOAK_SECONDS``
sets the duration of each, default 180).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import tablelog
from tablelog.reading import Change, ChangelogReader
from tablelog.testing.scenarios import SCHEMA
from tablelog.verify import verify

KEYS = 400

KILLED_WRITER = textwrap.dedent("""
    import json, os, signal, sys, tablelog
    warehouse, name, commit_id, options = sys.argv[1], sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4])
    data = json.loads(sys.stdin.read())
    table = tablelog.open_table(warehouse, name, options)
    task = table.write_task("soak", commit_id, task="doomed-process")
    task.write([(kind, row) for kind, row in data])
    if commit_id % 2:
        task.finish()  # durable in the log; the receipt never reaches a committer
    os.kill(os.getpid(), signal.SIGKILL)
""")


class Soak:
    def __init__(self, table: tablelog.Table, options: dict[str, str], seed: int):
        self.table = table
        self.options = options
        self.rng = random.Random(seed)
        self.model: dict[int, dict[str, Any]] = {}
        self.commit_id = 0
        self.committed_changes = 0
        self.version = 0
        self.faults: Counter[str] = Counter()
        self.seen: list[Change] = []
        self.reader: ChangelogReader | None = None
        self.saved: str | None = None

    # -- writes --------------------------------------------------------------------

    def _data(self) -> list[tuple[str, dict[str, Any]]]:
        self.version += 1
        keys = self.rng.sample(range(KEYS), self.rng.randint(1, 60))
        out = []
        for key in keys:
            if key in self.model and self.rng.random() < 0.25:
                out.append(("-D", self.model[key]))
            else:
                kind = "+U" if key in self.model else "+I"
                out.append((kind, {"id": key, "name": f"v{self.version}-{key}", "score": float(self.version)}))
        return out

    def _apply(self, data: list[tuple[str, dict[str, Any]]]) -> None:
        for kind, row in data:
            if kind == "-D":
                self.model.pop(row["id"], None)
            else:
                self.model[row["id"]] = row
        self.committed_changes += len(data)

    def _attempt(self, data: list[tuple[str, dict[str, Any]]], task: str) -> Any:
        write = self.table.write_task("soak", self.commit_id, task=task)
        write.write(data)
        return write.finish()

    def step(self) -> None:
        self.commit_id += 1
        data = self._data()
        fault = self.rng.choice(["none", "none", "dying-attempt", "abandoned-attempt", "replayed-commit",
                                 "killed-writer", "reader-restart"])
        if fault == "killed-writer" and self.rng.random() < 0.5:
            fault = "none"  # process starts are slow: keep them rarer
        self.faults[fault] += 1
        if fault == "dying-attempt":  # produced, durable, never committed
            self._attempt(self._data(), "dies")
        elif fault == "abandoned-attempt":  # produced, never flushed, aborted
            task = self.table.write_task("soak", self.commit_id, task="abandoned")
            task.write(self._data())
            task.abort()
        elif fault == "killed-writer":
            self._killed_writer(self._data())
        receipt = self._attempt(data, "final")
        result = self.table.commit("soak", self.commit_id, [receipt])
        assert result.committed
        self._apply(data)
        if fault == "replayed-commit":  # the committer crashed after the snapshot and retries
            again = self.table.commit("soak", self.commit_id, [self._attempt(self._data(), "replay")])
            assert not again.committed and again.snapshot_id == result.snapshot_id
        self.read(restart=fault == "reader-restart")

    def _killed_writer(self, data: list[tuple[str, dict[str, Any]]]) -> None:
        import json

        proc = subprocess.run(
            [sys.executable, "-c", KILLED_WRITER, self.table.warehouse.path, self.table.identifier,
             str(self.commit_id), json.dumps(self.options)],
            input=json.dumps(data), capture_output=True, text=True, timeout=60,
        )
        assert proc.returncode == -signal.SIGKILL, proc.stderr

    # -- the reader ----------------------------------------------------------------

    def read(self, restart: bool = False, drain: bool = False) -> None:
        if restart and self.reader is not None:
            self.reader.close()
            self.reader = None
        if self.reader is None:
            self.reader = (self.table.reader(position=self.saved) if self.saved
                           else self.table.reader(consistency="transactional", scan_mode="earliest"))
        while True:
            batch = self.reader.poll(max_records=self.rng.randint(1, 80), timeout_s=0.0)
            self.seen += batch
            self.saved = self.reader.position.to_json()
            if not batch or not drain and self.rng.random() < 0.5:
                break

    def finish(self) -> None:
        self.read(restart=True, drain=True)
        assert self.reader is not None
        self.reader.close()

    def check(self) -> None:
        table_rows = {r["id"]: r for r in self.table.rows().to_pylist()}
        assert table_rows == self.model
        assert len(self.seen) == self.committed_changes, self.faults  # each committed change once
        replayed: dict[int, dict[str, Any]] = {}
        for change in self.seen:
            if change.kind.is_retraction:
                replayed.pop(change.row["id"], None)
            else:
                replayed[change.row["id"]] = change.row
        assert replayed == self.model
        report = verify(self.table)
        assert report.consistent, report.summary()


def run_soak(tmp_path: Path, options: dict[str, str], seconds: float, seed: int,
             min_faults: tuple[str, ...] = ()) -> Soak:
    table = tablelog.create_table(str(tmp_path / "wh"), "db.soak", SCHEMA, primary_key=["id"], bucket=2,
                                  options=options)
    soak = Soak(table, options, seed)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline or any(soak.faults[f] == 0 for f in min_faults):
        soak.step()
        assert soak.commit_id < 10_000
    soak.finish()
    soak.check()
    print(f"soak: {soak.commit_id} commits, {soak.committed_changes} changes, faults {dict(soak.faults)}")
    return soak


def test_short_soak_with_random_faults_ends_exactly_once_and_consistent(tmp_path: Path) -> None:
    soak = run_soak(tmp_path, {"log.system": "filesystem"}, seconds=8, seed=20_241,
                    min_faults=("dying-attempt", "abandoned-attempt", "replayed-commit", "killed-writer",
                                "reader-restart"))
    assert soak.commit_id >= 10


SOAK_SECONDS = float(os.environ.get("TABLELOG_SOAK_SECONDS", "180"))


@pytest.mark.slow
@pytest.mark.timeout(SOAK_SECONDS * 3 + 120)
@pytest.mark.parametrize("system", ["filesystem", "kafka", "pulsar"])
def test_long_soak_with_random_faults_ends_exactly_once_and_consistent(
    tmp_path: Path, request: pytest.FixtureRequest, system: str
) -> None:
    if system == "filesystem":
        options = {"log.system": "filesystem"}
    elif system == "kafka":
        options = {"log.system": "kafka", "kafka.bootstrap.servers": request.getfixturevalue("tansu").bootstrap}
    else:
        options = {"log.system": "pulsar",
                   "pulsar.service-url": request.getfixturevalue("pulsar_broker").service_url}
    seed = int(os.environ.get("TABLELOG_SOAK_SEED", str(int(time.time()))))
    print(f"soak seed {seed} (TABLELOG_SOAK_SEED={seed} repeats this run)")
    run_soak(tmp_path, options, seconds=SOAK_SECONDS, seed=seed)
