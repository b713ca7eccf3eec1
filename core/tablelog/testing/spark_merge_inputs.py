"""The input of the Spark merge-engine scenarios (:mod:`tablelog.testing.spark_merge_scenarios`),
and a reference of each engine written apart from :mod:`tablelog.merging`: what the table
should hold, and the changes each commit should bring.

Four tables, fed by streaming queries of two micro-batches of two JSON files each (two
Spark tasks per micro-batch):

- ``partial_update``: two queries, one filling column ``a``, the other ``b``, of overlapping keys;
- ``sums``: aggregation, ``total`` summed and ``n`` (1 per event) summed as a count, with
  ``-D`` rows that retract an event;
- ``first_row``: keys repeated within a file, across files and across micro-batches;
- ``by_event_time``: ``sequence.field = ts``, events arriving late (smaller ``ts``).

Where both tasks of a micro-batch write a key, the inputs keep the table's result
independent of which task Spark runs first (the same first row; sums; distinct ``ts``),
so the reference has one answer.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs
import pyarrow as pa

Row = dict[str, Any]
Batches = tuple[tuple[tuple[Row, ...], ...], ...]  # per micro-batch, per file: rows with ``_kind``


# -- the reference: what each engine keeps, per Paimon's documentation --------------------


def fill_non_null(old: Row | None, kind: str, new: Row) -> Row | None:
    return {c: (v if v is not None else (old or {}).get(c)) for c, v in new.items()}


def add_up(old: Row | None, kind: str, new: Row) -> Row | None:
    sign = 1 if kind in ("+I", "+U") else -1
    previous = old or {"total": None, "n": None}
    summed = {c: previous[c] if new[c] is None else (previous[c] or 0) + sign * new[c] for c in ("total", "n")}
    return {"id": new["id"], **summed}


def keep_first(old: Row | None, kind: str, new: Row) -> Row | None:
    return new if old is None else old


def newest_event(old: Row | None, kind: str, new: Row) -> Row | None:
    if old is not None and old["ts"] > new["ts"]:
        return old  # late
    return None if kind == "-D" else new


def lookup_changes(before: Row | None, after: Row | None, first_row: bool) -> list[tuple[str, Row]]:
    """Paimon's ``lookup`` changelog producer, for one key of one commit."""
    if before == after is None:
        return []
    if before is None:
        return [("+I", after)]  # type: ignore[list-item]
    if first_row:
        return []
    return [("-D", before)] if after is None else [("-U", before), ("+U", after)]


@attrs.frozen
class MergeStream:
    """One streaming query into a table: its writer id, its input's Spark schema, its input."""

    writer: str
    schema: str
    batches: Batches

    def writes(self, commit_identifier: int) -> list[tuple[str, Row]]:
        """The (kind, row) of micro-batch ``commit_identifier - 1``, file by file."""
        return [(row["_kind"], {k: v for k, v in row.items() if k != "_kind"})
                for rows in self.batches[commit_identifier - 1] for row in rows]


@attrs.frozen
class MergeTable:
    """A table of the scenarios: its columns, its merge options, its reference, its queries."""

    name: str
    columns: pa.Schema
    options: dict[str, str]
    keep: Callable[[Row | None, str, Row], Row | None]
    streams: tuple[MergeStream, ...]

    @property
    def identifier(self) -> str:
        return f"db.{self.name}"

    def stream(self, writer: str) -> MergeStream:
        (stream,) = [s for s in self.streams if s.writer == writer]
        return stream


class Reference:
    """A table's rows as the reference keeps them, commit by commit."""

    def __init__(self, table: MergeTable) -> None:
        self.table = table
        self.rows: dict[Any, Row] = {}

    def commit(self, writes: Sequence[tuple[str, Row]]) -> list[tuple[str, Row]]:
        """Apply one commit's writes; the changes it brings, key by key."""
        before = {row["id"]: self.rows.get(row["id"]) for _, row in writes}
        for kind, row in writes:
            full = {name: row.get(name) for name in self.table.columns.names}
            kept = self.table.keep(self.rows.get(row["id"]), kind, full)
            if kept is None:
                self.rows.pop(row["id"], None)
            else:
                self.rows[row["id"]] = kept
        first_row = self.table.options.get("merge-engine") == "first-row"
        return [change for key, old in before.items()
                for change in lookup_changes(old, self.rows.get(key), first_row)]


# -- the inputs ---------------------------------------------------------------------------


