"""A reference of the merge engines for tests, independent of tablelog's merge code
(:mod:`tablelog.merging`): a few lines per engine keep a table's rows by key, the way
Paimon's documentation describes the engine; a commit's expected changes are the per-key
diff of the reference before and after it, by the rule of Paimon's ``lookup`` changelog
producer. Used by the merge-engine tests of every log (tests/core, tests/kafka) and by
:class:`tablelog.testing.merge_scenarios.MergeEngineScenarios`.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from tablelog.reading import Change
from tablelog.table import Table
from tablelog.tables import create_table
from tablelog.writing.writer import Writer

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


def expected_changes(before: Row | None, after: Row | None, *, first_row_engine: bool, row_dedup: bool) -> list[Input]:
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


def create(warehouse: str, engine: Engine, log_options: Mapping[str, str], **options: str) -> Table:
    """A fresh table of ``engine`` (two buckets) on the log ``log_options`` select."""
    return create_table(
        warehouse, f"db.{engine.name.replace('-', '_')}_{uuid.uuid4().hex[:6]}", engine.schema,
        primary_key=["id"], bucket=2, options={**log_options, **engine.options, **options},
    )


class Model:
    """The reference rows, and the changes each commit should bring."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.rows: dict[int, Row] = {}

    def commit(self, writes: Sequence[Input]) -> list[Input]:
        before = {key: self.rows.get(key) for key in {row["id"] for _, row in writes}}
        for kind, row in writes:
            after = self.engine.fold(self.rows.get(row["id"]), kind, row)
            if after is None:
                self.rows.pop(row["id"], None)
            else:
                self.rows[row["id"]] = after
        changes: list[Input] = []
        for key in sorted(before):
            changes += expected_changes(before[key], self.rows.get(key),
                                        first_row_engine=self.engine.first_row, row_dedup=self.engine.row_dedup)
        return changes


def by_snapshot(changes: Sequence[Change]) -> dict[int, list[Input]]:
    result: dict[int, list[Input]] = {}
    for change in changes:
        assert change.snapshot_id is not None
        result.setdefault(change.snapshot_id, []).append((change.kind.value, dict(change.row)))
    return result


def canonical(changes: Sequence[Input]) -> list[str]:
    """The changes as a multiset (sorted texts): the order of different keys is the log's."""
    return sorted(f"{kind} {sorted(row.items())!r}" for kind, row in changes)


def read_all(table: Table, consistency: str = "transactional") -> list[Change]:
    with table.reader(consistency=consistency, scan_mode="earliest") as reader:
        return reader.read_all(idle_timeout_s=0.3)


def table_rows(table: Table) -> dict[int, Row]:
    return {row["id"]: row for row in table.rows().to_pylist()}


def replay(changes: Sequence[Change], start: Mapping[int, Row] | None = None) -> dict[int, Row]:
    """The rows ``changes`` leave, applied to ``start`` (the rows before the first)."""
    state: dict[int, Row] = dict(start or {})
    for change in changes:
        if change.kind.is_retraction:
            state.pop(change.row["id"], None)
        else:
            state[change.row["id"]] = dict(change.row)
    return state


def writes_as_changes(writes: Sequence[Input]) -> list[Input]:
    return [(kind, dict(row)) for kind, row in writes]


def write_and_commit(writer: Writer, model: Model, writes: Sequence[Input], expected: dict[int, list[Input]]) -> int:
    """Commit ``writes`` with ``writer``; their expected changes go to ``expected`` under
    the snapshot's id, which is returned."""
    writer.write(writes_as_changes(writes))
    snapshot_id = writer.commit().snapshot_id
    assert snapshot_id is not None
    expected[snapshot_id] = model.commit(writes)
    return snapshot_id


def assert_changes_are(changes: Sequence[Change], expected: Mapping[int, Sequence[Input]]) -> None:
    """``changes`` are each snapshot's expected changes, every one once and nothing else."""
    assert len(changes) == sum(map(len, expected.values()))
    assert {s: canonical(c) for s, c in by_snapshot(changes).items()} == {
        s: canonical(c) for s, c in expected.items() if c}
