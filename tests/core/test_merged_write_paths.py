"""A merged-changelog write computes its common cases in Arrow (keys the table does not
hold, keys it holds once: tablelog.writing.merged, merged_arrow) and the rest row by row;
both must give exactly what the row-by-row fold and lookup give for every key. Pure
logic: the table's records come from a stand-in for the store's key lookup."""

from __future__ import annotations

import random
import types
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pytest

from tablelog.merging import KeyValue, MergeError, MergeOptions, parse_merge_options
from tablelog.records import RowKind
from tablelog.store.key_records import record_schema, records_by_key
from tablelog.writing.merged import NEWEST, PendingRows, key_changes, merged_write

SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False), pa.field("n", pa.int32()), pa.field("x", pa.float64()),
    pa.field("s", pa.string()), pa.field("b", pa.bool_()), pa.field("region", pa.string(), nullable=False),
])
#: The primary keys the writes are checked with: one column, and two of different types.
PRIMARY_KEYS = {"one column": ["id"], "two columns": ["region", "id"]}
_CODES = {RowKind.INSERT: 0, RowKind.UPDATE_BEFORE: 1, RowKind.UPDATE_AFTER: 2, RowKind.DELETE: 3}

TABLES: dict[str, dict[str, str]] = {
    "partial-update": {"merge-engine": "partial-update"},
    "partial-update, row-deduplicate": {"merge-engine": "partial-update", "changelog-producer.row-deduplicate": "true"},
    "aggregation": {
        "merge-engine": "aggregation", "fields.n.aggregate-function": "sum", "fields.x.aggregate-function": "max",
        "fields.s.aggregate-function": "last_non_null_value", "fields.b.aggregate-function": "bool_or",
    },
    "aggregation, first values": {
        "merge-engine": "aggregation", "fields.n.aggregate-function": "min", "fields.x.aggregate-function": "sum",
        "fields.s.aggregate-function": "first_non_null_value", "fields.b.aggregate-function": "bool_and",
    },
    "aggregation, listagg": {"merge-engine": "aggregation", "fields.s.aggregate-function": "listagg",
                             "fields.default-aggregate-function": "last_value"},
    "deduplicate, lookup": {"changelog-producer": "lookup"},
    "first-row": {"merge-engine": "first-row"},
}


class StoredRecords:
    """The store's key lookup over a list of records."""

    def __init__(self, records: Sequence[KeyValue], options: MergeOptions) -> None:
        self.options = options
        rows = [{**r.row, "_SEQUENCE_NUMBER": r.sequence, "_VALUE_KIND": _CODES[r.kind]} for r in records]
        self.table = pa.Table.from_pylist(rows, schema=record_schema(options))

    def latest_snapshot(self) -> Any:
        return types.SimpleNamespace(id=1)

    def key_record_table(self, snapshot_id: int | None, keys: pa.Table, buckets: Any = None) -> pa.Table:
        columns = self.options.primary_key
        wanted = set(zip(*(keys.column(c).to_pylist() for c in columns), strict=True))
        held = zip(*(self.table.column(c).to_pylist() for c in columns), strict=True)
        return self.table.filter(pa.array([key in wanted for key in held], pa.bool_()))


def random_row(rng: random.Random, key: int) -> dict[str, Any]:
    def maybe(value: Any) -> Any:
        return None if rng.random() < 0.3 else value

    return {"id": key // 2, "region": "ab"[key % 2], "n": maybe(rng.randint(-5, 5)), "x": maybe(rng.choice([0.5, -1.25, 2.0])),
            "s": maybe(rng.choice(["a", "b", " ", "c,d"])), "b": maybe(rng.random() < 0.5)}


def row_by_row(options: MergeOptions, stored: Sequence[KeyValue], pending: PendingRows) -> tuple[Any, ...]:
    """What the fold and the lookup give, key by key (the reference)."""
    keys, folded = pending.fold(SCHEMA)
    records = {k: v for k, v in records_by_key(StoredRecords(stored, options).table, options).items() if k in set(keys)}
    new = {key: [KeyValue(r.kind, r.row, NEWEST)] for key, r in zip(keys, folded, strict=True)}
    rows, kinds = key_changes(keys, records, new, options)
    return ([dict(r.row) for r in folded], [r.kind for r in folded], [dict(r) for r in rows], kinds)


@pytest.mark.parametrize("key", list(PRIMARY_KEYS))
@pytest.mark.parametrize("name", list(TABLES))
def test_a_merged_write_gives_the_row_by_row_records_and_changes(name: str, key: str) -> None:
    options = parse_merge_options(TABLES[name], SCHEMA, PRIMARY_KEYS[key])
    rng = random.Random(name + key)
    for _ in range(40):
        stored: list[KeyValue] = []
        for key in range(12):
            for sequence in range(rng.choice([0, 0, 1, 1, 1, 2, 3])):
                kind = rng.choice([RowKind.INSERT] * 4 + [RowKind.UPDATE_AFTER, RowKind.DELETE])
                stored.append(KeyValue(kind, random_row(rng, key), 100 * key + sequence))
        rng.shuffle(stored)  # files hold a key's records in any order
        pending = PendingRows(options, "t")
        for _ in range(rng.randint(1, 3)):
            rows = [random_row(rng, rng.randrange(16)) for _ in range(rng.randint(1, 10))]
            kinds = [rng.choice([RowKind.INSERT] * 5 + [RowKind.UPDATE_AFTER, RowKind.DELETE]) for _ in rows]
            try:
                pending.add(pa.Table.from_pylist(rows, schema=SCHEMA), kinds)
            except MergeError:
                continue
        if pending.empty:
            continue
        try:
            expected: Any = row_by_row(options, stored, pending)
        except MergeError as err:
            expected = type(err)
        try:
            write = merged_write(StoredRecords(stored, options), SCHEMA, pending)  # type: ignore[arg-type]
            got: Any = (write.records.to_pylist(), write.kinds, write.changes.to_pylist(), write.change_kinds)
        except MergeError as err:
            got = type(err)
        assert got == expected


def test_a_sum_that_overflows_is_refused_as_row_by_row() -> None:
    options = parse_merge_options(
        {"merge-engine": "aggregation", "fields.n.aggregate-function": "sum"}, SCHEMA, ["id"])  # Arrow's path
    stored = [KeyValue(RowKind.INSERT, {"id": 1, "n": 2**31 - 1, "x": None, "s": None, "b": None, "region": "a"}, 1)]
    pending = PendingRows(options, "t")
    pending.add(pa.Table.from_pylist([{"id": 1, "n": 1, "region": "a"}], schema=SCHEMA), [RowKind.INSERT])
    with pytest.raises(MergeError, match="overflow"):
        merged_write(StoredRecords(stored, options), SCHEMA, pending)  # type: ignore[arg-type]