def _files(*files: list[Row]) -> tuple[tuple[Row, ...], ...]:
    return tuple(tuple(rows) for rows in files)


def _fill(column: str, key_ranges: Sequence[range], value: Callable[[int, int], Any]) -> Batches:
    """A stream filling ``column``: micro-batch b writes ``value(b, id)`` for the ids of
    ``key_ranges[b]``, even ids in one file and odd in the other."""
    return tuple(
        _files(*([{"_kind": "+I", "id": i, column: value(b, i)} for i in ids if i % 2 == f] for f in (0, 1)))
        for b, ids in enumerate(key_ranges))


def _events() -> Batches:
    """Events of 7 keys (``total`` 1..9, ``n`` 1), each file of the second micro-batch
    retracting (``-D``) one event of the first; both files of a micro-batch hold the same keys."""
    rng = random.Random(29)
    batches: list[tuple[tuple[Row, ...], ...]] = []
    for b in range(2):
        files = []
        for f in (0, 1):
            rows = [{"_kind": "+I", "id": rng.randrange(7), "total": rng.randrange(1, 10), "n": 1} for _ in range(8)]
            if b:
                earlier = [row for row in batches[-1][f] if row["_kind"] == "+I"]
                rows.insert(rng.randrange(len(rows)), {**rng.choice(earlier), "_kind": "-D"})
            files.append(rows)
        batches.append(_files(*files))
    return tuple(batches)


def _repeated_keys() -> Batches:
    """Each file writes its keys' first value ``b<batch>-<id>`` (the same in both files),
    then the same keys again with other values: only a key's first value ever stays."""
    keys = [range(0, 8), range(4, 12)]
    return tuple(
        _files(*(
            [{"_kind": "+I", "id": i, "v": f"b{b}-{i}"} for i in ids if i % 3 != f]
            + [{"_kind": "+I", "id": i, "v": f"b{b}-f{f}-again"} for i in ids if i % 3 != f]
            for f in (0, 1)))
        for b, ids in enumerate(keys))


def _late_events() -> Batches:
    """Events of 6 keys with distinct event times drawn at random: many arrive after a newer one."""
    rng = random.Random(7)
    times = iter(rng.sample(range(1000), 24))
    return tuple(
        _files(*([{"_kind": "+I", "id": rng.randrange(6), "ts": next(times), "v": f"b{b}-f{f}-{j}"}
                  for j in range(6)] for f in (0, 1)))
        for b in range(2))


def _key() -> pa.Field:
    return pa.field("id", pa.int64(), nullable=False)


MERGE_TABLES = (
    MergeTable(
        "partial_update", pa.schema([_key(), ("a", pa.string()), ("b", pa.int64())]),
        {"merge-engine": "partial-update"}, fill_non_null,
        (MergeStream("fill-a", "id long, a string, _kind string",
                     _fill("a", [range(0, 10), range(5, 15)], lambda b, i: f"a{b}-{i}")),
         MergeStream("fill-b", "id long, b long, _kind string",
                     _fill("b", [range(5, 15), range(0, 12)], lambda b, i: 10 * i + b)))),
    MergeTable(
        "sums", pa.schema([_key(), ("total", pa.int64()), ("n", pa.int64())]),
        {"merge-engine": "aggregation", "fields.total.aggregate-function": "sum",
         "fields.n.aggregate-function": "sum"}, add_up,
        (MergeStream("events", "id long, total long, n long, _kind string", _events()),)),
    MergeTable(
        "first_row", pa.schema([_key(), ("v", pa.string())]), {"merge-engine": "first-row"}, keep_first,
        (MergeStream("events", "id long, v string, _kind string", _repeated_keys()),)),
    MergeTable(
        "by_event_time", pa.schema([_key(), ("ts", pa.int64()), ("v", pa.string())]),
        {"sequence.field": "ts", "changelog-producer": "lookup"}, newest_event,
        (MergeStream("events", "id long, ts long, v string, _kind string", _late_events()),)),
)


def write_stream_input(directory: Path, stream: MergeStream) -> Path:
    """The stream's files, modification times in micro-batch order (the file source's order)."""
    directory.mkdir(parents=True, exist_ok=True)
    now = time.time() - 1000
    for b, files in enumerate(stream.batches):
        for f, rows in enumerate(files):
            path = directory / f"batch{b}-file{f}.json"
            path.write_text("".join(json.dumps(row) + "\n" for row in rows))
            os.utime(path, (now + b * 10 + f, now + b * 10 + f))
    return directory
