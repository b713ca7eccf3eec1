"""Where an integer key column holds some wanted keys (tablelog.store.integer_keys): the
rows numpy's ``isin`` finds, in row order, whether the keys are marked in a table over
their range, searched for in a sorted column, or tested in an unsorted one; chunks,
keys outside the range and at int64's ends included; nulls and other types refused."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from tablelog.store import integer_keys
from tablelog.store.integer_keys import IntegerKeys

_INT64 = np.iinfo(np.int64)


def _reference(column: pa.ChunkedArray, wanted: np.ndarray) -> list[int]:
    return np.flatnonzero(np.isin(column.to_numpy(), wanted)).tolist()


def _found(column: pa.ChunkedArray, wanted: np.ndarray) -> list[int]:
    positions = IntegerKeys(np.unique(wanted)).positions(column)
    assert positions is not None
    return positions.tolist()


@pytest.fixture(params=["marked", "searched"])
def way(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "searched":  # no table of marked keys, however few values they span
        monkeypatch.setattr(integer_keys, "_TABLE_BYTES", 0)
        monkeypatch.setattr(integer_keys, "_TABLE_BYTES_PER_KEY", 0)
    return str(request.param)


@pytest.mark.parametrize("wanted_count", [3, 60, 8_000])  # searched key by key, then in one pass
@pytest.mark.parametrize("seed", range(3))
def test_the_rows_found_are_those_isin_finds_in_a_sorted_column(way: str, seed: int, wanted_count: int) -> None:
    rng = np.random.default_rng(seed)
    keys = np.sort(rng.choice(100_000, 5_000, replace=False))
    wanted = np.concatenate([rng.choice(keys, wanted_count // 2), rng.choice(120_000, wanted_count - wanted_count // 2)])
    column = pa.chunked_array([pa.array(keys[:1_700]), pa.array(keys[1_700:])])
    assert _found(column, wanted) == _reference(column, wanted)


def test_the_rows_found_are_those_isin_finds_in_an_unsorted_column(way: str) -> None:
    rng = np.random.default_rng(7)
    column = pa.chunked_array([pa.array(rng.integers(-500, 500, 3_000))])
    wanted = rng.choice(np.arange(-600, 600), 200, replace=False)
    assert _found(column, wanted) == _reference(column, wanted)


def test_a_key_with_several_records_in_a_sorted_column_is_found_at_each(way: str) -> None:
    column = pa.chunked_array([pa.array([1, 2, 2, 2, 5, 7, 7, 9] + list(range(10, 1_000)))])
    assert _found(column, np.array([2, 7, 8])) == [1, 2, 3, 5, 6]


def test_keys_at_the_ends_of_int64_are_found_and_never_wrap_into_the_range(way: str) -> None:
    column = pa.chunked_array([pa.array([int(_INT64.min), -3, 0, 4, int(_INT64.max)], pa.int64())])
    assert _found(column, np.array([-3, 4])) == [1, 3]
    assert _found(column, np.array([int(_INT64.max), -3])) == [1, 4]
    assert _found(column, np.array([int(_INT64.min), 0])) == [0, 2]


def test_narrow_integer_columns_are_found_as_int64() -> None:
    column = pa.chunked_array([pa.array([-120, -5, 3, 100], pa.int8())])
    assert _found(column, np.array([-120, 100, 50], np.int8)) == [0, 3]


def test_no_wanted_keys_find_no_rows() -> None:
    assert IntegerKeys(np.array([], np.int64)).positions(pa.chunked_array([pa.array([1, 2])])).tolist() == []


@pytest.mark.parametrize("column", [
    pa.chunked_array([pa.array([1, None, 3])]),
    pa.chunked_array([pa.array(["1", "2"])]),
], ids=["nulls", "strings"])
def test_a_column_with_nulls_or_not_integer_is_left_to_another_test(column: pa.ChunkedArray) -> None:
    assert IntegerKeys(np.array([1, 3])).positions(column) is None
