"""Committers on separate hosts, and the counting that proves a scenario exactly-once:
every commit identifier in one snapshot, snapshot ids without a gap or a repeat, the
table equal to the winners' rows, every committed record read once by a transactional
reader, and pypaimon reading the same rows."""

from __future__ import annotations

import json
import subprocess
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pyarrow as pa

import tablelog
from tablelog.testing.hosts import Host

from .conftest import DRIVERS, Cluster

SCHEMA = pa.schema([("id", pa.int64()), ("who", pa.string()), ("identifier", pa.int64())])
ROWS = 5
#: Timeouts that make a host cut off from S3 fail in seconds, not minutes (a test's).
QUICK_FAILURE = {"s3.connect-timeout": "1 s", "s3.request-timeout": "2 s", "s3.max-attempts": "2"}


def new_table(cluster: Cluster, log: Mapping[str, str] | None = None,
              **extra: str) -> tuple[tablelog.Table, str, dict[str, str]]:
    """A table on the cluster's S3 with its log on the cluster's broker (or the ``log.*``
    options ``log`` gives): the table, its warehouse and the options a committer opens it
    with (the S3 endpoint direct)."""
    warehouse = cluster.s3.url(f"t-{uuid.uuid4().hex[:8]}")
    options = {**cluster.s3.tablelog_options(), "write-only": "true",
               **(log or {"log.system": "kafka", "kafka.bootstrap.servers": cluster.bootstrap})}
    table = tablelog.create_table(warehouse, "db.t", SCHEMA, primary_key=["id"], bucket=2, options=options)
    return table, warehouse, {**options, **QUICK_FAILURE, **extra}


class Program:
    """``drivers/<driver>.py`` running on ``host`` with ``config``; its JSON lines as they come."""

    def __init__(self, host: Host, driver: str, config: Mapping[str, Any]) -> None:
        self.host = host
        self.process = host.start_python(DRIVERS / f"{driver}.py", config,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self._lines: list[dict[str, Any]] = []
        self._errors: list[str] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._error_reader = threading.Thread(target=self._read_errors, daemon=True)
        self._error_reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for text in self.process.stdout:
            with self._lock:
                self._lines.append(json.loads(text))

    def _read_errors(self) -> None:
        assert self.process.stderr is not None
        for text in self.process.stderr:
            self._errors.append(text)

    @property
    def lines(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._lines)

    def wait_for(self, seen: Callable[[dict[str, Any]], bool], timeout_s: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            found = next((line for line in self.lines if seen(line)), None)
            if found is not None:
                return found
            assert self.process.poll() is None or self._reader.is_alive(), self._failure()
            time.sleep(0.02)
        raise AssertionError(f"no such line within {timeout_s} s: {self.lines}; {self._failure()}")

    def finish(self, timeout_s: float = 120) -> list[dict[str, Any]]:
        self.process.wait(timeout=timeout_s)
        self._reader.join(timeout=10)
        self._error_reader.join(timeout=10)
        # Closed here, not left to the garbage collector: a session runs hundreds of these.
        for pipe, reader in ((self.process.stdout, self._reader), (self.process.stderr, self._error_reader)):
            if pipe is not None and not reader.is_alive():
                pipe.close()
        assert self.process.returncode == 0, self._failure()
        return self.lines

    def _failure(self) -> str:
        return f"exit {self.process.poll()}: {''.join(self._errors)[-3000:]}"


def committer(host: Host, config: Mapping[str, Any]) -> Program:
    """``drivers/committer.py`` on ``host``: its outcome lines."""
    return Program(host, "committer", {"rows": ROWS, **config})


def commits(writer: str, identifiers: Iterable[int]) -> list[dict[str, Any]]:
    return [{"writer": writer, "identifier": i} for i in identifiers]


def final_outcomes(lines: list[dict[str, Any]]) -> dict[tuple[str, int], dict[str, Any]]:
    """Each (writer, identifier)'s last line: its answer, with ``unknowns``: how many
    times the committer was told "unknown, retry" before it (its retries)."""
    outcomes: dict[tuple[str, int], dict[str, Any]] = {}
    for line in lines:
        key = (line["writer"], line["identifier"])
        unknowns = outcomes.get(key, {}).get("unknowns", 0) + (line["outcome"] == "unknown")
        outcomes[key] = {**line, "unknowns": unknowns}
    return outcomes


def makers(table: tablelog.Table, writer: str, identifiers: Iterable[int], offsets: Mapping[str, int]) -> dict[int, str]:
    """Who (the rows' ``who``) made the commit of each of ``writer``'s ``identifiers``."""
    who = {r["id"]: r["who"] for r in table.rows().to_pylist()}
    return {i: who[i * ROWS + offsets.get(writer, 0)] for i in identifiers}


def check_answers(outcomes: Mapping[str, Mapping[tuple[str, int], Mapping[str, Any]]],
                  made_by: Mapping[int, str], writer: str) -> None:
    """The committers' answers (``outcomes`` by who) tell the truth: the one that made an
    identifier's commit says ``committed`` — or ``already`` when it had been told
    "unknown, retry" and its retry found that commit — and every other says ``already``."""
    for identifier, maker in made_by.items():
        for who, answers in outcomes.items():
            answer = answers.get((writer, identifier))
            if answer is None:
                continue
            if who != maker:
                assert answer["outcome"] == "already", (identifier, maker, who, answer)
            else:
                assert answer["outcome"] == "committed" or (answer["outcome"] == "already" and answer["unknowns"]), \
                    (identifier, maker, who, answer)


def check_exactly_once(table: tablelog.Table, cluster: Cluster, warehouse: str,
                       expected: Iterable[tuple[str, int]], offsets: Mapping[str, int]) -> None:
    """The counting (module docstring): ``expected`` are the (writer, identifier) pairs that
    must each be in exactly one snapshot, and nothing else."""
    expected = sorted(expected)
    snapshots = list(table.snapshots())
    assert [s.id for s in snapshots] == list(range(1, len(snapshots) + 1))  # none twice, no gap
    appends = [s for s in snapshots if s.commit_kind == "APPEND"]
    assert sorted(Counter((s.commit_user, s.commit_identifier) for s in appends).items()) == [(k, 1) for k in expected]
    rows = table.rows().to_pylist()
    ids = {i * ROWS + offsets.get(w, 0) + r for w, i in expected for r in range(ROWS)}
    assert sorted(r["id"] for r in rows) == sorted(ids)
    who = {r["id"]: r["who"] for r in rows}
    for writer, identifier in expected:  # a commit's rows are one committer's, never a mix
        first = identifier * ROWS + offsets.get(writer, 0)
        assert len({who[i] for i in range(first, first + ROWS)}) == 1
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        changes = reader.read_all()
    assert Counter(c.row["id"] for c in changes) == Counter(r["id"] for r in rows)  # each once
    assert {c.row["id"]: c.row["who"] for c in changes} == {r["id"]: r["who"] for r in rows}
    assert sorted(map(tuple, _pypaimon_rows(cluster, warehouse))) == sorted((r["id"], r["who"]) for r in rows)


def _pypaimon_rows(cluster: Cluster, warehouse: str) -> list[tuple[int, str]]:
    from pypaimon import CatalogFactory

    paimon = CatalogFactory.create({"warehouse": warehouse, **cluster.s3.catalog_options()}).get_table("db.t")
    builder = paimon.new_read_builder()
    read = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    return list(zip(read.column("id").to_pylist(), read.column("who").to_pylist(), strict=True))
