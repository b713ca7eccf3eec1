"""The pure arithmetic of ``python -m bench.scale``: checkpoints, the micro-batches that
grow the table to each, the order of the measurement windows, percentiles."""

from __future__ import annotations

import math
from collections.abc import Sequence

#: A window with the writers' compaction off (``write-only = true``, nothing compacting).
OFF = "off"
#: A window with compaction in the background (the sink's committing process compacts).
BACKGROUND = "background"


def parse_rows(text: str) -> int:
    """``50000000``, ``50_000_000``, ``50M``, ``500k`` or ``2.5M`` as a row count."""
    cleaned = text.strip().replace("_", "").replace(",", "")
    scale = {"k": 1_000, "m": 1_000_000, "g": 1_000_000_000}.get(cleaned[-1:].lower(), 1)
    number = cleaned[:-1] if scale != 1 else cleaned
    try:
        value = float(number) * scale
    except ValueError:
        raise ValueError(f"row count {text!r}: expected a number such as 2000000, 500k or 2.5M") from None
    if value <= 0 or value != int(value):
        raise ValueError(f"row count {text!r}: expected a positive whole number of rows")
    return int(value)


def parse_checkpoints(text: str, rows: int) -> list[int]:
    """Comma-separated table sizes, ascending and at most ``rows`` (the last is ``rows``
    whether named or not)."""
    points = sorted({parse_rows(item) for item in text.split(",") if item.strip()})
    beyond = [p for p in points if p > rows]
    if beyond:
        raise ValueError(f"checkpoints {beyond} are beyond --rows {rows}: the table never gets that large")
    if not points or points[-1] != rows:
        points.append(rows)
    return points


def growth_batches(keys_now: int, target: int, batch_rows: int, update_fraction: float) -> list[tuple[int, int]]:
    """The micro-batches that take a table of ``keys_now`` keys to ``target``, as (new
    keys, updates of old keys) each: ``batch_rows`` rows a batch, ``update_fraction`` of
    them updates (none while the table is empty), the last batch smaller."""
    if not 0 <= update_fraction < 1:
        raise ValueError(f"update fraction {update_fraction}: expected at least 0 and less than 1")
    batches: list[tuple[int, int]] = []
    keys = keys_now
    new_per_batch = max(1, round(batch_rows * (1 - update_fraction)))
    while keys < target:
        new = min(batch_rows if keys == 0 else new_per_batch, target - keys)
        updates = 0 if keys == 0 else min(keys, round(new * update_fraction / (1 - update_fraction)))
        batches.append((new, updates))
        keys += new
    return batches


def window_batch_rows(checkpoints: Sequence[int], batches: int, largest: int = 50_000, smallest: int = 1_000) -> int:
    """Rows of a measured micro-batch: ``largest``, or less so that the ``batches``
    micro-batches measured at a checkpoint add at most half the smallest step between
    checkpoints (they write new keys too), at least ``smallest``."""
    steps = [b - a for a, b in zip([0, *checkpoints], checkpoints, strict=False)]
    return max(smallest, min(largest, min(steps) // (2 * batches)))


def window_order(windows: int) -> list[str]:
    """``windows`` measurement windows alternating compaction off and in the background,
    off first, background last: a window with compaction off starts only once the
    background compaction before it is done, and the measurements after the windows find
    the table compacted as a running sink leaves it (so ``windows`` is even)."""
    if windows < 2 or windows % 2:
        raise ValueError(f"--windows {windows}: expected an even number, at least 2 (off, background, ...)")
    return [OFF if i % 2 == 0 else BACKGROUND for i in range(windows)]


def percentile(values: Sequence[float], p: float) -> float:
    """The ``p``-th percentile (0-100) by linear interpolation between the closest ranks,
    as numpy's default; NaN for no values."""
    if not 0 <= p <= 100:
        raise ValueError(f"percentile {p}: expected 0 to 100")
    ordered = sorted(values)
    if not ordered:
        return math.nan
    rank = (len(ordered) - 1) * p / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def keys_in_partition(keys: int, partition: int, partitions: int) -> int:
    """How many of the keys ``0 .. keys - 1`` fall in table partition ``partition`` (a key's
    partition is ``key % partitions``)."""
    return max(0, (keys - partition + partitions - 1) // partitions)
