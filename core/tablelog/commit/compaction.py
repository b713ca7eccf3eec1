"""Compaction: a bucket's files rewritten into one sorted run, in a ``COMPACT`` snapshot.

After every commit the committer compacts the buckets it wrote whose sorted runs exceed
``num-sorted-run.compaction-trigger`` (:func:`compact_after_commit`, which never fails the
commit); ``tablelog compact`` compacts on demand (:func:`compact`). The rows do not
change, so the snapshot carries no log-commit record and every log reader passes over it.

Writers commit while a compaction rewrites: the rewrite reads snapshot S, then commits
"delete S's files of the bucket, add the new ones". A writer's commit only adds files,
so it never conflicts; its rows (newer sequence numbers) win over the rewritten ones.
Two compactions of one bucket conflict: the second finds a file it deletes already gone
and commits nothing. The commit itself is serialized with writers' commits as theirs
are: under the table's commit lock (local warehouse), or by creating the snapshot file
conditionally and trying the next id after losing the race (object store).
"""

from __future__ import annotations

import json
import logging
import random
import time
import uuid
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from tablelog.commit.compaction_pick import Pick, Run, full, pick
from tablelog.errors import CommitError, OptionError

if TYPE_CHECKING:
    from tablelog.store import TableFiles
    from tablelog.store.compaction import BucketFiles, TableCompactions
    from tablelog.table_view import TableView

logger = logging.getLogger("tablelog.compaction")

#: The snapshot property that names the buckets a compaction rewrote.
P_COMPACTED = "tablelog.compacted-buckets"
#: How often a compaction on an object store tries again after losing the race for a
#: snapshot id to another committer.
MAX_COMMIT_ATTEMPTS = 20


@attrs.frozen
class CompactionResult:
    """What a compaction did: the snapshot it committed (None: none), and per bucket the
    files before and after."""

    table: str
    snapshot_id: int | None
    buckets: tuple[int, ...] = ()
    files_before: int = 0
    files_after: int = 0
    #: Why nothing was committed, when nothing was.
    skipped: str | None = None

    def summary(self) -> str:
        if self.snapshot_id is None:
            return f"table {self.table}: nothing compacted ({self.skipped})"
        return (
            f"table {self.table}: compacted bucket(s) {', '.join(map(str, self.buckets))} in snapshot "
            f"{self.snapshot_id}: {self.files_before} files -> {self.files_after}"
        )


def max_level(table: TableView) -> int:
    """The highest level: Paimon's ``num-levels - 1``, with its default ``num-levels`` of
    the trigger + 1. Compacting every run of a bucket writes there."""
    return table.options.num_sorted_run_compaction_trigger


@attrs.frozen
class _Plan:
    files: BucketFiles  # the files to rewrite
    output_level: int
    drop_deletes: bool


def _plan(table: TableView, files: BucketFiles, automatic: bool, operations: TableCompactions) -> _Plan | None:
    runs = files.runs()
    shape = [Run(level, size) for level, size, _ in runs]
    top = max_level(table)
    chosen = pick(shape, table.options.num_sorted_run_compaction_trigger, top) if automatic else full(shape, top)
    if automatic and chosen is None and operations.compacts_level0_at_commit and any(r.level == 0 for r in shape):
        # first-row: the whole bucket, so that a key is in one run above level 0 only
        # (the rows batch reads see), as Java's lookup compaction at each commit leaves it.
        chosen = Pick(len(runs), top)
    if chosen is None:
        return None
    if chosen.count < len(runs) and operations.merges_with_older_runs(
            files.subset(f for _, _, run_files in runs[: chosen.count] for f in run_files)):
        chosen = Pick(len(runs), top)  # design note 3.8: merged with every older run of the keys
    rewritten = [f for _, _, run_files in runs[: chosen.count] for f in run_files]
    return _Plan(files.subset(rewritten), chosen.output_level, drop_deletes=chosen.count == len(runs))


