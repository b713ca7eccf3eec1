"""A table whose log carries the merged changelog (a merge engine, or
``changelog-producer = lookup``) holds the writers' inputs in its snapshots' delta files
(partial rows, rows written again). Where a snapshot's changes are read from the files
(another writer's commit, a log range retention deleted, the relay), they are the diff
of the table's merged rows before and after it, per key of its delta: what Paimon's
``lookup`` changelog producer emits, row-deduplicate on or off. On the file log; every
change is counted."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import tablelog
from tablelog.commit.retention import truncate_log
from tablelog.relay import Relay
from tablelog.store import commit_rows
from tablelog.table import Table, internals
from tablelog.testing import NO_COMPACTION
from tablelog.testing.relay_scenarios import log_values
from tablelog.verify import verify

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("a", pa.string()), ("b", pa.int64())])


def make_table(tmp_path: Path, bucket: int = 2, row_deduplicate: bool | None = None, **options: str) -> Table:
    if row_deduplicate is not None:
        options["changelog-producer.row-deduplicate"] = str(row_deduplicate).lower()
    return tablelog.create_table(
        str(tmp_path), "db.t", SCHEMA, primary_key=["id"], bucket=bucket,
        options={"log.system": "filesystem", "log.changelog-mode": "all", **NO_COMPACTION, **options},
    )


def write(table: Table, rows: list[dict[str, Any]]) -> None:
    with table.writer() as writer:
        writer.write(rows)
        writer.commit()


def changes_read(table: Table) -> Counter[tuple[int, str, int, str | None, int | None]]:
    """Every change a transactional reader from the first snapshot returns, counted."""
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        changes = reader.read_all()
    return Counter((c.snapshot_id, c.kind.value, c.row["id"], c.row["a"], c.row["b"]) for c in changes)


def test_another_writers_partial_update_reaches_a_transactional_reader_as_the_merged_update(tmp_path: Path) -> None:
    table = make_table(tmp_path, **{"merge-engine": "partial-update"})
    write(table, [{"id": 1, "a": "x", "b": None}, {"id": 2, "a": "y", "b": 1}])
    # Another Paimon writer fills column b of key 1 and inserts key 3.
    commit_rows(table.warehouse, table.identifier, [{"id": 1, "a": None, "b": 7}, {"id": 3, "a": "z", "b": None}])
    assert changes_read(table) == Counter([
        (1, "+I", 1, "x", None), (1, "+I", 2, "y", 1),
        (2, "-U", 1, "x", None), (2, "+U", 1, "x", 7), (2, "+I", 3, "z", None),
    ])
    report = verify(table)  # the replay of the log and the foreign diff ends as the merged table
    assert report.consistent, report.summary()
    assert report.changes_replayed == 5


def test_another_writers_partial_update_of_a_partitioned_table_is_read_in_its_table_partition(tmp_path: Path) -> None:
    schema = pa.schema([pa.field("day", pa.string(), nullable=False), *SCHEMA])
    table = tablelog.create_table(
        str(tmp_path), "db.p", schema, primary_key=["day", "id"], partition_keys=["day"], bucket=2,
        options={"log.system": "filesystem", "log.changelog-mode": "all", "merge-engine": "partial-update"},
    )
    write(table, [{"day": "d1", "id": 1, "a": "x", "b": None}, {"day": "d2", "id": 1, "a": "q", "b": 1}])
    commit_rows(table.warehouse, table.identifier, [{"day": "d1", "id": 1, "a": None, "b": 7}])
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        changes = Counter((c.snapshot_id, c.kind.value, *c.row.values()) for c in reader.read_all())
    assert changes == Counter([
        (1, "+I", "d1", 1, "x", None), (1, "+I", "d2", 1, "q", 1),
        (2, "-U", "d1", 1, "x", None), (2, "+U", "d1", 1, "x", 7),
    ])


def test_the_lost_range_fallback_of_a_partial_update_table_returns_the_merged_changes(tmp_path: Path) -> None:
    table = make_table(tmp_path, bucket=1, **{"merge-engine": "partial-update", "filesystem.segment-bytes": "1"})
    write(table, [{"id": 1, "a": "x", "b": None}])
    write(table, [{"id": 1, "a": None, "b": 7}])  # a partial row: the delta holds it as written
    lost_up_to = json.loads(internals(table).files.snapshot(2).properties["tablelog.log.end-positions"])  # type: ignore[union-attr]
    write(table, [{"id": 2, "a": "y", "b": 2}])
    with internals(table).open_log() as log:
        truncate_log(internals(table), log, {int(p): end for p, end in lost_up_to.items()})  # retention
    assert changes_read(table) == Counter([
        (1, "+I", 1, "x", None), (2, "-U", 1, "x", None), (2, "+U", 1, "x", 7), (3, "+I", 2, "y", 2),
    ])


@pytest.mark.parametrize("row_deduplicate", [False, True], ids=["row-deduplicate-off", "row-deduplicate-on"])
def test_a_row_another_writer_writes_again_unchanged_is_an_update_unless_row_deduplicate(
    tmp_path: Path, row_deduplicate: bool,
) -> None:
    table = make_table(tmp_path, row_deduplicate=row_deduplicate, **{"changelog-producer": "lookup"})
    write(table, [{"id": 1, "a": "x", "b": 1}, {"id": 2, "a": "y", "b": 2}])
    commit_rows(table.warehouse, table.identifier, [{"id": 1, "a": "x", "b": 1}, {"id": 2, "a": "y2", "b": 2}])
    same = [] if row_deduplicate else [(2, "-U", 1, "x", 1), (2, "+U", 1, "x", 1)]
    assert changes_read(table) == Counter([
        (1, "+I", 1, "x", 1), (1, "+I", 2, "y", 2), *same, (2, "-U", 2, "y", 2), (2, "+U", 2, "y2", 2),
    ])


def relayed(table: Table) -> Counter[tuple[str, str | None, str | None]]:
    """What a plain consumer of the log reads (op, before, after), after a relay step."""
    with Relay(internals(table)) as relay:
        assert relay.step().relayed
    documents = [json.loads(value) for value in log_values(table)]
    return Counter((d["op"], json.dumps(d["before"]), json.dumps(d["after"])) for d in documents)


@pytest.mark.parametrize("row_deduplicate", [False, True], ids=["row-deduplicate-off", "row-deduplicate-on"])
def test_the_relay_of_a_partial_update_table_publishes_the_merged_changes(tmp_path: Path, row_deduplicate: bool) -> None:
    table = make_table(tmp_path, row_deduplicate=row_deduplicate, **{"merge-engine": "partial-update"})
    write(table, [{"id": 1, "a": "x", "b": None}, {"id": 2, "a": "y", "b": 2}])
    # Another writer fills b of key 1 and writes nulls only (no change) over key 2.
    commit_rows(table.warehouse, table.identifier, [{"id": 1, "a": None, "b": 7}, {"id": 2, "a": None, "b": None}])
    x, y = {"id": 1, "a": "x", "b": None}, {"id": 2, "a": "y", "b": 2}
    written = [("c", None, x), ("c", None, y)]  # tablelog's commit
    # debezium-json: a -U is a "d" of the old row, a +U a "c" of the new one.
    merged = [("d", x, None), ("c", None, {**x, "b": 7})]
    unchanged = [] if row_deduplicate else [("d", y, None), ("c", None, y)]
    assert relayed(table) == Counter(
        (op, json.dumps(before), json.dumps(after)) for op, before, after in [*written, *merged, *unchanged]
    )
