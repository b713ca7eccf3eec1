"""Tables with a merge engine (and deduplicate tables with ``changelog-producer = lookup``):
the log carries the table's changelog, not the writes.

Each test checks what a transactional reader returns against a reference written here,
independent of tablelog's merge code: a few lines per engine keep the table's rows by
key, the way Paimon's documentation describes the engine; each snapshot's expected
changes are the per-key diff of the reference before and after it, by the rule of
Paimon's ``lookup`` changelog producer. Writers run sequentially and concurrently (two
attempts computed against the same snapshot, committed one after the other, so that
the second's changes must be computed again by its committer).
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import tablelog
from tablelog.normalize import Normalizer
from tablelog.reading import Change
from tablelog.table import Table
from tablelog.verify import verify

Row = dict[str, Any]
Input = tuple[str, Row]  # (kind, row) as written


# -- the reference: each engine in a few lines ---------------------------------------


def partial_update(old: Row | None, kind: str, new: Row) -> Row | None:
    """Non-null values overwrite."""
    row = dict(old) if old else dict.fromkeys(new)
    row.update({c: v for c, v in new.items() if v is not None})
    return row


def sum_and_count(old: Row | None, kind: str, new: Row) -> Row | None:
    """``total`` and ``n`` are sums; a retraction subtracts; the row stays (with sums)."""
    sign = -1 if kind in ("-D", "-U") else 1
    row = dict(old) if old else {"id": new["id"], "total": None, "n": None}
    for column in ("total", "n"):
        if new[column] is not None:
            row[column] = (row[column] or 0) + sign * new[column]
    return row


def first_row(old: Row | None, kind: str, new: Row) -> Row | None:
    return old if old is not None else dict(new)


def by_event_time(old: Row | None, kind: str, new: Row) -> Row | None:
    """``sequence.field = ts``: a row with an older ``ts`` than the kept one is late and loses."""
    if old is not None and new["ts"] < old["ts"]:
        return old
    return None if kind == "-D" else dict(new)


def last_write(old: Row | None, kind: str, new: Row) -> Row | None:
    return None if kind == "-D" else dict(new)


def expected_changes(before: Row | None, after: Row | None, *, first_row_engine: bool, row_dedup: bool) -> list[tuple[str, Row]]:
    """Paimon's lookup changelog of one key."""
    if first_row_engine:
        return [("+I", after)] if before is None and after is not None else []
    if before is None:
        return [] if after is None else [("+I", after)]
    if after is None:
        return [("-D", before)]
    if row_dedup and before == after:
        return []
    return [("-U", before), ("+U", after)]


class Engine:
    def __init__(
        self, name: str, schema: pa.Schema, options: Mapping[str, str], fold: Callable[[Row | None, str, Row], Row | None],
        inputs: Callable[[random.Random, int], list[Input]],
    ) -> None:
        self.name, self.schema, self.options, self.fold, self.inputs = name, schema, dict(options), fold, inputs

    @property
    def first_row(self) -> bool:
        return self.options.get("merge-engine") == "first-row"

    @property
    def row_dedup(self) -> bool:
        return self.options.get("changelog-producer.row-deduplicate") == "true"


def _id() -> pa.Field:
    return pa.field("id", pa.int64(), nullable=False)


def _partial_inputs(rng: random.Random, n: int) -> list[Input]:
    # two streams: one fills `a`, the other `b`
    return [("+I", {"id": rng.randrange(12), "a": f"a{rng.randrange(5)}", "b": None} if rng.random() < 0.5
             else {"id": rng.randrange(12), "a": None, "b": rng.randrange(5)}) for _ in range(n)]


def _sum_inputs(rng: random.Random, n: int) -> list[Input]:
    return [("-D" if rng.random() < 0.2 else "+I", {"id": rng.randrange(12), "total": rng.randrange(1, 9), "n": 1})
            for _ in range(n)]


