"""The commit of a compaction's rewrites: one ``COMPACT`` snapshot, each pair dropped alone
when it lost a race.

A compaction reads its pairs at snapshot S and commits "delete S's files of the pair,
add the new ones". Before each attempt at the commit it drops, per (partition, bucket):

- a pair whose old files are not all in the latest snapshot any more (another
  compaction rewrote them, an overwrite removed them);
- a pair another ``COMPACT`` or ``OVERWRITE`` snapshot changed since S, as those
  snapshots' delta manifests say (so Java's, Flink's and every other engine's count,
  not only tablelog's): two compactions of one pair from different snapshots may rewrite
  different runs, and Paimon's levels must not get two runs of overlapping keys at one
  level. Compactions of one bucket number in two partitions never conflict.

A dropped pair's new files are deleted; the others commit. Writers' ``APPEND`` snapshots
never conflict (they only add files). The snapshot itself is serialized with writers'
commits as theirs are: under the table's commit lock (local warehouse), or by creating the
snapshot file conditionally and trying the next id after losing the race (object store).
"""

from __future__ import annotations

import json
import logging
import random
import time
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs

from tablelog.errors import CommitError

if TYPE_CHECKING:
    from tablelog.store import TableFiles
    from tablelog.store.compaction import BucketFiles, TableCompactions
    from tablelog.table_view import TableView

logger = logging.getLogger("tablelog.compaction")

#: A table partition's values and a bucket number.
Pair = tuple[tuple[Any, ...], int]

#: The snapshot property that names the buckets a compaction rewrote (bucket numbers, as
#: tablelog versions before per-pair conflicts read it; the pairs are in its delta manifests).
P_COMPACTED = "tablelog.compacted-buckets"
#: How long a compaction on an object store keeps trying for a snapshot id that writers
#: keep taking first.
COMMIT_DEADLINE_S = 120.0
#: The snapshot kinds whose changes to a pair make a compaction of it from before them lose.
_REWRITING_KINDS = ("COMPACT", "OVERWRITE")


@attrs.frozen
class PairTask:
    """The rewrite of one (partition, bucket) planned at a snapshot: its files to rewrite
    (as of ``files.snapshot_id``) into one run at ``output_level``; ``drop_deletes`` when
    they are all the pair has. Picklable: a distributed job's task input."""

    files: BucketFiles
    output_level: int
    drop_deletes: bool

    @property
    def pair(self) -> Pair:
        return (tuple(self.files.partition), int(self.files.bucket))


@attrs.frozen
class PairRewrite:
    """A pair's rewritten files, not committed yet (``new_files``: pypaimon
    ``DataFileMeta``, picklable): a distributed job's task output."""

    task: PairTask
    new_files: tuple[Any, ...]
    #: The rewrite's wall time, where it ran (a Spark task's, in a distributed job).
    seconds: float = 0.0


@attrs.frozen
class CompactionResult:
    """What a compaction did: the snapshot it committed (None: none), its pairs, the pairs
    dropped for losing a race, and the files before and after."""

    table: str
    snapshot_id: int | None
    buckets: tuple[int, ...] = ()
    files_before: int = 0
    files_after: int = 0
    #: Why nothing was committed, when nothing was.
    skipped: str | None = None
    pairs: tuple[Pair, ...] = ()
    #: Pairs rewritten but not committed: another compaction or an overwrite changed them first.
    dropped: tuple[Pair, ...] = ()
    #: The committed pairs' rewrites' wall times, summed: on a cluster, the tasks' work
    #: (the job's wall time adds the planning, the scheduling and the commit).
    rewrite_seconds: float = 0.0
    #: The whole compaction's wall time: the planning, the rewrites and the commit (0: not taken).
    seconds: float = 0.0

    def summary(self) -> str:
        lost = f"; {len(self.dropped)} pair(s) lost to another compaction ({_shown(self.dropped)})" if self.dropped else ""
        if self.snapshot_id is None:
            return f"table {self.table}: nothing compacted ({self.skipped}){lost}"
        took = f" in {self.seconds:.2f} s" if self.seconds else ""
        return (
            f"table {self.table}: compacted {_shown(self.pairs)} in snapshot {self.snapshot_id}: "
            f"{self.files_before} files -> {self.files_after}{took}{lost}"
        )


def _shown(pairs: Sequence[Pair]) -> str:
    if all(not partition for partition, _ in pairs):
        return "bucket(s) " + ", ".join(str(bucket) for _, bucket in sorted(pairs, key=lambda p: p[1]))
    return ", ".join(f"partition {'/'.join(map(str, partition))} bucket {bucket}" for partition, bucket in pairs)


