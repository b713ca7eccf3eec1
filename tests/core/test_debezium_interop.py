"""``debezium-json`` records are what Flink's ``debezium-json`` format writes, and a
consumer built for it reads a table's changes from the log correctly.

The reference decoder below is written from Flink's documented rules
(``DebeziumJsonDeserializationSchema``), independently of tablelog's code: only the
``before``/``after``/``op`` fields count (``ts_ms``, ``source`` and anything else are
ignored), ``c`` and ``r`` emit ``+I`` of ``after``, ``u`` emits ``-U`` of ``before``
then ``+U`` of ``after`` (and fails when ``before`` is null), ``d`` emits ``-D`` of
``before``; a ``{"schema", "payload"}`` wrapper is unwrapped with ``schema-include``;
an empty message (a tombstone) is skipped. Values are read the way Flink's JSON format
reads a DOUBLE (``Double.parseDouble`` of the text for a non-number: ``"NaN"``,
``"Infinity"``).
"""

from __future__ import annotations

import json
import math
from typing import Any

import pyarrow as pa
import pytest

import tablelog
from tablelog.formats import record_codec
from tablelog.options import LogFormat
from tablelog.records import RowKind
from tablelog.table import internals

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()), ("score", pa.float64())])


class FlinkDebeziumJsonError(Exception):
    pass


def java_parse_double(value: Any) -> float | None:
    """Flink's JSON DOUBLE: a number as it is, else ``Double.parseDouble`` of the text."""
    if value is None or isinstance(value, int | float):
        return value if value is None else float(value)
    text = str(value).strip()
    specials = {"NaN": math.nan, "Infinity": math.inf, "+Infinity": math.inf, "-Infinity": -math.inf}
    if text in specials:
        return specials[text]
    if text.lower() in ("nan", "inf", "infinity", "-inf", "+inf"):  # Java refuses Python's spellings
        raise FlinkDebeziumJsonError(f"not a Java double: {text!r}")
    return float(text)


def flink_row(doc: Any) -> dict[str, Any]:
    if not isinstance(doc, dict):
        raise FlinkDebeziumJsonError(f"a row must be a JSON object, got {doc!r}")
    return {"id": doc.get("id"), "name": doc.get("name"), "score": java_parse_double(doc.get("score"))}


def flink_decode(message: bytes | None, schema_include: bool = False) -> list[tuple[str, dict[str, Any]]]:
    if not message:
        return []
    doc = json.loads(message)
    if schema_include:
        doc = doc["payload"]
    before, after, op = doc.get("before"), doc.get("after"), doc.get("op")
    if op in ("c", "r"):
        return [("+I", flink_row(after))]
    if op == "u":
        if before is None:
            raise FlinkDebeziumJsonError("the 'before' field of an UPDATE message is null (REPLICA IDENTITY FULL?)")
        return [("-U", flink_row(before)), ("+U", flink_row(after))]
    if op == "d":
        if before is None:
            raise FlinkDebeziumJsonError("the 'before' field of a DELETE message is null")
        return [("-D", flink_row(before))]
    raise FlinkDebeziumJsonError(f'Unknown "op" value "{op}"')


def flink_replay(changes: list[tuple[str, dict[str, Any]]]) -> dict[int, dict[str, Any]]:
    """A Flink upsert materialization keyed by the primary key."""
    state: dict[int, dict[str, Any]] = {}
    for kind, row in changes:
        if kind in ("-U", "-D"):
            state.pop(row["id"], None)
        else:
            state[row["id"]] = row
    return state


def log_values(table: tablelog.Table) -> list[bytes | None]:
    values: list[bytes | None] = []
    with internals(table).open_log() as log:
        for partition in range(internals(table).files.bucket):
            end = log.end_positions([partition])[partition]
            position = 0
            while position < end:
                result = log.fetch(partition, position, 10_000, timeout_s=1.0)
                if not result.records:
                    break
                values.extend(r.value for r in result.records)
                position = result.next_position
    return values