def _first_inputs(rng: random.Random, n: int) -> list[Input]:
    return [("+I", {"id": rng.randrange(15), "v": f"v{rng.randrange(100)}"}) for _ in range(n)]


def _late_inputs(rng: random.Random, n: int) -> list[Input]:
    return [("+I", {"id": rng.randrange(12), "ts": rng.randrange(20), "v": f"v{rng.randrange(100)}"}) for _ in range(n)]


def _dedup_inputs(rng: random.Random, n: int) -> list[Input]:
    return [("-D" if rng.random() < 0.15 else "+I", {"id": rng.randrange(12), "v": f"v{rng.randrange(4)}"}) for _ in range(n)]


ENGINES = {
    "partial-update": Engine(
        "partial-update", pa.schema([_id(), ("a", pa.string()), ("b", pa.int64())]),
        {"merge-engine": "partial-update"}, partial_update, _partial_inputs),
    "aggregation": Engine(
        "aggregation", pa.schema([_id(), ("total", pa.int64()), ("n", pa.int64())]),
        {"merge-engine": "aggregation", "fields.total.aggregate-function": "sum", "fields.n.aggregate-function": "sum"},
        sum_and_count, _sum_inputs),
    "first-row": Engine(
        "first-row", pa.schema([_id(), ("v", pa.string())]), {"merge-engine": "first-row"}, first_row, _first_inputs),
    "sequence-field": Engine(
        "sequence-field", pa.schema([_id(), ("ts", pa.int64()), ("v", pa.string())]),
        {"sequence.field": "ts", "changelog-producer": "lookup"}, by_event_time, _late_inputs),
    "lookup-row-deduplicate": Engine(
        "lookup-row-deduplicate", pa.schema([_id(), ("v", pa.string())]),
        {"changelog-producer": "lookup", "changelog-producer.row-deduplicate": "true"}, last_write, _dedup_inputs),
}


def create(warehouse: Path, engine: Engine, **options: str) -> Table:
    return tablelog.create_table(
        str(warehouse), f"db.{engine.name.replace('-', '_')}_{uuid.uuid4().hex[:6]}", engine.schema,
        primary_key=["id"], bucket=2,
        options={"log.system": "filesystem", "log.system.partitions": "2", **engine.options, **options},
    )


class Model:
    """The reference rows, and the changes each commit should bring."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.rows: dict[int, Row] = {}

    def commit(self, writes: Sequence[Input]) -> list[tuple[str, Row]]:
        before = {key: self.rows.get(key) for key in {row["id"] for _, row in writes}}
        for kind, row in writes:
            after = self.engine.fold(self.rows.get(row["id"]), kind, row)
            if after is None:
                self.rows.pop(row["id"], None)
            else:
                self.rows[row["id"]] = after
        changes = []
        for key in sorted(before):
            changes += expected_changes(before[key], self.rows.get(key),
                                        first_row_engine=self.engine.first_row, row_dedup=self.engine.row_dedup)
        return changes


def by_snapshot(changes: Sequence[Change]) -> dict[int, list[tuple[str, Row]]]:
    result: dict[int, list[tuple[str, Row]]] = {}
    for change in changes:
        assert change.snapshot_id is not None
        result.setdefault(change.snapshot_id, []).append((change.kind.value, dict(change.row)))
    return result


def canonical(changes: Sequence[tuple[str, Row]]) -> list[str]:
    """The changes as a multiset (sorted texts): the order of different keys is the log's."""
    return sorted(f"{kind} {sorted(row.items())!r}" for kind, row in changes)


def read_all(table: Table, consistency: str = "transactional") -> list[Change]:
    with table.reader(consistency=consistency, scan_mode="earliest") as reader:
        return reader.read_all(idle_timeout_s=0.3)


def table_rows(table: Table) -> dict[int, Row]:
    return {row["id"]: row for row in table.rows().to_pylist()}