def commit_rewrites(table: TableView, base: int, rewrites: Sequence[PairRewrite]) -> CompactionResult:
    """Commit ``rewrites`` (of pairs planned at snapshot ``base``) as one ``COMPACT``
    snapshot, dropping (and deleting the files of) each pair that lost a race. Raises
    :class:`CommitError` when the commit fails otherwise; nothing is committed then and
    every new file is deleted."""
    store = table.files
    operations = store.compactions()
    user = f"tablelog-compaction-{uuid.uuid4()}"
    attempt = _Attempt(store, operations, base, list(rewrites), user)
    try:
        snapshot_id = attempt.run()
    except BaseException as err:
        snapshot_id = _committed_by(store, user, base)
        if snapshot_id is None:
            attempt.discard(attempt.pending)
            if isinstance(err, Exception):
                raise CommitError(
                    f"table {table.identifier!r}: compaction of {_shown([r.task.pair for r in rewrites])} failed, "
                    f"nothing committed: {err}"
                ) from err
            raise
    dropped = tuple(r.task.pair for r in attempt.dropped)
    if snapshot_id is None:
        why = "another compaction rewrote these files first (nothing committed)" if dropped else "nothing to commit"
        return CompactionResult(table.identifier, None, skipped=why, dropped=dropped)
    kept = attempt.pending
    return CompactionResult(
        table.identifier, snapshot_id, tuple(sorted({r.task.pair[1] for r in kept})),
        sum(len(r.task.files.files) for r in kept), sum(len(r.new_files) for r in kept),
        pairs=tuple(r.task.pair for r in kept), dropped=dropped, rewrite_seconds=sum(r.seconds for r in kept),
    )


@attrs.define
class _Attempt:
    files: TableFiles
    operations: TableCompactions
    base: int
    pending: list[PairRewrite]
    user: str
    dropped: list[PairRewrite] = attrs.field(factory=list)

    def run(self) -> int | None:
        if not self.files.on_object_store:
            with self.files.commit_lock():
                latest = self.files.latest_snapshot()
                if not self._drop_lost(latest.id if latest is not None else 0):
                    return None
                self.operations.commit(self._messages(), commit_user=self.user, commit_identifier=self.base,
                                       properties=self._properties())
            return _committed_by(self.files, self.user, self.base)
        deadline = time.monotonic() + COMMIT_DEADLINE_S
        attempt = 0
        while True:
            if attempt and (landed := _committed_by(self.files, self.user, self.base)) is not None:
                return landed  # an earlier attempt's put landed and its answer was lost: not a lost race
            latest = self.files.latest_snapshot()
            latest_id = latest.id if latest is not None else 0
            if not self._drop_lost(latest_id):  # checked up to latest: the id tried next is latest + 1
                return None
            try:
                if self.operations.try_commit(
                    self._messages(), commit_user=self.user, commit_identifier=self.base,
                    properties=self._properties(), snapshot_id=latest_id + 1,
                ):
                    return latest_id + 1
            except Exception as err:
                if not _is_conflict(err):
                    raise
            if time.monotonic() > deadline:
                raise CommitError(f"lost the race for a snapshot id to other committers for {COMMIT_DEADLINE_S:.0f} s")
            time.sleep(random.uniform(0, min(1.0, 0.02 * 2**attempt)))
            attempt += 1

    def _drop_lost(self, latest: int) -> bool:
        """Drop the pairs that lost (see the module docstring); whether any is left."""
        touched = self._rewritten_since(latest)
        present = {
            (tuple(files.partition), files.bucket): {f.file_name for f in files.files}
            for files in self.operations.bucket_files(latest)
        } if latest else {}
        lost = [
            r for r in self.pending
            if touched is None or r.task.pair in touched
            or not {f.file_name for f in r.task.files.files} <= present.get(r.task.pair, set())
        ]
        if lost:
            gone = {id(r) for r in lost}
            self.pending = [r for r in self.pending if id(r) not in gone]
            self.discard(lost)
            self.dropped += lost
            logger.info("table %r: compaction of %s dropped: another compaction or an overwrite changed it since "
                        "snapshot %d", self.files.identifier, _shown([r.task.pair for r in lost]), self.base)
        return bool(self.pending)

    def _rewritten_since(self, latest: int) -> set[Pair] | None:
        """The pairs ``COMPACT`` and ``OVERWRITE`` snapshots after the base changed; None
        when one of them cannot be read (expired): then no pair can be told safe."""
        touched: set[Pair] = set()
        for snapshot_id in range(self.base + 1, latest + 1):
            changed = self.operations.snapshot_pairs(snapshot_id)
            if changed is None:
                return None
            if changed.commit_kind in _REWRITING_KINDS:
                touched |= changed.added | changed.deleted
        return touched

    def _messages(self) -> list[tuple[Any, Sequence[Any]]]:
        return [(r.task.files, r.new_files) for r in self.pending]

    def _properties(self) -> dict[str, str]:
        return {P_COMPACTED: json.dumps(sorted({r.task.pair[1] for r in self.pending}))}

    def discard(self, rewrites: Sequence[PairRewrite]) -> None:
        if rewrites:
            self.operations.delete_rewritten([(r.task.files, r.new_files) for r in rewrites])


def _committed_by(store: TableFiles, user: str, after: int) -> int | None:
    """The snapshot after ``after`` that ``user`` committed, if any: a commit that raised
    may still have created its snapshot, and then its files are the table's."""
    for snapshot in store.snapshots(newest_first=True, after=after):
        if snapshot.commit_user == user:
            return snapshot.id
    return None


def _is_conflict(err: BaseException) -> bool:
    """pypaimon's "File deletion conflicts detected": a file to delete is already gone."""
    return "conflict" in str(err).lower()
