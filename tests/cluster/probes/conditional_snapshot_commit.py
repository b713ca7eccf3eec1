"""Probe (issue #15, fact b, the proposed design): pypaimon's ``SnapshotCommit`` replaced by
one that creates ``snapshot/snapshot-N`` with a conditional put (``If-None-Match: *``), and
two processes committing to one primary-key table on SeaweedFS at the same time.

Each process commits COMMITS times. Scenarios:

- ``distinct``: two committers (own commit users), distinct identifiers: every commit must
  land exactly once, snapshot ids 1..2*COMMITS, no commit lost;
- ``replay``: the same commit user and the same identifiers in both (a replayed batch
  racing a zombie driver): every identifier must be committed exactly once.

Each scenario runs with pypaimon's own ``RenamingSnapshotCommit`` (exists? -> temp file ->
move) and with the conditional commit.

    python tests/cluster/probes/conditional_snapshot_commit.py [COMMITS]
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pyarrow as pa

from tablelog.testing.s3_server import S3Endpoint, seaweedfs

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("who", pa.string()), ("n", pa.int64())])


class ConditionalPutSnapshotCommit:
    """A pypaimon ``SnapshotCommit`` for object stores: snapshot ``expected_id`` (the one after
    the latest snapshot the caller checked for its commit identifier) is created only if no
    object has its name (``If-None-Match: *``). Any other outcome returns False, and with
    ``commit_max_retries = 0`` pypaimon raises at once: the caller re-reads, re-checks its
    identifier in the snapshots it has not seen, and tries the next id."""

    def __init__(self, snapshot_manager: Any, s3: S3Endpoint, expected_id: int) -> None:
        self.snapshot_manager = snapshot_manager
        self.client = s3.client()
        self.expected_id = expected_id

    def commit(self, base_snapshot_uuid: Any, snapshot: Any, statistics: Any) -> bool:
        from botocore.exceptions import ClientError
        from pypaimon.common.json_util import JSON

        if snapshot.id != self.expected_id:
            # FileStoreCommit re-read the latest snapshot and found one newer than the caller
            # checked for its commit identifier: give up, the caller checks again.
            return False
        url = urlparse(self.snapshot_manager.get_snapshot_path(snapshot.id))
        try:
            self.client.put_object(Bucket=url.netloc, Key=url.path.lstrip("/"),
                                   Body=JSON.to_json(snapshot, indent=2).encode(), IfNoneMatch="*")
        except ClientError as exc:
            # 412: another committer created snapshot N; 409 (AWS): a concurrent conditional
            # write to the same key is in flight. Either way this attempt did not create it.
            if exc.response.get("Error", {}).get("Code") in ("PreconditionFailed", "ConditionalRequestConflict"):
                return False
            raise
        # A hint only: readers check hint + 1 and list the directory when it is stale.
        with contextlib.suppress(Exception):
            self.snapshot_manager.file_io.overwrite_file_utf8(self.snapshot_manager.latest_file, str(snapshot.id))
        return True

    def close(self) -> None:
        pass

    def __enter__(self) -> ConditionalPutSnapshotCommit:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_table(s3: S3Endpoint, warehouse: str) -> Any:
    from pypaimon import CatalogFactory

    return CatalogFactory.create({"warehouse": warehouse, **s3.catalog_options()}).get_table("db.t")


def committer(s3: S3Endpoint, warehouse: str, me: str, user: str, commits: int, conditional: bool,
              barrier: Any, results: Any) -> None:
    outcome: list[tuple[str, int, str]] = []
    try:
        commit_all(s3, warehouse, me, user, commits, conditional, barrier, outcome)
    except Exception as exc:  # reported, so that the parent never waits for a dead committer
        outcome.append((me, 0, f"{type(exc).__name__}: {str(exc)[:200]}"))
    results.put(outcome)


def find_commit(table: Any, user: str, identifier: int, after: int) -> tuple[int | None, int]:
    """(the snapshot id after ``after`` holding this commit, or None; the latest id)."""
    manager = table.snapshot_manager()
    latest = manager.get_latest_snapshot()
    latest_id = latest.id if latest else 0
    for snapshot_id in range(after + 1, latest_id + 1):
        snapshot = manager.get_snapshot_by_id(snapshot_id)
        if snapshot.commit_user == user and snapshot.commit_identifier == identifier:
            return snapshot_id, latest_id
    return None, latest_id


def commit_once(s3: S3Endpoint, table: Any, builder: Any, messages: Any, user: str, identifier: int,
                conditional: bool) -> str:
    """tablelog's "check the identifier, then commit", without a lock."""
    checked = 0
    for attempt in range(100):
        found, latest_id = find_commit(table, user, identifier, checked)
        if found is not None:
            return f"already in snapshot (attempt {attempt})"
        checked = latest_id
        commit = builder.new_commit()
        if conditional:
            commit.file_store_commit.snapshot_commit = ConditionalPutSnapshotCommit(
                table.snapshot_manager(), s3, expected_id=latest_id + 1)
            commit.file_store_commit.commit_max_retries = 0
        try:
            commit.commit(messages, identifier)
            return "committed"
        except RuntimeError:
            continue  # lost the race for this id: check again
        finally:
            commit.close()
    return "gave up"


