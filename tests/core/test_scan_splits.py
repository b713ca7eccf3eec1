"""The planning of a full scan's splits over a bucket's file metadata (pure logic): a bucket
that needs a merge is cut into key ranges that cover the key space without overlap, each
split reading every file its range meets; a bucket stored without overlaps is packed by
file; and a split keeps exactly the rows of its range."""

from __future__ import annotations

import itertools
import random

import pyarrow as pa
import pytest

from tablelog.store.scan_splits import (
    FileSpan,
    SplitPlan,
    in_range,
    orders_like_paimon,
    plan_bucket,
)


def _run(level: int, bounds: list[tuple[int, int]], size: int = 100) -> list[FileSpan]:
    return [FileSpan(level, size, (lo,), (hi,)) for lo, hi in bounds]


def _random_bucket(rng: random.Random) -> list[FileSpan]:
    """Level-0 files anywhere (so the bucket needs a merge), and sorted runs of non-overlapping files at higher levels."""
    files = []
    for _ in range(rng.randrange(1, 4)):
        lo = rng.randrange(1000)
        files.append(FileSpan(0, rng.randrange(10, 500), (lo,), (lo + rng.randrange(0, 800),)))
    for level in rng.sample(range(1, 6), rng.randrange(1, 4)):
        edges = sorted(rng.sample(range(1200), 2 * rng.randrange(1, 12)))
        files += [FileSpan(level, rng.randrange(10, 500), (lo,), (hi,)) for lo, hi in zip(edges[::2], edges[1::2], strict=True)]
    rng.shuffle(files)
    return files


def _contains(plan: SplitPlan, key: tuple[int, ...]) -> bool:
    return (plan.lo is None or key >= plan.lo) and (plan.hi is None or key < plan.hi)


@pytest.mark.parametrize("seed", range(20))
def test_key_ranges_cover_the_key_space_without_overlap_and_each_reads_every_file_it_meets(seed: int) -> None:
    rng = random.Random(seed)
    files = _random_bucket(rng)
    plans = plan_bucket(files, rng.choice([1, 200, 700, 10**9]), keyed=True, ranges=True)
    assert plans and all(p.merged for p in plans)
    # contiguous ranges from -inf to +inf, each non-empty
    assert plans[0].lo is None and plans[-1].hi is None
    for before, after in itertools.pairwise(plans):
        assert before.hi is not None and before.hi == after.lo
    assert all(p.lo is None or p.hi is None or p.lo < p.hi for p in plans)
    for key in [(k,) for k in range(-1, 2100)]:
        assert sum(_contains(p, key) for p in plans) == 1  # every key in exactly one range
        for i, file in enumerate(files):
            if file.min_key <= key <= file.max_key:  # the file may hold the key: its range reads it
                assert i in next(p for p in plans if _contains(p, key)).files
    for plan in plans:  # and a split reads no file its range does not meet
        for i in plan.files:
            assert any(_contains(plan, (k,)) for k in range(files[i].min_key[0], files[i].max_key[0] + 1))


def test_a_bucket_needing_a_merge_is_cut_at_its_largest_runs_file_boundaries_by_its_bytes() -> None:
    run = _run(1, [(k * 10, k * 10 + 9) for k in range(8)], size=100)  # 800 bytes, keys 0..79
    level0 = [FileSpan(0, 100, (5,), (60,)), FileSpan(0, 50, (70,), (75,))]
    plans = plan_bucket([*level0, *run], 250, keyed=True, ranges=True)  # 950 bytes: 4 splits
    assert [(p.lo, p.hi) for p in plans] == [(None, (20,)), ((20,), (40,)), ((40,), (60,)), ((60,), None)]
    assert [sorted(p.files) for p in plans] == [[0, 2, 3], [0, 4, 5], [0, 6, 7], [0, 1, 8, 9]]
    assert plan_bucket([*level0, *run], 10**6, keyed=True, ranges=True) == [SplitPlan(tuple(range(10)), True)]


def test_one_sorted_run_without_retractions_is_packed_by_file_in_key_order_and_read_unmerged() -> None:
    run = _run(3, [(40, 49), (0, 9), (20, 29), (10, 19), (30, 39)], size=100)
    plans = plan_bucket(run, 250, keyed=True, ranges=True)
    assert plans == [SplitPlan((1, 3), False), SplitPlan((2, 4), False), SplitPlan((0,), False)]
    # a retraction, or a second level, needs the merge
    retracting = [*run[:-1], FileSpan(3, 100, (30,), (39,), retracts=True)]
    assert all(p.merged for p in plan_bucket(retracting, 250, keyed=True, ranges=True))
    assert all(p.merged for p in plan_bucket([*run, *_run(4, [(0, 99)])], 250, keyed=True, ranges=True))
    # a table without a primary key has no versions of keys: its files are read as they are
    loose = [FileSpan(0, 100, (), ()) for _ in range(5)]
    assert plan_bucket(loose, 200, keyed=False, ranges=False) == [
        SplitPlan((0, 1), False), SplitPlan((2, 3), False), SplitPlan((4,), False)]


def test_a_bucket_needing_a_merge_of_keys_paimon_orders_otherwise_is_one_split() -> None:
    files = [*_run(1, [(k * 10, k * 10 + 9) for k in range(8)]), FileSpan(0, 100, (5,), (60,))]
    assert plan_bucket(files, 1, keyed=True, ranges=False) == [SplitPlan(tuple(range(9)), True)]
    assert orders_like_paimon([pa.int64(), pa.string(), pa.date32(), pa.binary(), pa.int8()])
    assert not orders_like_paimon([pa.int64(), pa.float64()])
    assert not orders_like_paimon([pa.timestamp("us")])
    assert not orders_like_paimon([])


def test_a_split_keeps_the_rows_of_composite_keys_from_lo_up_to_hi() -> None:
    rng = random.Random(7)
    keys = sorted({(rng.randrange(5), rng.choice("abcdé"), rng.randrange(3)) for _ in range(200)})
    rows = pa.table({"a": [k[0] for k in keys], "b": [k[1] for k in keys], "c": [k[2] for k in keys],
                     "v": range(len(keys))})
    cuts = [None, *sorted(rng.sample(keys, 6)), None]
    seen = []
    for lo, hi in itertools.pairwise(cuts):
        kept = in_range(rows, ["a", "b", "c"], lo, hi)
        expected = [k for k in keys if (lo is None or k >= lo) and (hi is None or k < hi)]
        assert list(zip(*(kept.column(n).to_pylist() for n in "abc"), strict=True)) == expected
        seen += kept.column("v").to_pylist()
    assert sorted(seen) == list(range(len(keys)))
