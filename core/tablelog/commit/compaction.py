"""Compaction: a (partition, bucket)'s files rewritten into one sorted run, in a ``COMPACT`` snapshot.

Three steps, each usable on its own so that the rewrites may run elsewhere (a Spark
task per pair) and one committer commits them:

- :func:`plan_compaction`: the pairs to compact at the latest snapshot S, each a
  :class:`PairTask` (its files at S, the output level; picklable);
- :func:`rewrite_pair`: one pair's new files (a :class:`PairRewrite`, picklable;
  uncommitted);
- :func:`~tablelog.commit.compaction_commit.commit_rewrites`: one ``COMPACT`` snapshot of
  many pairs' rewrites, each pair dropped alone when it lost a race.

:func:`compact` runs the three in this process. After a commit, the writer's background
maintainer (:mod:`tablelog.commit.maintenance`) compacts the pairs it wrote that are past
``num-sorted-run.compaction-trigger``; ``tablelog compact`` compacts on demand or follows
the table (:mod:`tablelog.compaction_job`). The rows do not change, so the snapshot
carries no log-commit record and every log reader passes over it.

Writers commit while a compaction rewrites: a writer's commit only adds files, so it
never conflicts; its rows (newer sequence numbers) win over the rewritten ones.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from tablelog.commit.compaction_commit import (
    P_COMPACTED,
    CompactionResult,
    Pair,
    PairRewrite,
    PairTask,
    commit_rewrites,
)
from tablelog.commit.compaction_pick import Pick, Run, full, pick
from tablelog.commit.compaction_threads import rewrite_pairs
from tablelog.errors import OptionError

if TYPE_CHECKING:
    from tablelog.store import TableFiles
    from tablelog.store.compaction import BucketFiles, TableCompactions
    from tablelog.table_view import TableView

logger = logging.getLogger("tablelog.compaction")

__all__ = [
    "DEFAULT_THREADS", "P_COMPACTED", "CompactionPlan", "CompactionResult", "Pair", "PairRewrite", "PairTask",
    "commit_rewrites", "compact", "compact_after_commit", "discard", "plan_compaction", "rewrite_files",
    "rewrite_pair",
]


#: Pairs a compaction in one process rewrites at once, by default: the machine's cores
#: (reading, decoding and writing release the GIL), at most 4 (each holds its runs' batches).
DEFAULT_THREADS = max(1, min(4, os.cpu_count() or 1))


@attrs.frozen
class CompactionPlan:
    """What to rewrite at ``snapshot_id``; no tasks: nothing (``skipped`` says why)."""

    table: str
    snapshot_id: int | None
    tasks: tuple[PairTask, ...] = ()
    skipped: str | None = None


def max_level(table: TableView) -> int:
    """The highest level: Paimon's ``num-levels - 1``, with its default ``num-levels`` of
    the trigger + 1. Compacting every run of a bucket writes there."""
    return table.options.num_sorted_run_compaction_trigger


def _task(table: TableView, files: BucketFiles, automatic: bool, operations: TableCompactions) -> PairTask | None:
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
    return PairTask(files.subset(rewritten), chosen.output_level, drop_deletes=chosen.count == len(runs))


def plan_compaction(
    table: TableView, buckets: Iterable[int] | None = None, *,
    partitions: Sequence[Mapping[str, Any]] | None = None, pairs: Collection[Pair] | None = None,
    automatic: bool = False,
) -> CompactionPlan:
    """The pairs to compact at the latest snapshot: of ``buckets``, ``partitions``
    (mappings of partition column to value; a value matches as the same text) and
    ``pairs`` (each None: all), each with more than one sorted run, all its runs
    rewritten (a full compaction); ``automatic``: the runs Paimon's universal compaction
    picks, for pairs past ``num-sorted-run.compaction-trigger``. Unknown buckets or
    partition columns raise :class:`OptionError`."""
    store = table.files
    wanted = None if buckets is None else set(buckets)
    if wanted is not None and store.bucket > 0:
        _check_buckets(table, wanted, range(store.bucket), f"0..{store.bucket - 1}")
    matches = _partition_filter(table, partitions)
    latest = store.latest_snapshot()
    if latest is None:
        return CompactionPlan(table.identifier, None, skipped="the table has no snapshot")
    if not table.primary_key:
        return CompactionPlan(table.identifier, None, skipped="a table without a primary key is not compacted")
    operations = store.compactions()
    listed = operations.bucket_files(latest.id)
    if wanted is not None and store.bucket < 1:  # dynamic buckets: the ones Paimon has made so far
        present = sorted({files.bucket for files in listed})
        _check_buckets(table, wanted, present, f"{', '.join(map(str, present)) or 'none yet'} (dynamic buckets)")
    tasks = [
        task for files in listed
        if (wanted is None or files.bucket in wanted) and matches(files.partition)
        and (pairs is None or (tuple(files.partition), files.bucket) in pairs)
        and (task := _task(table, files, automatic, operations)) is not None
    ]
    if not tasks:
        why = "no bucket is past the compaction trigger" if automatic else "no bucket has more than one sorted run"
        return CompactionPlan(table.identifier, latest.id, skipped=why)
    newer = max(f.schema_id for task in tasks for f in task.files.files)
    if newer > store.schema_id:
        return CompactionPlan(
            table.identifier, latest.id,
            skipped=f"files were written with schema {newer}, newer than this table object's "
            f"{store.schema_id}: open the table again",
        )
    return CompactionPlan(table.identifier, latest.id, tuple(tasks))


def _check_buckets(table: TableView, wanted: set[int], buckets: Iterable[int], shown: str) -> None:
    unknown = sorted(wanted - set(buckets))
    if unknown:
        raise OptionError(f"bucket {', '.join(map(str, unknown))}: table {table.identifier!r} has buckets {shown}")


def _partition_filter(
    table: TableView, partitions: Sequence[Mapping[str, Any]] | None
) -> Callable[[tuple[Any, ...]], bool]:
    """Whether a pair's partition values are one of ``partitions`` (None: any)."""
    if partitions is None:
        return lambda values: True
    keys = table.files.partition_keys
    specs: list[dict[int, str | None]] = []
    for spec in partitions:
        unknown = sorted(set(spec) - set(keys))
        if unknown:
            shown = ", ".join(keys) if keys else "none: the table is not partitioned"
            raise OptionError(f"partition column {unknown[0]!r}: table {table.identifier!r} has partition "
                              f"columns {shown}")
        specs.append({keys.index(k): None if v is None else str(v) for k, v in spec.items()})

    def matches(values: tuple[Any, ...]) -> bool:
        return any(all((None if values[i] is None else str(values[i])) == v for i, v in spec.items()) for spec in specs)

    return matches


