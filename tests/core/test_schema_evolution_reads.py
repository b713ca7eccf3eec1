"""Records written under an older schema come back in the reader's schema, from every
reader: missing column -> null, renamed -> under its new name (by Paimon field id),
dropped -> gone. Each log record says its schema; writers write with the latest one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest

import tablelog
from tablelog import AddColumn, DropColumn, Normalizer, RenameColumn, WidenColumn
from tablelog.errors import SchemaMismatchError
from tablelog.records import ProduceBatch
from tablelog.table import Table, internals
from tablelog.tables import create_table
from tablelog.verify import verify

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("qty", pa.int32())])


def make(tmp_path: Path, fmt: str = "debezium-json") -> Table:
    return create_table(str(tmp_path / "wh"), "db.t", SCHEMA, primary_key=["id"], bucket=2,
                        options={"log.system": "filesystem", "log.format": fmt})


def write(table: Table, rows: list[Any]) -> None:
    with table.writer() as writer:
        writer.write(rows)
        writer.commit()


def by_id(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: r["id"])


def evolve(table: Table) -> None:
    """Schema 0 rows 1, 2; schema 1 (note added after id, name renamed to label, qty widened)
    rows 3 and an update of 1."""
    write(table, [{"id": 1, "name": "a", "qty": 1}, {"id": 2, "name": "b", "qty": 2}])
    table.alter(AddColumn("note", pa.string(), after="id"), RenameColumn("name", "label"),
                WidenColumn("qty", pa.int64()))
    write(table, [{"id": 3, "note": "n3", "label": "c", "qty": 3}, {"id": 1, "note": "n1", "label": "a2", "qty": 10}])


OLD_IN_NEW = [{"id": 1, "note": None, "label": "a", "qty": 1}, {"id": 2, "note": None, "label": "b", "qty": 2}]
NEW = [{"id": 1, "note": "n1", "label": "a2", "qty": 10}, {"id": 3, "note": "n3", "label": "c", "qty": 3}]
LATEST = [NEW[0], OLD_IN_NEW[1], NEW[1]]


def raw_values(table: Table) -> list[dict[str, Any]]:
    with internals(table).open_log() as log:
        values = []
        for partition in range(2):
            result = log.fetch(partition, 0, 100, 0.1)
            values += [orjson.loads(r.value) for r in result.records]  # type: ignore[arg-type]
    return values


@pytest.mark.parametrize("fmt", ["debezium-json", "json"])
def test_every_log_record_says_the_schema_it_was_written_with(tmp_path: Path, fmt: str) -> None:
    table = make(tmp_path, fmt)
    evolve(table)
    assert sorted(v["_schema"] for v in raw_values(table)) == [0, 0, 1, 1]


def test_a_record_without_a_schema_id_is_read_as_schema_0(tmp_path: Path) -> None:
    table = make(tmp_path)
    table.alter(RenameColumn("name", "label"))
    old_layout = orjson.dumps({"before": None, "after": {"id": 9, "name": "old", "qty": 1}, "op": "c",
                               "ts_ms": 0, "_kind": "+I"})  # as tablelog wrote it before schema ids
    with internals(table).open_log() as log:
        log.ensure_topic()
        log.produce(ProduceBatch(token=internals(table).token_prefix + "old", partition=0, keys=[b'{"id":9}'],
                                 values=[old_layout], timestamp_ms=0))
        log.flush(5)
    with table.reader(consistency="eventual", scan_mode="earliest") as reader:
        assert [c.row for c in reader.read_all(idle_timeout_s=0.2)] == [{"id": 9, "label": "old", "qty": 1}]


@pytest.mark.parametrize("fmt", ["debezium-json", "json", "arrow"])
@pytest.mark.parametrize("consistency", ["transactional", "eventual"])
def test_a_reader_from_the_start_returns_old_records_in_the_new_schema(
    tmp_path: Path, fmt: str, consistency: str
) -> None:
    table = make(tmp_path, fmt)
    evolve(table)
    with table.reader(consistency=consistency, scan_mode="earliest") as reader:
        rows = [c.row for c in reader.read_all(idle_timeout_s=0.2)]
    assert by_id(rows[:2]) == OLD_IN_NEW and by_id(rows[2:]) == NEW


@pytest.mark.parametrize("fmt", ["debezium-json", "arrow"])
def test_poll_arrow_returns_old_records_in_the_new_schema(tmp_path: Path, fmt: str) -> None:
    table = make(tmp_path, fmt)
    evolve(table)
    with table.reader(scan_mode="earliest") as reader:
        batch = reader.poll_arrow(timeout_s=0.5)
        while batch.num_rows < 4:
            batch = pa.concat_tables([batch, reader.poll_arrow(timeout_s=0.5)])
    assert batch.schema.names == ["_kind", "id", "note", "label", "qty"]
    assert batch.schema.field("qty").type == pa.int64()
    rows = [{k: v for k, v in r.items() if k != "_kind"} for r in batch.to_pylist()]
    assert by_id(rows[:2]) == OLD_IN_NEW and by_id(rows[2:]) == NEW


@pytest.mark.parametrize("consistency", ["transactional", "eventual"])
def test_a_streaming_reader_spanning_an_alter_returns_the_new_columns_from_the_first_snapshot_with_them(
    tmp_path: Path, consistency: str
) -> None:
    table = make(tmp_path)
    with table.reader(consistency=consistency, scan_mode="latest") as reader:
        reader.poll(timeout_s=0.1)
        write(table, [{"id": 1, "name": "a", "qty": 1}])
        before = [c.row for c in reader.read_all(idle_timeout_s=0.2)]
        assert before == [{"id": 1, "name": "a", "qty": 1}] and reader.schema_id == 0
        other = tablelog.open_table(table.warehouse.path, table.identifier)  # another process, say
        other.alter(AddColumn("note", pa.string()), RenameColumn("name", "label"))
        write(other, [{"id": 2, "label": "b", "qty": 2, "note": "x"}])
        after = [c.row for c in reader.read_all(idle_timeout_s=0.2)]
    assert after == [{"id": 2, "label": "b", "qty": 2, "note": "x"}]
    assert reader.schema_id == 1 and reader.schema.names == ["id", "label", "qty", "note"]


def test_a_transactional_reader_moves_to_a_snapshot_s_schema_even_before_a_record_of_it(tmp_path: Path) -> None:
    table = make(tmp_path)
    stale = tablelog.open_table(table.warehouse.path, table.identifier)
    stale_writer = stale.writer()
    stale_writer.write([{"id": 5, "name": "e", "qty": 5}])  # schema 0, committed after the alter
    table.alter(AddColumn("note", pa.string()))
    stale_writer.commit()
    stale_writer.close()
    with table.reader(scan_mode="earliest") as reader:
        assert [c.row for c in reader.read_all(idle_timeout_s=0.2)] == [{"id": 5, "name": "e", "qty": 5, "note": None}]


def test_a_hybrid_reader_returns_the_rows_of_an_older_snapshot_in_the_new_schema(tmp_path: Path) -> None:
    table = make(tmp_path)
    write(table, [{"id": 1, "name": "a", "qty": 1}, {"id": 2, "name": "b", "qty": 2}])
    table.alter(AddColumn("note", pa.string(), after="id"), RenameColumn("name", "label"))
    with table.reader(scan_mode="latest-full") as reader:  # snapshot 1 was taken under schema 0
        full = [c.row for c in reader.read_all(idle_timeout_s=0.2)]
        write(table, [{"id": 3, "note": "n", "label": "c", "qty": 3}])
        later = [c.row for c in reader.read_all(idle_timeout_s=0.2)]
    assert by_id(full) == [{"id": 1, "note": None, "label": "a", "qty": 1}, {"id": 2, "note": None, "label": "b", "qty": 2}]
    assert later == [{"id": 3, "note": "n", "label": "c", "qty": 3}]


@pytest.mark.parametrize("fmt", ["debezium-json", "arrow"])
@pytest.mark.parametrize("consistency", ["transactional", "eventual"])
def test_a_reader_resumed_from_a_position_saved_before_an_alter_returns_the_rest_in_the_new_schema(
    tmp_path: Path, consistency: str, fmt: str
) -> None:
    table = make(tmp_path, fmt)
    write(table, [{"id": 1, "name": "a", "qty": 1}])
    with table.reader(consistency=consistency, scan_mode="latest") as reader:
        saved = reader.position.to_json()
    write(table, [{"id": 2, "name": "b", "qty": 2}])
    table.alter(RenameColumn("name", "label"), DropColumn("qty"))
    write(table, [{"id": 3, "label": "c"}])
    with table.reader(saved) as reader:
        rows = [c.row for c in reader.read_all(idle_timeout_s=0.2)]
    assert rows == [{"id": 2, "label": "b"}, {"id": 3, "label": "c"}]


def test_a_dropped_column_added_again_does_not_bring_back_the_old_values(tmp_path: Path) -> None:
    table = make(tmp_path)
    write(table, [{"id": 1, "name": "a", "qty": 1}])
    table.alter(DropColumn("qty"))
    table.alter(AddColumn("qty", pa.int64()))
    with table.reader(scan_mode="earliest") as reader:
        assert [c.row for c in reader.read_all(idle_timeout_s=0.2)] == [{"id": 1, "name": "a", "qty": None}]


def test_a_reader_pinned_to_a_schema_returns_newer_records_in_it(tmp_path: Path) -> None:
    table = make(tmp_path)
    evolve(table)
    with table.reader(scan_mode="earliest", schema_id=0) as reader:
        rows = [c.row for c in reader.read_all(idle_timeout_s=0.2)]
    assert by_id(rows[2:]) == [{"id": 1, "name": "a2", "qty": 10}, {"id": 3, "name": "c", "qty": 3}]


def test_verify_replays_a_log_written_under_several_schemas(tmp_path: Path) -> None:
    table = make(tmp_path)
    evolve(table)
    table.alter(DropColumn("note"))
    write(table, [{"id": 2, "label": "b2", "qty": 20}])
    report = verify(tablelog.open_table(table.warehouse.path, table.identifier))
    assert report.consistent, report.summary()


def test_normalize_across_an_alter_keeps_renamed_values_and_emits_no_false_update(tmp_path: Path) -> None:
    table = make(tmp_path)
    with table.reader(consistency="eventual", scan_mode="earliest") as reader:
        normalizer = Normalizer(table.primary_key, reader=reader)
        write(table, [{"id": 1, "name": "a", "qty": 1}])
        assert [c.kind.value for c in normalizer.apply(reader.read_all(idle_timeout_s=0.2))] == ["+I"]
        table.alter(RenameColumn("name", "label"))
        write(table, [{"id": 1, "label": "a", "qty": 1}, {"id": 2, "label": "b", "qty": 2}])  # 1: a duplicate
        out = normalizer.apply(reader.read_all(idle_timeout_s=0.2))
    assert [(c.kind.value, c.row) for c in out] == [("+I", {"id": 2, "label": "b", "qty": 2})]
    assert by_id(list(normalizer.rows())) == by_id([dict(r) for r in table.rows().to_pylist()])


def test_a_writer_opened_before_an_alter_writes_with_the_new_schema(tmp_path: Path) -> None:
    table = make(tmp_path)
    stale = tablelog.open_table(table.warehouse.path, table.identifier)
    table.alter(AddColumn("note", pa.string()))
    write(stale, [{"id": 1, "name": "a", "qty": 1}])  # without the new column: null there
    write(stale, [{"id": 2, "name": "b", "qty": 2, "note": "x"}])
    assert stale.schema.names == ["id", "name", "qty", "note"]
    assert by_id(table.rows().to_pylist()) == [
        {"id": 1, "name": "a", "qty": 1, "note": None}, {"id": 2, "name": "b", "qty": 2, "note": "x"}]
    assert sorted(v["_schema"] for v in raw_values(table)) == [1, 1]


def test_a_writer_opened_before_a_rename_refuses_the_old_name_and_writes_nothing(tmp_path: Path) -> None:
    table = make(tmp_path)
    stale = tablelog.open_table(table.warehouse.path, table.identifier)
    table.alter(RenameColumn("name", "label"))
    with stale.writer() as writer, pytest.raises(SchemaMismatchError, match=r"missing columns \['label'\]; "
                                                  r"unknown columns \['name'\]"):
        writer.write([{"id": 1, "name": "a", "qty": 1}])
    assert internals(table).files.latest_snapshot() is None and raw_values(table) == []


def test_data_without_a_nullable_column_writes_null_there(tmp_path: Path) -> None:
    table = make(tmp_path)
    write(table, [{"id": 1, "qty": 1}])
    assert table.rows().to_pylist() == [{"id": 1, "name": None, "qty": 1}]


def test_verify_of_a_table_opened_before_an_alter_compares_in_the_latest_schema(tmp_path: Path) -> None:
    table = make(tmp_path)
    stale = tablelog.open_table(table.warehouse.path, table.identifier)
    write(table, [{"id": 1, "name": "a", "qty": 1}])
    table.alter(RenameColumn("name", "label"))
    write(table, [{"id": 2, "label": "b", "qty": 2}])
    report = verify(stale)
    assert report.consistent, report.summary()


def test_create_table_with_exist_ok_names_alter_for_a_schema_that_differs(tmp_path: Path) -> None:
    table = make(tmp_path)
    table.alter(AddColumn("note", pa.string()))
    with pytest.raises(SchemaMismatchError, match="Columns change only by Table.alter"):
        create_table(table.warehouse.path, "db.t", SCHEMA, primary_key=["id"], bucket=2,
                     options={"log.system": "filesystem"}, exist_ok=True)


def test_a_reader_pinned_to_an_older_schema_names_a_widened_value_it_cannot_hold(tmp_path: Path) -> None:
    table = make(tmp_path)
    write(table, [{"id": 1, "name": "a", "qty": 1}])
    table.alter(WidenColumn("qty", pa.int64()))
    write(table, [{"id": 2, "name": "b", "qty": 5_000_000_000}])
    with pytest.raises(SchemaMismatchError, match=r"column 'qty': a value written under schema 1 \(int64\) does "
                                                  r"not fit the reader's schema 0 \(int32\)"):
        internals(table).files.read_rows(None, None, schema_id=0)