def commit_all(s3: S3Endpoint, warehouse: str, me: str, user: str, commits: int, conditional: bool,
               barrier: Any, outcome: list[tuple[str, int, str]]) -> None:
    table = open_table(s3, warehouse)
    barrier.wait()
    for i in range(commits):
        builder = table.new_stream_write_builder()._with_commit_user(user)  # as tablelog does
        write = builder.new_write()
        write.write_arrow(pa.table({"id": [hash((me, i)) % 10**9], "who": [me], "n": [i]}, schema=SCHEMA))
        messages = write.prepare_commit(i + 1)
        try:
            outcome.append((me, i + 1, commit_once(s3, table, builder, messages, user, i + 1, conditional)))
        except Exception as exc:
            outcome.append((me, i + 1, f"{type(exc).__name__}: {str(exc)[:120]}"))
        finally:
            write.close()


def scenario(s3: S3Endpoint, name: str, commits: int, conditional: bool) -> None:
    from pypaimon import CatalogFactory, Schema

    warehouse = s3.url(f"{name}-{'conditional' if conditional else 'renaming'}")
    catalog = CatalogFactory.create({"warehouse": warehouse, **s3.catalog_options()})
    catalog.create_database("db", True)
    catalog.create_table("db.t", Schema.from_pyarrow_schema(SCHEMA, primary_keys=["id"], options={"bucket": "1"}),
                         False)
    users = ("user-A", "user-B") if name == "distinct" else ("user-X", "user-X")
    barrier, results = mp.Barrier(2), mp.Queue()
    procs = [mp.Process(target=committer, args=(s3, warehouse, me, user, commits, conditional, barrier, results))
             for me, user in zip(("A", "B"), users, strict=True)]
    started = time.monotonic()
    for p in procs:
        p.start()
    outcomes = [o for _ in procs for o in results.get(timeout=600)]
    for p in procs:
        p.join(timeout=30)
    elapsed = time.monotonic() - started
    table = open_table(s3, warehouse)
    snapshots = table.snapshot_manager().list_snapshots()
    ids = sorted(s.id for s in snapshots)
    per_commit = Counter((s.commit_user, s.commit_identifier) for s in snapshots)
    errors = Counter(o[2].split(" (")[0] for o in outcomes)
    read = table.new_read_builder()
    rows = read.new_read().to_arrow(read.new_scan().plan().splits()).num_rows
    expected = 2 * commits if name == "distinct" else commits
    print(f"{name:<9} {'conditional' if conditional else 'renaming':<12} {elapsed:5.1f}s  snapshots {len(ids)} "
          f"(ids {'1..' + str(ids[-1]) if ids else '-'}, contiguous {ids == list(range(1, len(ids) + 1))}), "
          f"expected {expected}; (user, identifier) committed more than once: "
          f"{sum(1 for c in per_commit.values() if c > 1)}; rows {rows}; committer outcomes {dict(errors)}",
          flush=True)


def main(commits: int) -> None:
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp, seaweedfs(Path(tmp)) as s3:
        for name in ("distinct", "replay"):
            for conditional in (False, True):
                scenario(s3, name, commits, conditional)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 15)
