"""The table's log commits: its snapshots, each with what it committed to the log.

Every question about past commits (did this writer commit this identifier, which
identifier did it commit last, where did the log end at the last commit, what does
``describe`` show) walks the snapshots with :func:`snapshot_commits` or
:func:`log_commits`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from tablelog.commit.log_commit import LogCommitRecord, is_foreign

if TYPE_CHECKING:
    from tablelog.store import SnapshotInfo, TableFiles


def snapshot_commits(
    store: TableFiles, *, newest_first: bool = False, after: int = 0, upto: int | None = None,
    latest: SnapshotInfo | None = None,
) -> Iterator[tuple[SnapshotInfo, LogCommitRecord | None]]:
    """Every snapshot of the table (with ``after``/``upto``: those with ``after < id <= upto``),
    with its log part (None: a snapshot tablelog did not write, such as a compaction).
    ``latest``: the latest snapshot, read by the caller (None: read here)."""
    for snapshot in store.snapshots(newest_first, after=after, upto=upto, latest=latest):
        yield snapshot, LogCommitRecord.from_properties(snapshot.properties)


def log_commits(
    store: TableFiles, *, newest_first: bool = False, after: int = 0, upto: int | None = None,
    latest: SnapshotInfo | None = None,
) -> Iterator[tuple[SnapshotInfo, LogCommitRecord]]:
    """The snapshots tablelog committed, with their log part (``after``, ``upto``,
    ``latest``: as :func:`snapshot_commits`)."""
    for snapshot, record in snapshot_commits(store, newest_first=newest_first, after=after, upto=upto, latest=latest):
        if record is not None:
            yield snapshot, record


def find_commit(store: TableFiles, writer_id: str, commit_identifier: int) -> SnapshotInfo | None:
    """The snapshot in which ``writer_id`` committed ``commit_identifier``, if any."""
    for snapshot, record in log_commits(store, newest_first=True):
        if record.writer != writer_id:
            continue
        if record.commit_identifier == commit_identifier:
            return snapshot
        if record.commit_identifier < commit_identifier:
            return None  # a writer's identifiers only grow
    return None


def is_commit_of(snapshot: SnapshotInfo, writer_id: str, commit_identifier: int) -> bool:
    """Whether ``snapshot`` is the commit of ``commit_identifier`` by ``writer_id``."""
    record = LogCommitRecord.from_properties(snapshot.properties)
    return record is not None and record.writer == writer_id and record.commit_identifier == commit_identifier


def find_commit_or_expired(
    store: TableFiles, writer_id: str, commit_identifier: int, *, latest: SnapshotInfo | None = None,
) -> tuple[SnapshotInfo | None, bool]:
    """:func:`find_commit`, and whether ``writer_id`` committed ``commit_identifier`` in a
    snapshot that has expired since: ``(snapshot, False)``, ``(None, True)`` or ``(None,
    False)`` (never committed). A writer's identifiers only grow, so a kept snapshot of a
    larger identifier of it, with older snapshots gone, means this one was committed before
    them (Paimon's rule too). One walk; once every snapshot of a writer has expired, nothing
    is known of it any more. ``latest``: the latest snapshot, read by the caller (None: read here)."""
    seen_larger = False
    for snapshot, record in log_commits(store, newest_first=True, latest=latest):
        if record.writer != writer_id:
            continue
        if record.commit_identifier == commit_identifier:
            return snapshot, False
        if record.commit_identifier < commit_identifier:
            return None, False
        seen_larger = True
    if not seen_larger:
        return None, False
    earliest = store.earliest_snapshot_id()
    return None, earliest is not None and earliest > 1


def is_replay(store: TableFiles, writer_id: str, commit_identifier: int) -> bool:
    """Whether ``writer_id`` committed ``commit_identifier`` already (its snapshot kept or
    expired): an attempt writing it is a replay (a Spark micro-batch replayed after its
    driver died) whose commit commits nothing. A merged-changelog attempt then produces no
    changes: computed against a table that holds its records already, they would count
    them twice (an aggregation's sums)."""
    existing, expired = find_commit_or_expired(store, writer_id, commit_identifier)
    return existing is not None or expired


def last_commit_identifier(store: TableFiles, writer_id: str) -> int | None:
    """The newest commit identifier ``writer_id`` committed (None: none)."""
    for _, record in log_commits(store, newest_first=True):
        if record.writer == writer_id:
            return record.commit_identifier
    return None


def last_end_positions(
    store: TableFiles, system: str, topic: str, upto: int | None = None, *, latest: SnapshotInfo | None = None,
) -> dict[int, int]:
    """The end positions of log ``system`` topic ``topic`` the newest log commit recorded (with
    ``upto``: the newest up to that snapshot); empty when there is none, or when that commit
    is of another log (the table's log was attached or moved since: positions of another
    log say nothing of this one). ``latest``: the latest snapshot, read by the caller."""
    for _, record in log_commits(store, newest_first=True, upto=upto, latest=latest):
        return dict(record.end_positions) if record.is_of(system, topic) else {}
    return {}


#: What :func:`written_by` calls a snapshot with no log-commit record that changed rows.
ANOTHER_WRITER = "another writer"


def written_by(snapshot: SnapshotInfo, record: LogCommitRecord | None) -> str | None:
    """Who committed ``snapshot``, as the tools that list snapshots say it: ``"tablelog"``;
    ``"relay"`` (a relay's copy of other writers' commits in the log); :data:`ANOTHER_WRITER`
    (no log-commit record: pypaimon directly, a Java engine, a procedure; readers take its
    changes from the table files); None: a snapshot that changed no row (a compaction)."""
    if record is not None:
        return "relay" if record.relayed_snapshots else "tablelog"
    return ANOTHER_WRITER if is_foreign(snapshot.properties, snapshot.commit_kind) else None
