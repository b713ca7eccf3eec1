"""Which sorted runs of a bucket a compaction rewrites: Paimon's ``UniversalCompaction``
(RocksDB's universal style), so that a bucket written every minute is not rewritten
whole every few commits.

Runs are ordered newest first (level-0 files, newest first, then levels 1, 2, ...). Past
the trigger, the newest runs are merged into one run at the level just above the next
older run, growing the set while the next run is not much bigger than it (size ratio);
all runs, into the highest level, once the newer runs together outweigh the oldest by
more than the size amplification allows. Only a compaction of all runs may drop deletes.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

#: Paimon's ``compaction.max-size-amplification-percent`` default.
MAX_SIZE_AMPLIFICATION_PERCENT = 200
#: Paimon's ``compaction.size-ratio`` default.
SIZE_RATIO_PERCENT = 1


@attrs.frozen
class Run:
    """A sorted run: its level and size in bytes."""

    level: int
    size: int


@attrs.frozen
class Pick:
    """The newest ``count`` runs, to be rewritten as one run at ``output_level``."""

    count: int
    output_level: int


def pick(runs: Sequence[Run], trigger: int, max_level: int) -> Pick | None:
    """What to compact of ``runs`` (newest first), or None while there are no more than
    ``trigger`` of them and nothing else calls for it (as ``UniversalCompaction.pick``)."""
    if len(runs) < trigger or len(runs) <= 1:
        return None
    newer = sum(r.size for r in runs[:-1])
    if newer * 100 > MAX_SIZE_AMPLIFICATION_PERCENT * runs[-1].size:
        return Pick(len(runs), max_level)
    chosen = _by_size_ratio(runs, 1, max_level)
    if chosen is None and len(runs) > trigger:
        chosen = _by_size_ratio(runs, len(runs) - trigger + 1, max_level)
    return chosen


def full(runs: Sequence[Run], max_level: int) -> Pick | None:
    """Every run into the highest level (``tablelog compact``): None when there is one run."""
    return Pick(len(runs), max_level) if len(runs) > 1 else None


def _by_size_ratio(runs: Sequence[Run], count: int, max_level: int) -> Pick | None:
    size = sum(r.size for r in runs[:count])
    triggered = count > 1
    for run in runs[count:]:
        if size * (100.0 + SIZE_RATIO_PERCENT) / 100.0 < run.size and (not triggered or run.level > 1):
            break
        size += run.size
        count += 1
        triggered = True
    return _unit(runs, count, max_level) if triggered else None


def _unit(runs: Sequence[Run], count: int, max_level: int) -> Pick:
    if count == len(runs):
        return Pick(count, max_level)
    output = max(0, runs[count].level - 1)
    if output == 0:
        # never output level 0: take older runs up to the first one above it
        for run in runs[count:]:
            count += 1
            if run.level != 0:
                output = run.level
                break
    return Pick(count, max_level if count == len(runs) else output)
