"""A bucket's data files cut into splits that tasks read one each, in bounded memory:
the planning of a full scan over the files' metadata alone (sizes, levels, key ranges).

A bucket whose files do not overlap (no primary key, or one sorted run above level 0
without retractions) is read as it is stored: its files are packed, in key order, into
groups of about ``target_size`` bytes. Any other bucket is merged, so its key space is cut
into ranges ``[lo, hi)`` at the file boundaries of its largest sorted run; a split reads
every file whose keys meet its range, merged, and keeps the rows of its range alone. A
key's records are thus all merged in the one split whose range holds it, and each row is
returned once. Level-0 files span most of the key space and are read by several splits:
the price of the cut, kept low because compaction keeps few of them.

The ranges compare keys as Python tuples and as Arrow values, which order integers,
strings, binaries and dates as Paimon's key comparator does; a key of another type
(floats, decimals, timestamps...) leaves a bucket that needs a merge in one split.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import attrs
import pyarrow as pa
import pyarrow.compute as pc

Key = tuple[Any, ...]


@attrs.frozen
class FileSpan:
    """What the planning needs of one data file."""

    level: int
    size: int
    min_key: Key
    max_key: Key
    #: The file holds retractions (``-D``/``-U`` records), so it is never read unmerged.
    retracts: bool = False


@attrs.frozen
class SplitPlan:
    """One split of a bucket: the indices of the files it reads, whether they are merged,
    and its key range (``lo`` included, ``hi`` excluded; None: unbounded)."""

    files: tuple[int, ...]
    merged: bool
    lo: Key | None = None
    hi: Key | None = None


def plan_bucket(files: Sequence[FileSpan], target_size: int, *, keyed: bool, ranges: bool) -> list[SplitPlan]:
    """The splits of one bucket's ``files``. ``keyed``: the table has a primary key (its
    files hold key ranges and versions of keys); ``ranges``: its key type orders as Paimon's
    does (:func:`orders_like_paimon`), so a bucket that needs a merge may be cut."""
    if not files:
        return []
    if not keyed or _one_clean_run(files):
        order = sorted(range(len(files)), key=lambda i: files[i].min_key) if keyed else range(len(files))
        return [SplitPlan(tuple(group), merged=False) for group in _packed(order, files, target_size)]
    everything = tuple(range(len(files)))
    cuts = _cuts(files, target_size) if ranges else []
    if not cuts:
        return [SplitPlan(everything, merged=True)]
    bounds = [None, *cuts, None]
    return [
        SplitPlan(tuple(i for i in everything if _meets(files[i], lo, hi)), merged=True, lo=lo, hi=hi)
        for lo, hi in zip(bounds, bounds[1:], strict=False)
    ]


def _one_clean_run(files: Sequence[FileSpan]) -> bool:
    """Whether ``files`` are one sorted run above level 0 without retractions: their
    rows are the bucket's rows, each key once."""
    return len({f.level for f in files}) == 1 and files[0].level > 0 and not any(f.retracts for f in files)


def _packed(order: Sequence[int], files: Sequence[FileSpan], target_size: int) -> list[list[int]]:
    """``order`` in consecutive groups of at most ``target_size`` bytes (a larger file alone)."""
    groups: list[list[int]] = []
    size = 0
    for i in order:
        if groups and size + files[i].size <= target_size:
            groups[-1].append(i)
            size += files[i].size
        else:
            groups.append([i])
            size = files[i].size
    return groups


def _cuts(files: Sequence[FileSpan], target_size: int) -> list[Key]:
    """Where the key space is cut: the first keys of files of the largest sorted run,
    about evenly by its bytes, into as many ranges as the bucket's bytes fill splits."""
    total = sum(f.size for f in files)
    wanted = math.ceil(total / max(target_size, 1))
    run = sorted(_largest_run(files), key=lambda f: f.min_key)
    if wanted < 2 or len(run) < 2:
        return []
    run_bytes = sum(f.size for f in run) or 1
    cuts: list[Key] = []
    before, group = 0, 0
    for file in run:
        at = min(wanted - 1, before * wanted // run_bytes)
        if at > group:
            cuts.append(file.min_key)
            group = at
        before += file.size
    return cuts


def _largest_run(files: Sequence[FileSpan]) -> list[FileSpan]:
    """The sorted run of the most bytes: each level-0 file is a run, each higher level one."""
    runs: list[list[FileSpan]] = [[f] for f in files if f.level == 0]
    levels: dict[int, list[FileSpan]] = {}
    for f in files:
        if f.level > 0:
            levels.setdefault(f.level, []).append(f)
    runs += levels.values()
    return max(runs, key=lambda run: sum(f.size for f in run))


def _meets(file: FileSpan, lo: Key | None, hi: Key | None) -> bool:
    """Whether ``file`` may hold a key of ``[lo, hi)``."""
    return (lo is None or file.max_key >= lo) and (hi is None or file.min_key < hi)


def orders_like_paimon(key_types: Sequence[pa.DataType]) -> bool:
    """Whether keys of these types order, as tuples and in Arrow, as Paimon orders them
    (integers and dates by value, strings and binaries by their bytes)."""
    return bool(key_types) and all(
        pa.types.is_integer(t) or pa.types.is_string(t) or pa.types.is_large_string(t)
        or pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_date(t)
        for t in key_types
    )


def in_range(rows: pa.Table, key_columns: Sequence[str], lo: Key | None, hi: Key | None) -> pa.Table:
    """The ``rows`` whose key (``key_columns``, compared in order) is in ``[lo, hi)``."""
    if (lo is None and hi is None) or rows.num_rows == 0:
        return rows
    columns = [rows.column(name) for name in key_columns]
    mask = None
    if lo is not None:
        mask = _compare(columns, lo, pc.greater, pc.greater_equal)
    if hi is not None:
        below = _compare(columns, hi, pc.less, pc.less)
        mask = below if mask is None else pc.and_(mask, below)
    return rows.filter(mask)


def _compare(columns: Sequence[Any], key: Key, strictly: Any, last: Any) -> Any:
    """Lexicographic comparison of each row's key with ``key``: ``strictly`` decides at the
    first column that differs, ``last`` at the last column."""
    scalar = pa.scalar(key[-1], columns[-1].type)
    result = last(columns[-1], scalar)
    for column, value in zip(reversed(columns[:-1]), reversed(key[:-1]), strict=True):
        scalar = pa.scalar(value, column.type)
        result = pc.or_(strictly(column, scalar), pc.and_(pc.equal(column, scalar), result))
    return result
