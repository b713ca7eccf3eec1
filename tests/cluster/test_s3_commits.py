"""Two committers in two processes sharing nothing but the S3 server (and the file log's
directory) commit to one table at the same moment, round after round: on distinct
identifiers both land, on the same identifier (a replay racing the original) exactly one
does; no snapshot id is written twice and every committed row and log record is read."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

import tablelog
from tablelog.table import internals
from tablelog.testing.processes import start_python
from tablelog.testing.s3_server import S3Endpoint
from tablelog.verify import verify

pytestmark = pytest.mark.cluster

DRIVER = Path(__file__).parent / "drivers" / "s3_committer.py"
ROUNDS = 10
SCHEMA = pa.schema([("id", pa.int64()), ("who", pa.string()), ("round", pa.int64())])


def test_two_committer_processes_on_s3_commit_each_identifier_exactly_once(
        s3_server: S3Endpoint, tmp_path: Path) -> None:
    warehouse = s3_server.url(f"race-{uuid.uuid4().hex[:8]}")
    options = {
        "s3.endpoint": s3_server.endpoint, "s3.access-key": s3_server.access_key,
        "s3.secret-key": s3_server.secret_key, "log.system": "filesystem",
        "filesystem.path": str(tmp_path / "log"),
    }
    table = tablelog.create_table(warehouse, "db.race", SCHEMA, primary_key=["id"], bucket=2, options=options)
    sync = tmp_path / "sync"
    sync.mkdir()
    config = {"warehouse": warehouse, "table": "db.race", "options": options, "rounds": ROUNDS, "sync": str(sync)}
    procs = [start_python(DRIVER, {**config, "me": me}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for me in ("A", "B")]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-3000:]
        results.extend(json.loads(out.strip().splitlines()[-1]))

    committed = [r for r in results if r["committed"]]
    # Distinct identifiers: both committers' commits land; the replayed one: exactly one per round.
    assert Counter((r["writer"], r["identifier"]) for r in committed) == {
        **{(f"writer-{me}", i): 1 for me in "AB" for i in range(1, ROUNDS + 1)},
        **{("replayed", i): 1 for i in range(1, ROUNDS + 1)},
    }
    replays = [r for r in results if r["writer"] == "replayed"]
    by_identifier = Counter(r["identifier"] for r in replays)
    assert set(by_identifier.values()) == {2}
    for identifier in range(1, ROUNDS + 1):
        pair = [r for r in replays if r["identifier"] == identifier]
        assert sorted(r["committed"] for r in pair) == [False, True]
        assert len({r["snapshot"] for r in pair}) == 1  # the loser names the winner's snapshot

    # No snapshot id written twice: each commit has its own, the table's snapshots are 1..N
    # without a gap, and besides the commits they hold only the compactions that ran after
    # them (which race the committers too).
    snapshot_ids = [r["snapshot"] for r in committed]
    assert len(set(snapshot_ids)) == len(snapshot_ids) == 3 * ROUNDS
    snapshots = list(table.snapshots())
    assert [s.id for s in snapshots] == list(range(1, len(snapshots) + 1))
    appends = [s for s in snapshots if s.commit_kind != "COMPACT"]
    assert sorted(s.id for s in appends) == sorted(snapshot_ids)
    assert Counter((s.commit_user, s.commit_identifier) for s in appends) == Counter(
        (r["writer"], r["identifier"]) for r in committed)
    for snapshot in appends:
        winner = next(r for r in committed if r["snapshot"] == snapshot.id)
        assert (snapshot.commit_user, snapshot.commit_identifier) == (winner["writer"], winner["identifier"])

    # Every committed row is in the table, and only those: the replay loser's are not.
    rows = table.rows().to_pylist()
    assert len(rows) == sum(r["rows"] for r in committed)
    winners = {r["identifier"]: r["me"] for r in replays if r["committed"]}
    for row in rows:
        if row["id"] >= 1_000_000:
            assert row["who"] == winners[row["round"]]
    # Every committed log record is read once by a transactional reader, and nothing else.
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        changes = reader.read_all()
    assert len(changes) == sum(r["records"] for r in committed)
    assert Counter(c.row["id"] for c in changes) == Counter(r["id"] for r in rows)
    assert verify(table).consistent


class _AnswerLost:
    """The real client, except that the first snapshot put lands and its answer is lost."""

    def __init__(self, client: object) -> None:
        self.client = client
        self.lost = 0

    def __getattr__(self, name: str) -> object:
        return getattr(self.client, name)

    def put_object(self, **request: object) -> object:
        answer = self.client.put_object(**request)  # type: ignore[attr-defined]
        if "/snapshot/snapshot-" in str(request["Key"]) and not self.lost:
            from botocore.exceptions import ReadTimeoutError

            self.lost += 1
            raise ReadTimeoutError(endpoint_url="lost answer")
        return answer


def test_a_commit_whose_answer_is_lost_is_found_by_reading_the_snapshots_again(
        s3_server: S3Endpoint, tmp_path: Path) -> None:
    warehouse = s3_server.url(f"lost-{uuid.uuid4().hex[:8]}")
    options = {"s3.endpoint": s3_server.endpoint, "s3.access-key": s3_server.access_key,
               "s3.secret-key": s3_server.secret_key, "log.system": "filesystem",
               "filesystem.path": str(tmp_path / "log")}
    table = tablelog.create_table(warehouse, "db.t", SCHEMA, primary_key=["id"], options=options)
    internals(table).files.s3_client = faulty = _AnswerLost(internals(table).files.s3_client)
    task = table.write_task("w", 1)
    task.write([{"id": i, "who": "w", "round": 1} for i in range(3)])
    result = table.commit("w", 1, [task.finish()])

    assert faulty.lost == 1
    assert result.snapshot_id == 1
    assert [(s.id, s.commit_user, s.commit_identifier) for s in table.snapshots()] == [(1, "w", 1)]
    assert table.rows().num_rows == 3
