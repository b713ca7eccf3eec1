"""A merged-changelog attempt computed in parts (tablelog.writing.merged_parts): keys
parted by bucket, each part looked up and merged in a worker thread while the writer
encodes the part before. Together the parts hold exactly the records and changes of one
computation; a part that fails fails the write with nothing sent to the log."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import tablelog
from tablelog.merging import MergeError
from tablelog.records import RowKind
from tablelog.table import Table, internals
from tablelog.testing.merge_reference import read_all
from tablelog.writing import merged_parts
from tablelog.writing.merged import PendingRows, merged_write
from tablelog.writing.merged_parts import merged_in_parts
from tablelog.writing.write_task import WriteTask

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("n", pa.int32()), pa.field("s", pa.string())])
TABLES = {
    "partial-update": {"merge-engine": "partial-update"},
    "aggregation": {"merge-engine": "aggregation", "fields.n.aggregate-function": "sum",
                    "fields.s.aggregate-function": "listagg"},
}


@pytest.fixture(autouse=True)
def small_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(merged_parts, "MIN_PART_ROWS", 16)


def _table(tmp_path: Path, options: dict[str, str]) -> Table:
    return tablelog.create_table(str(tmp_path), "db.t", SCHEMA, primary_key=["id"], bucket=4,
                                 options={"log.system": "filesystem", **options})


def _rows(rng: random.Random, count: int, keys: int) -> list[dict[str, Any]]:
    return [{"id": rng.randrange(keys), "n": rng.choice([None, rng.randrange(100)]),
             "s": rng.choice([None, f"v{rng.randrange(9)}"])} for _ in range(count)]


def _per_key(table: pa.Table, kinds: list[RowKind]) -> Counter[tuple[Any, ...]]:
    return Counter((row["id"], kind.value, tuple(sorted(row.items())))
                   for row, kind in zip(table.to_pylist(), kinds, strict=True))


@pytest.mark.parametrize("name", sorted(TABLES))
def test_the_parts_together_hold_the_records_and_changes_of_one_computation(tmp_path: Path, name: str) -> None:
    table = _table(tmp_path, TABLES[name])
    rng = random.Random(5)
    with table.writer() as writer:
        writer.write(_rows(rng, 300, 400))
        writer.commit()
    files = internals(table).files
    options = files.merge_options
    pending = PendingRows(options, "db.t")
    for kind in (RowKind.INSERT, RowKind.UPDATE_AFTER):
        pending.add(pa.Table.from_pylist(_rows(rng, 200, 500), schema=SCHEMA), [kind] * 200)

    parts = list(merged_in_parts(files, SCHEMA, pending))
    whole = merged_write(files, SCHEMA, pending)

    assert len(parts) > 1
    assert {p.base_snapshot for p in parts} == {whole.base_snapshot}
    assert sum((_per_key(p.records, p.kinds) for p in parts), Counter()) == _per_key(whole.records, whole.kinds)
    assert sum((_per_key(p.changes, p.change_kinds) for p in parts), Counter()) == _per_key(
        whole.changes, whole.change_kinds)
    held = [set(p.records.column("id").to_pylist()) for p in parts]
    assert all(not a & b for i, a in enumerate(held) for b in held[i + 1:])  # a key is in one part


def test_a_part_that_fails_fails_the_write_with_nothing_sent_and_nothing_committed(tmp_path: Path) -> None:
    table = _table(tmp_path, {"merge-engine": "aggregation", "fields.n.aggregate-function": "sum"})
    with table.writer() as writer:
        writer.write([{"id": k, "n": 2**31 - 1 if k == 7 else 1, "s": None} for k in range(200)])
        writer.commit()
    before = read_all(table, "eventual")
    latest = [s.id for s in table.snapshots()]
    with table.writer() as writer:
        writer.write([{"id": k, "n": 1, "s": None} for k in range(200)])  # key 7's sum overflows
        with pytest.raises(MergeError, match="overflow"):
            writer.commit()
    assert read_all(table, "eventual") == before
    assert [s.id for s in table.snapshots()] == latest


def _data_files(warehouse: Path) -> set[str]:
    return {p.name for p in (warehouse / "db.db" / "t").rglob("data-*")}


def test_files_written_beside_a_produce_that_fails_are_deleted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = _table(tmp_path, TABLES["partial-update"])
    with table.writer() as writer:
        writer.write([{"id": k, "n": k, "s": None} for k in range(100)])
        writer.commit()
    before = _data_files(tmp_path)

    def produce_fails(*args: Any) -> None:
        raise RuntimeError("the log is gone")

    task = table.write_task("w", 1)
    task.write([{"id": k, "n": None, "s": "x"} for k in range(50, 150)])
    monkeypatch.setattr(WriteTask, "_produce", produce_fails)
    with pytest.raises(RuntimeError, match="the log is gone"):
        task.finish()
    assert _data_files(tmp_path) == before
    assert read_all(table, "eventual") and len(table.rows()) == 100