def rewrite_pair(table: TableView, task: PairTask, pace: Callable[[], None] | None = None) -> PairRewrite:
    """Rewrite one planned pair (not committed: :func:`commit_rewrites`, or its files
    deleted with :func:`discard`); ``pace``: called between the batches of its merge."""
    return rewrite_files(table.files, task, pace)


def rewrite_files(files: TableFiles, task: PairTask, pace: Callable[[], None] | None = None) -> PairRewrite:
    """:func:`rewrite_pair` with the table's files alone (a process that has no table object)."""
    began = time.perf_counter()
    new = files.compactions().rewrite_bucket(task.files, task.output_level, task.drop_deletes, pace)
    return PairRewrite(task, tuple(new), time.perf_counter() - began)


def discard(table: TableView, rewrites: Sequence[PairRewrite]) -> None:
    """Delete the new files of rewrites that will not be committed."""
    if rewrites:
        table.files.compactions().delete_rewritten([(r.task.files, r.new_files) for r in rewrites])


def compact(
    table: TableView, buckets: Iterable[int] | None = None, *,
    partitions: Sequence[Mapping[str, Any]] | None = None, pairs: Collection[Pair] | None = None,
    automatic: bool = False, cancelled: Callable[[], bool] | None = None, threads: int = 1,
    pace: Callable[[], None] | None = None, rewrite: Callable[[PairTask], PairRewrite] | None = None,
) -> CompactionResult:
    """Plan, rewrite the pairs (``threads`` at a time: :mod:`.compaction_threads`), and
    commit them in one snapshot (:func:`plan_compaction` says which). A pair that lost a
    race (another compaction or an overwrite of it since) is dropped alone, its files
    deleted (:attr:`CompactionResult.dropped`). ``cancelled``: asked before each pair and before
    the commit; once true, the rewritten files are deleted and nothing is committed.
    ``pace``: called between the batches of each pair's merge (a background compaction's
    pauses). ``rewrite``: how a pair is rewritten (default: :func:`rewrite_pair` in this
    process; a background compaction's child process). Other failures raise :class:`~tablelog.errors.CommitError`, with nothing committed."""
    if threads < 1:
        raise OptionError(f"threads {threads}: a compaction rewrites at least 1 pair at a time")
    began = time.perf_counter()
    plan = plan_compaction(table, buckets, partitions=partitions, pairs=pairs, automatic=automatic)
    if not plan.tasks or plan.snapshot_id is None:
        return CompactionResult(table.identifier, None, skipped=plan.skipped)
    stop = cancelled or (lambda: False)
    one = rewrite or (lambda task: rewrite_pair(table, task, pace))
    done = rewrite_pairs(plan.tasks, one, lambda done: discard(table, done), stop=stop, threads=threads)
    if stop():
        discard(table, done)
        return CompactionResult(table.identifier, None, skipped="cancelled (nothing committed)")
    return attrs.evolve(commit_rewrites(table, plan.snapshot_id, done), seconds=time.perf_counter() - began)


def compact_after_commit(table: TableView, pairs: Collection[Pair]) -> CompactionResult | None:
    """A committer's compaction of the ``pairs`` it just wrote, when they are over the
    trigger (``commit.force-compact``, and a first-row table's level 0). Never raises: the
    commit has happened; a compaction that fails leaves the table as it was and is tried
    again after the next commit."""
    try:
        result = compact(table, pairs=pairs, automatic=True)
    except Exception as err:  # noqa: BLE001 -- a failed compaction must not fail the commit
        logger.warning("table %r: compaction after commit failed (the commit stands): %s", table.identifier, err)
        return None
    if result.snapshot_id is not None:
        logger.info("%s", result.summary())
    return result
