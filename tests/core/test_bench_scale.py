"""The pure logic of ``python -m bench.scale``: how the table grows to each checkpoint,
the order of the measured windows, percentiles (bench/scale/schedule.py), and how its S3
request counter names a request (bench/scale/s3_counter.py). Loaded from their files: the
benchmarks are not a package the test environment installs."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path
from types import ModuleType

import pytest


def _bench_scale_module(name: str) -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "bench" / "scale" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"bench_scale_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


schedule = _bench_scale_module("schedule")


def test_growth_reaches_each_checkpoint_exactly_with_a_share_of_updates_after_the_first_batch() -> None:
    batches = schedule.growth_batches(0, 1_000_000, 300_000, 0.2)
    assert batches[0] == (300_000, 0)  # an empty table has no old keys to update
    assert sum(new for new, _ in batches) == 1_000_000
    assert batches[1] == (240_000, 60_000)  # a fifth of a full batch updates old keys
    assert batches[-1][0] == 1_000_000 - 300_000 - 2 * 240_000  # the last batch stops at the checkpoint
    assert schedule.growth_batches(1_000_000, 1_000_000, 300_000, 0.2) == []  # already there
    assert schedule.growth_batches(10, 20, 100, 0.5) == [(10, 10)]  # updates never exceed the keys written


def test_checkpoints_are_sorted_end_at_the_final_size_and_refuse_sizes_beyond_it() -> None:
    assert schedule.parse_checkpoints("1M,500k, 2M", 2_000_000) == [500_000, 1_000_000, 2_000_000]
    assert schedule.parse_checkpoints("5M", 50_000_000) == [5_000_000, 50_000_000]
    with pytest.raises(ValueError, match="beyond --rows"):
        schedule.parse_checkpoints("3M", 2_000_000)
    with pytest.raises(ValueError, match="'lots'"):
        schedule.parse_rows("lots")
    assert schedule.parse_rows("2.5M") == 2_500_000


def test_windows_alternate_off_first_and_background_last() -> None:
    assert schedule.window_order(4) == ["off", "background", "off", "background"]
    with pytest.raises(ValueError, match="even"):
        schedule.window_order(3)


def test_measured_micro_batches_add_at_most_half_the_smallest_step_between_checkpoints() -> None:
    assert schedule.window_batch_rows([5_000_000, 10_000_000, 50_000_000], 36) == 50_000
    rows = schedule.window_batch_rows([500_000, 1_000_000, 2_000_000], 36)
    assert rows * 36 <= 250_000 and rows == 6_944


def test_percentiles_interpolate_between_the_closest_ranks() -> None:
    values = [float(v) for v in range(1, 101)]
    assert schedule.percentile(values, 50) == pytest.approx(50.5)
    assert schedule.percentile(values, 99) == pytest.approx(99.01)
    assert schedule.percentile([7.0], 99) == 7.0
    assert math.isnan(schedule.percentile([], 50))
    assert schedule.keys_in_partition(10, 0, 4) == 3 and schedule.keys_in_partition(10, 3, 4) == 2


def test_requests_are_named_by_operation_and_the_table_folder_they_touch() -> None:
    counter = _bench_scale_module("s3_counter")
    table = "/tablelog/wh/bench.db/scale"
    assert counter.classify("PUT", f"{table}/p=1/bucket-3/data-1.parquet") == ("PUT", "data")
    assert counter.classify("HEAD", f"{table}/snapshot/snapshot-7") == ("HEAD", "snapshot")
    assert counter.classify("GET", f"{table}/manifest/manifest-list-1?x-id=GetObject") == ("GET", "manifest")
    assert counter.classify("GET", "/tablelog?list-type=2&prefix=wh%2Fbench.db%2Fscale%2Fschema%2F") == ("LIST", "schema")
    assert counter.classify("POST", "/tablelog?delete") == ("DELETE-BATCH", "other")
    assert counter.classify("DELETE", f"{table}/log-lease/lease-1") == ("DELETE", "other")
