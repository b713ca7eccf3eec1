"""Reader positions name their table and topic: a position of another table, or one
ahead of the table, is refused; positions saved before they named their table still
work. Tables have a stable id, stored when they are created, derived for older ones."""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tablelog.errors import OptionError, ReaderPositionError
from tablelog.identity import TABLE_ID_PROPERTY
from tablelog.table import Table, internals
from tablelog.tables import create_table, open_table

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def _table(warehouse: Path, name: str | None = None, **options: str) -> Table:
    return create_table(
        str(warehouse), name or f"db.t_{uuid.uuid4().hex[:8]}", SCHEMA, primary_key=["id"], bucket=2,
        options={"log.system": "filesystem", **options},
    )


def _write(table: Table, ids: range) -> None:
    with table.writer() as writer:
        writer.write([{"id": i, "name": f"n{i}"} for i in ids])
        writer.commit()


def _ids(changes: list[Any]) -> list[int]:
    return sorted(c.row["id"] for c in changes)


def _without_identity(position: str) -> str:
    """A position without its table and topic (no release saved one)."""
    doc = json.loads(position)
    doc.pop("table"), doc.pop("topic")
    return json.dumps(doc)


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    return tmp_path / "wh"


# -- positions name their table ------------------------------------------------------


def test_a_position_names_its_table_and_topic(warehouse: Path) -> None:
    table = _table(warehouse)
    with table.reader(consistency="eventual") as reader:
        doc = json.loads(reader.position.to_json())
    assert doc["table"] == table.table_id
    assert doc["topic"] == f"filesystem:{table.topic}"


@pytest.mark.parametrize("consistency", ["transactional", "eventual"])
def test_a_position_from_another_table_is_refused(warehouse: Path, consistency: str) -> None:
    first, second = _table(warehouse), _table(warehouse)
    for table in (first, second):
        _write(table, range(10))
    with first.reader(consistency=consistency, scan_mode="earliest") as reader:
        reader.read_all(idle_timeout_s=0.2)
        saved = reader.position.to_json()
    with pytest.raises(ReaderPositionError, match=re.escape(second.table_id)):
        second.reader(position=saved)
    with pytest.raises(ReaderPositionError, match="another table"):
        second.reader(position=json.loads(saved))  # a dict, as JSON loads it


def test_a_position_object_from_another_tables_reader_is_refused(warehouse: Path) -> None:
    first, second = _table(warehouse), _table(warehouse)
    with first.reader(consistency="eventual") as reader:
        position = reader.position
    with pytest.raises(ReaderPositionError, match="another table"):
        second.reader(position=position)


def test_a_position_of_another_topic_is_refused(warehouse: Path) -> None:
    table = _table(warehouse)
    with table.reader(consistency="eventual") as reader:
        doc = json.loads(reader.position.to_json())
    doc["topic"] = "filesystem:db.elsewhere"
    with pytest.raises(ReaderPositionError, match="db.elsewhere"):
        table.reader(position=doc)


def test_a_position_of_a_table_dropped_and_created_again_is_refused(warehouse: Path) -> None:
    table = _table(warehouse, "db.orders")
    _write(table, range(5))
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        reader.read_all(idle_timeout_s=0.2)
        saved = reader.position.to_json()
    shutil.rmtree(internals(table).files.path)
    again = _table(warehouse, "db.orders")  # on the same topic, which still holds the old records
    with pytest.raises(ReaderPositionError, match="another table"):
        again.reader(position=saved)


# -- positions ahead of the table ----------------------------------------------------


@pytest.mark.parametrize("consistency", ["transactional", "eventual"])
def test_a_position_at_a_snapshot_the_table_does_not_have_is_refused(warehouse: Path, consistency: str) -> None:
    table = _table(warehouse)
    _write(table, range(3))
    with pytest.raises(ReaderPositionError, match="snapshot 9999, ahead of table .* latest snapshot is 1"):
        table.reader(position={"table": table.table_id, "consistency": consistency, "snapshot": 9999})


def test_an_eventual_position_past_the_end_of_the_log_is_refused(warehouse: Path) -> None:
    table = _table(warehouse)
    _write(table, range(10))
    reader = table.reader(position={"table": table.table_id, "consistency": "eventual", "snapshot": 1,
                                    "offsets": {"0": 10**9}})
    with reader, pytest.raises(ReaderPositionError, match=r"log position 1000000000 of partition 0, past the end"):
        reader.poll()


def test_a_position_in_a_partition_the_log_does_not_have_is_refused(warehouse: Path) -> None:
    table = _table(warehouse)
    with pytest.raises(ReaderPositionError, match=r"partition\(s\) \[7\].*partitions 0..1"):
        table.reader(position={"table": table.table_id, "consistency": "eventual", "snapshot": 0,
                               "offsets": {"0": 0, "7": 0}})


@pytest.mark.parametrize("consistency", ["transactional", "eventual"])
def test_a_reader_of_a_partition_the_log_does_not_have_is_refused(warehouse: Path, consistency: str) -> None:
    table = _table(warehouse)
    _write(table, range(4))
    with pytest.raises(OptionError, match=r"partitions=\[5\]: the log of table .* has partitions 0..1"):
        table.reader(consistency=consistency, partitions=[0, 5])