def compact(
    table: TableView, buckets: Iterable[int] | None = None, *, automatic: bool = False
) -> CompactionResult:
    """Compact ``buckets`` (default: all): each bucket with more than one sorted run
    rewritten whole into one; ``automatic`` (after a commit): the runs Paimon's universal
    compaction picks, for buckets past ``num-sorted-run.compaction-trigger``. One snapshot.
    A compaction that loses to another compaction of the same bucket commits nothing and
    says so in :attr:`CompactionResult.skipped`; other failures raise :class:`CommitError`,
    with nothing committed."""
    store = table.files
    wanted = None if buckets is None else set(buckets)
    if wanted is not None and store.bucket > 0:
        _check_buckets(table, wanted, range(store.bucket), f"0..{store.bucket - 1}")
    latest = store.latest_snapshot()
    if latest is None:
        return CompactionResult(table.identifier, None, skipped="the table has no snapshot")
    if not table.primary_key:
        return CompactionResult(table.identifier, None, skipped="a table without a primary key is not compacted")
    operations = store.compactions()
    listed = operations.bucket_files(latest.id)
    if wanted is not None and store.bucket < 1:  # dynamic buckets: the ones Paimon has made so far
        present = sorted({files.bucket for files in listed})
        _check_buckets(table, wanted, present, f"{', '.join(map(str, present)) or 'none yet'} (dynamic buckets)")
    plans = [
        plan for files in listed
        if (wanted is None or files.bucket in wanted) and (plan := _plan(table, files, automatic, operations)) is not None
    ]
    if not plans:
        why = "no bucket is past the compaction trigger" if automatic else "no bucket has more than one sorted run"
        return CompactionResult(table.identifier, None, skipped=why)
    newer = max(f.schema_id for plan in plans for f in plan.files.files)
    if newer > store.schema_id:
        return CompactionResult(
            table.identifier, None,
            skipped=f"files were written with schema {newer}, newer than this table object's "
            f"{store.schema_id}: open the table again",
        )
    rewrites = [
        (plan.files, operations.rewrite_bucket(plan.files, plan.output_level, plan.drop_deletes)) for plan in plans
    ]
    user = f"tablelog-compaction-{uuid.uuid4()}"
    compacted = sorted({plan.files.bucket for plan in plans})  # a bucket number repeats across partitions
    properties = {P_COMPACTED: json.dumps(compacted)}
    try:
        snapshot_id = _commit(store, operations, rewrites, user, latest.id, properties, compacted)
    except BaseException as err:
        if _committed_by(store, user, latest.id) is None:
            operations.delete_rewritten(rewrites)
            if isinstance(err, _LostToCompaction) or _is_conflict(err):
                return CompactionResult(
                    table.identifier, None,
                    skipped="another compaction rewrote these files first (nothing committed)",
                )
            if isinstance(err, Exception):
                raise CommitError(
                    f"table {table.identifier!r}: compaction of bucket(s) "
                    f"{properties[P_COMPACTED]} failed, nothing committed: {err}"
                ) from err
            raise
        snapshot_id = _committed_by(store, user, latest.id)  # committed, though it raised
    return CompactionResult(
        table.identifier, snapshot_id, tuple(compacted),
        sum(len(files.files) for files, _ in rewrites), sum(len(new) for _, new in rewrites),
    )


def _check_buckets(table: TableView, wanted: set[int], buckets: Iterable[int], shown: str) -> None:
    unknown = sorted(wanted - set(buckets))
    if unknown:
        raise OptionError(f"bucket {', '.join(map(str, unknown))}: table {table.identifier!r} has buckets {shown}")


def compact_after_commit(table: TableView, buckets: Iterable[int]) -> CompactionResult | None:
    """The committer's compaction of the ``buckets`` it just wrote, when they are over the
    trigger. Never raises: the commit has happened; a compaction that fails leaves the
    table as it was and is tried again after the next commit."""
    try:
        result = compact(table, buckets, automatic=True)
    except Exception as err:  # noqa: BLE001 -- a failed compaction must not fail the commit
        logger.warning("table %r: compaction after commit failed (the commit stands): %s", table.identifier, err)
        return None
    if result.snapshot_id is not None:
        logger.info("%s", result.summary())
    return result


class _LostToCompaction(Exception):
    """Another compaction of one of these buckets committed after the snapshot this one read."""


def _commit(
    store: TableFiles, operations: TableCompactions, rewrites: Sequence[tuple[BucketFiles, Sequence[Any]]],
    user: str, base: int, properties: dict[str, str], buckets: Sequence[int],
) -> int | None:
    if not store.on_object_store:
        with store.commit_lock():
            _check_no_compaction_since(store, base, buckets)
            operations.commit(rewrites, commit_user=user, commit_identifier=base, properties=properties)
        return _committed_by(store, user, base)
    for attempt in range(MAX_COMMIT_ATTEMPTS):
        latest = store.latest_snapshot()
        _check_no_compaction_since(store, base, buckets)  # up to latest: the snapshot tried next is latest + 1
        next_id = (latest.id if latest is not None else 0) + 1
        if operations.try_commit(
            rewrites, commit_user=user, commit_identifier=base, properties=properties, snapshot_id=next_id
        ):
            return next_id
        time.sleep(random.uniform(0, min(1.0, 0.02 * 2**attempt)))
    raise CommitError(f"lost the race for a snapshot id {MAX_COMMIT_ATTEMPTS} times to other committers")


def _check_no_compaction_since(store: TableFiles, base: int, buckets: Sequence[int]) -> None:
    """Two compactions of one bucket from different snapshots may rewrite different runs,
    and Paimon's levels must not get two runs of overlapping keys at one level: the later
    compaction gives way, as if its files were gone."""
    for snapshot in store.snapshots(after=base):
        if snapshot.commit_kind == "COMPACT" and set(json.loads(snapshot.properties.get(P_COMPACTED, "[]"))) & set(
            buckets
        ):
            raise _LostToCompaction()


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
