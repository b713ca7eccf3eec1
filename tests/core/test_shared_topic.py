"""Two tables on one topic: refused at create within a warehouse, and readers never
return another table's records anyway (tables of two warehouses may share a topic)."""

from __future__ import annotations

import re
import shutil
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tablelog.errors import ForeignRecordError, OptionError
from tablelog.store import Warehouse
from tablelog.table import Table, internals
from tablelog.tables import create_table

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def _table(warehouse: Path, name: str, **options: str) -> Table:
    return create_table(str(warehouse), name, SCHEMA, primary_key=["id"], bucket=2,
                        options={"log.system": "filesystem", **options})


def _write(table: Table, ids: range, tag: str) -> None:
    with table.writer() as writer:
        writer.write([{"id": i, "name": tag} for i in ids])
        writer.commit()


def _names(changes: list[Any]) -> set[str]:
    return {c.row["name"] for c in changes}


@pytest.fixture
def shared(tmp_path: Path) -> dict[str, str]:
    """Options that put a table on one file-log topic shared across warehouses."""
    return {"filesystem.path": str(tmp_path / "logs"), "filesystem.topic": "shared"}


# -- refused at create ---------------------------------------------------------------------


def test_a_second_table_on_the_same_topic_is_refused_at_create(tmp_path: Path) -> None:
    _table(tmp_path / "wh", "db.first", **{"filesystem.topic": "orders"})
    with pytest.raises(OptionError, match=re.escape(
        "table 'db.second': filesystem topic 'orders' is already the log of table 'db.first'"
    )) as raised:
        _table(tmp_path / "wh", "db.second", **{"filesystem.topic": "orders"})
    assert "filesystem.topic" in str(raised.value)
    assert not Warehouse(str(tmp_path / "wh")).exists("db.second")  # nothing created


def test_a_topic_named_after_another_tables_default_topic_is_refused(tmp_path: Path) -> None:
    _table(tmp_path / "wh", "db.first")  # topic 'db.first', derived from its name
    with pytest.raises(OptionError, match="already the log of table 'db.first'"):
        _table(tmp_path / "wh", "other.second", **{"filesystem.topic": "db.first"})


def test_one_topic_name_in_two_log_directories_is_two_topics(tmp_path: Path) -> None:
    _table(tmp_path / "wh", "db.first", **{"filesystem.topic": "t", "filesystem.path": str(tmp_path / "a")})
    _table(tmp_path / "wh", "db.second", **{"filesystem.topic": "t", "filesystem.path": str(tmp_path / "b")})


def test_tables_without_a_log_share_nothing(tmp_path: Path) -> None:
    for name in ("db.first", "db.second"):
        create_table(str(tmp_path / "wh"), name, SCHEMA, primary_key=["id"])


# -- readers keep only their own table's records ---------------------------------------------


def test_writer_tokens_carry_the_tables_tag(tmp_path: Path) -> None:
    table = _table(tmp_path / "wh", "db.t")
    task = table.write_task("w", 1)
    assert task.token.startswith(internals(table).token_prefix) and len(task.token) == len(internals(table).token_prefix) + 16
    task.abort()


def test_an_eventual_reader_keeps_only_its_own_tables_records(tmp_path: Path, shared: dict[str, str]) -> None:
    mine = _table(tmp_path / "wh1", "db.t", **shared)
    theirs = _table(tmp_path / "wh2", "db.t", **shared)  # another warehouse: allowed
    _write(mine, range(10), "mine")
    _write(theirs, range(20), "theirs")
    _write(mine, range(10, 15), "mine")
    with mine.reader(consistency="eventual", scan_mode="earliest") as reader:
        changes = reader.read_all(idle_timeout_s=0.2)
        assert _names(changes) == {"mine"} and len(changes) == 15
        assert reader.other_tables_skipped == 20
        assert reader.foreign_skipped == 0


def test_another_tables_records_are_skipped_even_when_foreign_records_fail(
    tmp_path: Path, shared: dict[str, str],
) -> None:
    """They are a tablelog table's records, not foreign bytes: log.foreign-records=fail
    (the default) does not apply to them."""
    mine = _table(tmp_path / "wh1", "db.t", **shared, **{"log.foreign-records": "fail"})
    theirs = _table(tmp_path / "wh2", "db.t", **shared)
    _write(theirs, range(5), "theirs")
    _write(mine, range(3), "mine")
    with mine.reader(consistency="eventual", scan_mode="earliest") as reader:
        assert _names(reader.read_all(idle_timeout_s=0.2)) == {"mine"}


def test_a_transactional_reader_returns_only_its_own_commits(tmp_path: Path, shared: dict[str, str]) -> None:
    mine = _table(tmp_path / "wh1", "db.t", **shared)
    theirs = _table(tmp_path / "wh2", "db.t", **shared)
    _write(mine, range(10), "mine")
    _write(theirs, range(20), "theirs")
    _write(mine, range(10, 15), "mine")
    with mine.reader(consistency="transactional", scan_mode="earliest") as reader:
        changes = reader.read_all(idle_timeout_s=0.2)
    assert _names(changes) == {"mine"} and sorted(c.row["id"] for c in changes) == list(range(15))


def test_an_eventual_hybrid_read_keeps_only_its_own_tables_records(tmp_path: Path, shared: dict[str, str]) -> None:
    mine = _table(tmp_path / "wh1", "db.t", **shared)
    theirs = _table(tmp_path / "wh2", "db.t", **shared)
    _write(mine, range(3), "mine")
    with mine.reader(consistency="eventual") as reader:  # latest-full
        assert len(reader.read_all(idle_timeout_s=0.2)) == 3
        _write(theirs, range(7), "theirs")
        _write(mine, range(3, 5), "mine")
        later = reader.read_all(idle_timeout_s=0.2)
    assert _names(later) == {"mine"} and len(later) == 2


def test_a_table_created_again_on_the_old_tables_topic_does_not_read_its_records(tmp_path: Path) -> None:
    old = _table(tmp_path / "wh", "db.orders")
    _write(old, range(10), "old")
    shutil.rmtree(internals(old).files.path)  # dropped; its topic keeps its records
    new = _table(tmp_path / "wh", "db.orders")
    _write(new, range(3), "new")
    with new.reader(consistency="eventual", scan_mode="earliest") as reader:
        assert _names(reader.read_all(idle_timeout_s=0.2)) == {"new"}
        assert reader.other_tables_skipped == 10


def test_an_eventual_reader_treats_a_record_whose_token_carries_no_table_tag_as_foreign(tmp_path: Path) -> None:
    # No tablelog release writes a token without a table tag: such a record is foreign,
    # refused by default, skipped and counted with log.foreign-records=skip.
    table = _table(tmp_path / "wh", "db.t")
    task = table.write_task("w", 1)
    task.token = uuid.uuid4().hex[:16]
    task.write([{"id": i, "name": "untagged"} for i in range(4)])
    task.finish()
    _write(table, range(4, 6), "tagged")
    with table.reader(consistency="eventual", scan_mode="earliest") as reader, \
            pytest.raises(ForeignRecordError, match="carries no table tag"):
        reader.read_all(idle_timeout_s=0.2)
    with table.reader(consistency="eventual", scan_mode="earliest",
                      options={"log.foreign-records": "skip"}) as reader:
        changes = reader.read_all(idle_timeout_s=0.2)
    assert sorted(c.row["id"] for c in changes) == [4, 5]
    assert _names(changes) == {"tagged"}