def test_a_transactional_position_inside_a_snapshot_the_table_does_not_have_is_refused(warehouse: Path) -> None:
    table = _table(warehouse)
    _write(table, range(4))
    with pytest.raises(ReaderPositionError, match="inside snapshot 2, which table"):
        table.reader(position={"table": table.table_id, "consistency": "transactional", "snapshot": 1,
                               "offsets": {"0": 0}})


def test_nothing_is_read_when_a_position_is_refused(warehouse: Path) -> None:
    """The refusal comes before any record is returned (and leaves the table alone)."""
    table = _table(warehouse)
    _write(table, range(4))
    before = internals(table).files.latest_snapshot()
    with pytest.raises(ReaderPositionError):
        table.reader(position={"table": table.table_id, "consistency": "transactional", "snapshot": 9999})
    assert internals(table).files.latest_snapshot() == before


# -- positions without their table ----------------------------------------------------


@pytest.mark.parametrize("consistency", ["transactional", "eventual"])
def test_a_position_without_its_table_is_refused_saying_so(warehouse: Path, consistency: str) -> None:
    table = _table(warehouse)
    _write(table, range(10))
    with table.reader(consistency=consistency, scan_mode="earliest") as reader:
        reader.read_all(idle_timeout_s=0.2)
        saved = _without_identity(reader.position.to_json())
    with pytest.raises(OptionError, match="it has no 'table'"):
        table.reader(position=saved)


@pytest.mark.parametrize(
    ("position", "reason"),
    [
        ('{"snapshot": 9999}', "it has no 'consistency'"),
        ({"consistency": "transactional"}, "it has no 'snapshot'"),
        ('{"consistency": "sometimes", "snapshot": 1}', "consistency 'sometimes' is none of 'transactional', 'eventual'"),
        ("[1, 2]", "it is a JSON list, not an object"),
        ("{not json", "Expecting property name"),
    ],
)
def test_a_malformed_position_is_refused_saying_what_it_lacks_and_what_a_position_is(
    warehouse: Path, position: Any, reason: str
) -> None:
    table = _table(warehouse)
    with pytest.raises(OptionError) as refused:
        table.reader(position=position)
    message = str(refused.value)
    assert f"invalid reader position {position!r}: {reason}" in message
    assert "position.to_json()" in message and "scan.mode" in message


# -- the table id ------------------------------------------------------------------------


def test_a_table_gets_an_id_when_created_and_keeps_it(warehouse: Path) -> None:
    table = _table(warehouse)
    assert uuid.UUID(table.table_id)
    assert internals(table).files.properties[TABLE_ID_PROPERTY] == table.table_id
    _write(table, range(3))
    assert open_table(str(warehouse), table.identifier).table_id == table.table_id
    assert _table(warehouse).table_id != table.table_id


def test_the_table_id_is_not_an_option_users_can_set(warehouse: Path) -> None:
    with pytest.raises(Exception, match="tablelog.table-id"):
        _table(warehouse, **{TABLE_ID_PROPERTY: "mine"})


def _make_legacy(table: Table) -> None:
    """Strip the stored id, as a table created before ids has none."""
    path = os.path.join(internals(table).files.path, "schema", "schema-0")
    with open(path) as f:
        doc = json.load(f)
    del doc["options"][TABLE_ID_PROPERTY]
    with open(path, "w") as f:
        json.dump(doc, f, indent=2)


def test_a_table_created_before_ids_gets_one_derived_from_its_first_schema(warehouse: Path) -> None:
    table = _table(warehouse, "db.old")
    _make_legacy(table)
    reopened = open_table(str(warehouse), "db.old")
    assert TABLE_ID_PROPERTY not in internals(reopened).files.properties
    derived = reopened.table_id
    assert uuid.UUID(derived) and derived != table.table_id
    assert open_table(str(warehouse), "db.old").table_id == derived  # stable


def test_a_derived_table_id_survives_a_rename_and_a_schema_change(warehouse: Path) -> None:
    table = _table(warehouse, "db.old", **{"filesystem.topic": "old-topic"})
    _make_legacy(table)
    derived = open_table(str(warehouse), "db.old").table_id
    os.rename(internals(table).files.path, os.path.join(os.path.dirname(internals(table).files.path), "renamed"))
    renamed = open_table(str(warehouse), "db.renamed")
    assert renamed.table_id == derived
    from pypaimon.schema.schema_change import SchemaChange

    renamed.warehouse.catalog.alter_table("db.renamed", [SchemaChange.set_option("file.format", "parquet")], False)
    assert open_table(str(warehouse), "db.renamed").table_id == derived


def test_positions_of_a_legacy_table_name_its_derived_id(warehouse: Path) -> None:
    table = _table(warehouse, "db.old")
    _make_legacy(table)
    legacy = open_table(str(warehouse), "db.old")
    _write(legacy, range(5))
    with legacy.reader(consistency="transactional", scan_mode="earliest") as reader:
        reader.read_all(idle_timeout_s=0.2)
        saved = reader.position.to_json()
    assert json.loads(saved)["table"] == legacy.table_id
    _write(legacy, range(5, 8))
    with open_table(str(warehouse), "db.old").reader(position=saved) as reader:
        assert _ids(reader.read_all(idle_timeout_s=0.2)) == [5, 6, 7]