def comparable(state: dict[int, dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted((r["id"], r["name"], "nan" if r["score"] is not None and math.isnan(r["score"]) else r["score"])
                  for r in state.values())


@pytest.mark.parametrize("changelog_mode", ["upsert", "all"])
def test_a_flink_debezium_json_consumer_materializes_the_tables_rows(tmp_path: Any, changelog_mode: str) -> None:
    table = tablelog.create_table(
        str(tmp_path), "db.flink", SCHEMA, primary_key=["id"], bucket=2,
        options={"log.system": "filesystem", "log.changelog-mode": changelog_mode},
    )
    rows = [{"id": i, "name": f"v1-{i}", "score": [0.5, math.nan, math.inf][i % 3]} for i in range(12)]
    with table.writer() as writer:
        writer.write(rows)
        writer.commit()
        writer.write([c for r in rows[:4] for c in (("-U", r), ("+U", {**r, "name": "v2", "score": -math.inf}))])
        writer.write([("-D", r) for r in rows[8:]])
        writer.commit()
    consumed = [c for value in log_values(table) for c in flink_decode(value)]
    assert comparable(flink_replay(consumed)) == comparable({r["id"]: r for r in table.rows().to_pylist()})
    # Flink's rules: additions are creates, retractions deletes; no "u" is ever written
    assert {k for k, _ in consumed} == {"+I", "-D"}


@pytest.mark.parametrize(("kind", "flink_kinds"), [
    (RowKind.INSERT, ["+I"]), (RowKind.UPDATE_AFTER, ["+I"]),
    (RowKind.UPDATE_BEFORE, ["-D"]), (RowKind.DELETE, ["-D"]),
])
def test_each_row_kind_is_written_as_flinks_serializer_writes_it(kind: RowKind, flink_kinds: list[str]) -> None:
    codec = record_codec(SCHEMA, ("id",), LogFormat.DEBEZIUM_JSON)
    value = codec.encode(pa.table({"id": [1], "name": ["a"], "score": [1.5]}, schema=SCHEMA), [kind], 9).values[0]
    doc = json.loads(value)
    row = {"id": 1, "name": "a", "score": 1.5}
    if kind.is_retraction:
        assert (doc["before"], doc["after"], doc["op"]) == (row, None, "d")
    else:
        assert (doc["before"], doc["after"], doc["op"]) == (None, row, "c")
    assert [k for k, _ in flink_decode(value)] == flink_kinds
    assert codec.decode_value(value) == (kind, row)  # tablelog's own readers keep the exact kind


@pytest.mark.parametrize("value", [
    # what tablelog wrote before it followed Flink's serializer (existing topics)
    (b'{"before":null,"after":{"id":1,"name":"a","score":1.5},"op":"c","ts_ms":1}', RowKind.INSERT),
    (b'{"before":null,"after":{"id":1,"name":"a","score":1.5},"op":"u","ts_ms":1}', RowKind.UPDATE_AFTER),
    (b'{"before":{"id":1,"name":"a","score":1.5},"after":null,"op":"u","ts_ms":1}', RowKind.UPDATE_BEFORE),
    (b'{"before":{"id":1,"name":"a","score":1.5},"after":null,"op":"d","ts_ms":1}', RowKind.DELETE),
    # what Flink's serializer and Debezium write
    (b'{"before":null,"after":{"id":1,"name":"a","score":1.5},"op":"c"}', RowKind.INSERT),
    (b'{"before":null,"after":{"id":1,"name":"a","score":1.5},"op":"r","source":{"connector":"mysql"}}',
     RowKind.INSERT),
    (b'{"schema":{"type":"struct"},"payload":{"before":{"id":1,"name":"a","score":1.5},"after":null,"op":"d"}}',
     RowKind.DELETE),
], ids=["old-c", "old-u-after", "old-u-before", "old-d", "flink-c", "debezium-r-with-source", "schema-wrapper"])
def test_records_of_the_old_encoding_and_of_flink_and_debezium_still_decode(value: tuple[bytes, RowKind]) -> None:
    raw, kind = value
    codec = record_codec(SCHEMA, ("id",), LogFormat.DEBEZIUM_JSON)
    row = {"id": 1, "name": "a", "score": 1.5}
    assert codec.decode_value(raw) == (kind, row)
    decoded = codec.values_to_arrow([raw, raw]) if b"payload" not in raw else None
    if decoded is not None:
        assert decoded.to_pylist() == [{"_kind": kind.value, **row}] * 2


@pytest.mark.parametrize("value", [
    b'{"before":null,"after":{"id":1,"name":"a","score":1.5},"op":"d","_kind":"+I"}',
    b'{"before":{"id":1,"name":"a","score":1.5},"after":null,"op":"c","_kind":"-D"}',
    b'{"before":null,"after":null,"op":"c","_kind":"+U"}',
])
def test_a_row_kind_that_contradicts_the_envelope_is_not_a_record_of_ours(value: bytes) -> None:
    codec = record_codec(SCHEMA, ("id",), LogFormat.DEBEZIUM_JSON)
    with pytest.raises(ValueError):
        codec.decode_value(value)
    with pytest.raises(ValueError):
        codec.values_to_arrow([value])
