"""Which key each row holds, as its place among distinct keys (tablelog.writing.key_places):
the same answer as Python tuples give, whatever the key's columns and types."""

from __future__ import annotations

import datetime
import random
from typing import Any

import pyarrow as pa
import pytest

from tablelog.writing.key_places import first_rows, places

KEYS: dict[str, tuple[list[str], Any]] = {
    "an integer column": (["k"], lambda rng: {"k": rng.randrange(-5, 30)}),
    "a small integer column": (["k"], lambda rng: {"k": rng.randrange(0, 9)}),
    "a string column": (["k"], lambda rng: {"k": rng.choice(["a", "b", "", "é", "a "])}),
    "a date column": (["k"], lambda rng: {"k": datetime.date(2024, 1, rng.randrange(1, 9))}),
    "two columns": (["p", "k"], lambda rng: {"p": rng.choice("xy"), "k": rng.randrange(0, 6)}),
}


def _rows(name: str, seed: int) -> tuple[pa.Table, list[str]]:
    columns, make = KEYS[name]
    rng = random.Random(f"{name}{seed}")
    rows = [make(rng) for _ in range(rng.randrange(1, 60))]
    table = pa.Table.from_pylist(rows)
    if name == "a small integer column":
        table = table.cast(pa.schema([pa.field("k", pa.int8())]))
    return table, columns


@pytest.mark.parametrize("name", list(KEYS))
def test_first_rows_and_places_are_those_python_tuples_give(name: str) -> None:
    for seed in range(20):
        table, columns = _rows(name, seed)
        tuples = list(zip(*(table.column(c).to_pylist() for c in columns), strict=True))
        first_of: dict[Any, int] = {}
        for row, key in enumerate(tuples):
            first_of.setdefault(key, row)
        first, counts = first_rows(table, columns)
        assert first.tolist() == list(first_of.values())
        assert counts.tolist() == [tuples.count(key) for key in first_of]
        keys = table.select(columns).take(pa.array(first))
        assert places(table, keys).tolist() == [list(first_of).index(key) for key in tuples]


def test_a_row_whose_key_is_not_among_the_keys_is_an_error() -> None:
    with pytest.raises(ValueError, match="not among the keys"):
        places(pa.table({"k": [1, 2]}), pa.table({"k": [1]}))