def replay(changes: Sequence[Change]) -> dict[int, Row]:
    state: dict[int, Row] = {}
    for change in changes:
        if change.kind.is_retraction:
            state.pop(change.row["id"], None)
        else:
            state[change.row["id"]] = dict(change.row)
    return state


@pytest.fixture(params=sorted(ENGINES))
def engine(request: pytest.FixtureRequest) -> Iterator[Engine]:
    yield ENGINES[request.param]


def test_each_snapshot_brings_exactly_the_reference_changes_of_its_keys(tmp_path: Path, engine: Engine) -> None:
    """Random writes over 16 commits: one writer, then two attempts computed against the
    same snapshot and committed one after the other (the second's changes are computed
    again by the committer)."""
    table = create(tmp_path, engine)
    model = Model(engine)
    rng = random.Random(29)
    expected: dict[int, list[tuple[str, Row]]] = {}
    for round_ in range(16):
        if round_ % 2 == 0:
            writes = engine.inputs(rng, 10)
            with table.writer(f"w{round_}") as writer:
                writer.write(writes_as_changes(writes))
                result = writer.commit()
            assert result.snapshot_id is not None
            expected[result.snapshot_id] = model.commit(writes)
        else:
            first, second = engine.inputs(rng, 8), engine.inputs(rng, 8)
            tasks = [table.write_task("a", round_), table.write_task("b", round_)]
            tasks[0].write(writes_as_changes(first))
            tasks[1].write(writes_as_changes(second))
            receipts = [t.finish() for t in tasks]  # both against the same snapshot
            for writer_id, receipt, writes in (("a", receipts[0], first), ("b", receipts[1], second)):
                result = table.commit(writer_id, round_, [receipt])
                assert result.snapshot_id is not None
                expected[result.snapshot_id] = model.commit(writes)
    changes = read_all(table)
    got = by_snapshot(changes)
    for snapshot_id, its_changes in expected.items():
        assert canonical(got.get(snapshot_id, [])) == canonical(its_changes), f"snapshot {snapshot_id}"
    assert set(got) <= set(expected)
    assert table_rows(table) == model.rows
    assert replay(changes) == model.rows
    assert verify(table).consistent


def writes_as_changes(writes: Sequence[Input]) -> list[tuple[str, Row]]:
    return [(kind, dict(row)) for kind, row in writes]


def test_eventual_readers_normalized_end_with_the_tables_rows_after_conflicting_commits(tmp_path: Path, engine: Engine) -> None:
    table = create(tmp_path, engine)
    rng = random.Random(7)
    for round_ in range(6):
        tasks = [table.write_task(w, round_) for w in ("a", "b")]
        for task in tasks:
            task.write(writes_as_changes(engine.inputs(rng, 8)))
        receipts = [t.finish() for t in tasks]
        table.commit("a", round_, receipts[:1])
        table.commit("b", round_, receipts[1:])
    normalizer = Normalizer(["id"])
    normalizer.apply(read_all(table, "eventual"))
    assert {row["id"]: dict(row) for row in normalizer.rows()} == table_rows(table)


def test_two_attempts_of_one_commit_writing_the_same_key_get_one_change(tmp_path: Path) -> None:
    engine = ENGINES["partial-update"]
    table = create(tmp_path, engine)
    with table.writer("w") as writer:
        writer.write([{"id": 1, "a": "x", "b": 1}])
        writer.commit()
    tasks = [table.write_task("spark", 1, "0"), table.write_task("spark", 1, "1")]
    tasks[0].write([{"id": 1, "a": "y", "b": None}])
    tasks[1].write([{"id": 1, "a": None, "b": 2}])
    table.commit("spark", 1, [t.finish() for t in tasks])
    changes = [c for c in read_all(table) if c.snapshot_id == 2]
    assert [(c.kind.value, c.row) for c in changes] == [
        ("-U", {"id": 1, "a": "x", "b": 1}), ("+U", {"id": 1, "a": "y", "b": 2})]


