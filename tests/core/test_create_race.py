"""Creators of one table at the same time: exactly one creates it, the others get the
error of creating a table that exists (or, with ``exist_ok``, the table the winner made).
The S3 twin of these tests is in tests/cluster/test_s3_warehouse.py."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import tablelog
from tablelog.errors import TableExistsError
from tablelog.store import Warehouse

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])
CREATORS = 4


def create_at_once(warehouse: str, options: Mapping[str, str] | None = None,
                   **kwargs: Any) -> list[tablelog.Table | Exception]:
    """What each of ``CREATORS`` threads got from creating ``db.t`` at the same moment."""
    start = threading.Barrier(CREATORS)

    def create(_: int) -> tablelog.Table | Exception:
        start.wait()
        try:
            return tablelog.create_table(warehouse, "db.t", SCHEMA, primary_key=["id"], options=options, **kwargs)
        except Exception as err:  # counted by the caller
            return err

    with ThreadPoolExecutor(CREATORS) as pool:
        return list(pool.map(create, range(CREATORS)))


def assert_one_created_and_the_others_told_it_exists(warehouse: str, results: list[Any],
                                                     options: Mapping[str, str] | None = None) -> None:
    created = [r for r in results if isinstance(r, tablelog.Table)]
    refused = [r for r in results if not isinstance(r, tablelog.Table)]
    assert len(created) == 1, results
    assert [type(r) for r in refused] == [TableExistsError] * (CREATORS - 1), refused
    assert {str(r) for r in refused} == {f"table 'db.t' already exists in warehouse {warehouse!r}"}
    assert tablelog.open_table(warehouse, "db.t", options).table_id == created[0].table_id


def test_of_creators_of_one_table_at_once_one_creates_it_and_the_others_are_told_it_exists(tmp_path: Path) -> None:
    for round_ in range(3):
        warehouse = str(tmp_path / f"wh{round_}")
        assert_one_created_and_the_others_told_it_exists(warehouse, create_at_once(warehouse))


def test_creators_with_exist_ok_at_once_all_get_the_one_table(tmp_path: Path) -> None:
    warehouse = str(tmp_path / "wh")
    results = create_at_once(warehouse, exist_ok=True)
    assert all(isinstance(r, tablelog.Table) for r in results), results
    assert len({r.table_id for r in results}) == 1


def test_a_creator_that_finds_the_table_made_since_it_looked_is_told_it_exists(tmp_path: Path) -> None:
    # The race's loser without its timing: the store is asked to create a table that
    # another creator made after this one checked (pypaimon raised its own exception).
    warehouse = Warehouse(str(tmp_path / "wh"))
    first = warehouse.create("db.t", SCHEMA, ("id",), 1, {"note": "first"})
    with pytest.raises(TableExistsError, match=f"table 'db.t' already exists in warehouse '{warehouse.path}'"):
        warehouse.create("db.t", SCHEMA, ("id",), 1, {"note": "second"})
    assert warehouse.open("db.t").properties["note"] == "first" == first.properties["note"]
