"""``Table.reader`` takes typed, documented keywords: none is hidden behind ``**options``,
and option keys go in ``options=`` by their own names."""

from __future__ import annotations

import inspect
from pathlib import Path

import pyarrow as pa
import pytest

from tablelog.errors import OptionError
from tablelog.table import Table
from tablelog.tables import create_table


@pytest.fixture
def table(tmp_path: Path) -> Table:
    return create_table(str(tmp_path / "wh"), "db.t", pa.schema([("id", pa.int64())]), primary_key=["id"],
                        options={"log.system": "filesystem"})


def test_every_keyword_of_table_reader_is_named_and_documented() -> None:
    parameters = inspect.signature(Table.reader).parameters
    assert not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    doc = inspect.getdoc(Table.reader) or ""
    undocumented = [name for name in parameters if name != "self" and f"``{name}``" not in doc]
    assert undocumented == []


def test_a_misspelt_keyword_fails_at_the_call(table: Table) -> None:
    with pytest.raises(TypeError, match="scan_mod"):
        table.reader(scan_mod="earliest")  # type: ignore[call-arg]


def test_option_keys_are_given_by_their_own_names_and_checked(table: Table) -> None:
    with table.reader(scan_mode="earliest", options={"log.reader.pause-gc": "true"}) as reader:
        assert reader.options.log_reader_pause_gc
    with pytest.raises(OptionError, match="scan.mode"):
        table.reader(options={"scan.mood": "earliest"})


def test_the_keywords_win_over_the_same_option_key(table: Table) -> None:
    with table.reader(consistency="eventual", options={"log.consistency": "transactional"}) as reader:
        assert reader.consistency.value == "eventual"


def test_consumer_id_is_a_keyword_of_its_own(table: Table) -> None:
    with table.reader(scan_mode="earliest", consumer_id="billing") as reader:
        assert reader.options.consumer_id == "billing"