def test_a_repeated_first_row_key_reaches_no_reader(tmp_path: Path) -> None:
    table = create(tmp_path, ENGINES["first-row"])
    with table.writer("w") as writer:
        writer.write([{"id": 1, "v": "first"}, {"id": 1, "v": "second"}])
        writer.commit()
        writer.write([{"id": 1, "v": "third"}, {"id": 2, "v": "new"}])
        writer.commit()
    assert [(c.kind.value, c.row["v"]) for c in read_all(table)] == [("+I", "first"), ("+I", "new")]
    assert table_rows(table) == {1: {"id": 1, "v": "first"}, 2: {"id": 2, "v": "new"}}


def test_a_late_event_under_a_sequence_field_leaves_the_row_and_says_so_as_paimon_does(tmp_path: Path) -> None:
    """Without row-deduplicate Paimon's lookup producer emits -U/+U of the unchanged row;
    with it, nothing."""
    for dedup, expected in (("false", [("+I", 5), ("-U", 5), ("+U", 5)]), ("true", [("+I", 5)])):
        table = create(tmp_path, ENGINES["sequence-field"], **{"changelog-producer.row-deduplicate": dedup})
        with table.writer("w") as writer:
            writer.write([{"id": 1, "ts": 5, "v": "new"}])
            writer.commit()
            writer.write([{"id": 1, "ts": 3, "v": "late"}])
            writer.commit()
        assert [(c.kind.value, c.row["ts"]) for c in read_all(table)] == expected
        assert table_rows(table)[1]["v"] == "new"


def test_aggregation_sums_and_counts_with_deletes(tmp_path: Path) -> None:
    table = create(tmp_path, ENGINES["aggregation"])
    with table.writer("w") as writer:
        writer.write([{"id": 1, "total": 5, "n": 1}, {"id": 1, "total": 7, "n": 1}])
        writer.commit()
        writer.write([("-D", {"id": 1, "total": 5, "n": 1})])
        writer.commit()
    assert [(c.kind.value, c.row["total"], c.row["n"]) for c in read_all(table)] == [
        ("+I", 12, 2), ("-U", 12, 2), ("+U", 7, 1)]
    assert table_rows(table) == {1: {"id": 1, "total": 7, "n": 1}}


def test_a_retraction_the_engine_refuses_fails_the_write_and_leaves_nothing(tmp_path: Path) -> None:
    table = create(tmp_path, ENGINES["partial-update"])
    with table.writer("w") as writer:
        writer.write([{"id": 1, "a": "x", "b": 1}])
        writer.commit()
        with pytest.raises(ValueError, match="partial-update"):
            writer.write([("-D", {"id": 1, "a": "x", "b": 1})])
        writer.commit()
    assert len(read_all(table)) == 1
    assert table_rows(table) == {1: {"id": 1, "a": "x", "b": 1}}


def test_a_replayed_commit_leaves_eventual_readers_with_the_tables_rows(tmp_path: Path) -> None:
    """A Spark micro-batch replayed after its driver died: its attempts would compute their
    changes against a table that holds the batch already (sums counted twice); the commit
    is there, so they produce nothing."""
    table = create(tmp_path, ENGINES["aggregation"])
    writes = [{"id": 1, "total": 5, "n": 1}, {"id": 2, "total": 7, "n": 1}]
    for replay_ in (False, True):
        task = table.write_task("spark-query", 1, "p0")
        task.write(writes)
        result = table.commit("spark-query", 1, [task.finish()])
        assert result.committed is not replay_
    eventual = read_all(table, "eventual")
    assert len(eventual) == 2
    normalizer = Normalizer(["id"])
    normalizer.apply(eventual)
    assert {row["id"]: dict(row) for row in normalizer.rows()} == table_rows(table) == {
        1: {"id": 1, "total": 5, "n": 1}, 2: {"id": 2, "total": 7, "n": 1}}
    assert [(c.kind.value, c.row["total"]) for c in read_all(table)] == [("+I", 5), ("+I", 7)]
