"""The ``debezium-json`` envelope: which row kind a value is, and which of its fields holds the row.

``debezium-json`` values follow Flink's ``debezium-json`` format, which is what
Paimon's log system wrote (Flink's ``DebeziumJsonSerializationSchema``): an
addition (``+I``, ``+U``) is a create, a retraction (``-U``, ``-D``) a delete::

    +I  {"before": null, "after": {...}, "op": "c", "ts_ms": ..., "_kind": "+I", "_schema": 0}
    +U  {"before": null, "after": {...}, "op": "c", "ts_ms": ..., "_kind": "+U", "_schema": 0}
    -U  {"before": {...}, "after": null, "op": "d", "ts_ms": ..., "_kind": "-U", "_schema": 0}
    -D  {"before": {...}, "after": null, "op": "d", "ts_ms": ..., "_kind": "-D", "_schema": 0}

``ts_ms`` is Debezium's event time (Flink reads it as the ``ingestion-timestamp``
metadata); ``_kind`` is the exact row kind for tablelog's readers, and ``_schema`` the
id of the table schema the row was written with (Paimon's ``schema-<id>``): fields
Flink's and Debezium's consumers ignore. A value without ``_schema`` (another writer's,
such as Flink's) is read in the table's first schema. Reading also takes what Flink's
deserializer takes (``op`` ``"r"`` for a snapshot read, a ``source`` block, the
``{"schema", "payload"}`` wrapper) and Debezium's update shapes (``op`` ``"u"`` with only
``after`` for ``+U``, only ``before`` for ``-U``); without ``_kind`` the kind follows from
``op``.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from tablelog.formats.codec import KIND_COLUMN
from tablelog.records import RowKind

#: Flink's debezium-json ops: additions are creates, retractions deletes.
OP_BY_VALUE = {k.value: ("d" if k.is_retraction else "c") for k in RowKind}
RETRACTION_VALUES = [k.value for k in RowKind if k.is_retraction]
KIND_VALUES = [k.value for k in RowKind]
_KIND_BY_VALUE = {k.value: k for k in RowKind}

#: For each ``_kind`` value: the row kind, the field holding its row, the op it goes with
#: (one look-up per record on the reader's path, instead of enum properties).
ENVELOPE_BY_KIND = {
    k.value: (k, "before" if k.is_retraction else "after", OP_BY_VALUE[k.value]) for k in RowKind
}


def debezium_change(doc: dict[str, Any]) -> tuple[RowKind, dict[str, Any]]:
    """Row kind and JSON-level row of one Debezium envelope (see the module docstring);
    raises ValueError when it is none."""
    known = ENVELOPE_BY_KIND.get(doc.get(KIND_COLUMN))  # type: ignore[arg-type]
    if known is not None:  # what tablelog writes
        written, field, written_op = known
        row = doc.get(field)
        if type(row) is dict and doc.get("op") == written_op:
            return written, row
        raise ValueError(f"a {written.value} record needs op {written_op!r} and its row in {field}")
    payload = doc.get("payload")
    if "op" not in doc and isinstance(payload, dict):
        doc = payload  # Debezium's {"schema": ..., "payload": ...} wrapper
    op = doc.get("op")
    after, before = doc.get("after"), doc.get("before")
    kind = _KIND_BY_VALUE.get(doc.get(KIND_COLUMN))  # type: ignore[arg-type]
    if kind is not None:
        row = before if kind.is_retraction else after
        if isinstance(row, dict) and op == OP_BY_VALUE[kind.value]:
            return kind, row
        raise ValueError(f"a {kind.value} record needs op {OP_BY_VALUE[kind.value]!r} and its row "
                         f"in {'before' if kind.is_retraction else 'after'}")
    if op in ("c", "r") and isinstance(after, dict):
        return RowKind.INSERT, after
    if op == "u" and isinstance(after, dict):
        return RowKind.UPDATE_AFTER, after
    if op == "u" and isinstance(before, dict):
        return RowKind.UPDATE_BEFORE, before
    if op == "d" and isinstance(before, dict):
        return RowKind.DELETE, before
    raise ValueError(f"not a Debezium envelope (op={op!r})")


def debezium_columns(parsed: pa.Table, width: int) -> tuple[pa.Array, list[pa.ChunkedArray]]:
    """Row kinds and row columns of parsed Debezium envelopes; the same rules as
    :func:`debezium_change`, column-wise."""
    op = parsed.column("op")
    after, before = parsed.column("after"), parsed.column("before")
    has_after, has_before = pc.is_valid(after), pc.is_valid(before)
    update = pc.equal(op, "u")
    conditions = pc.make_struct(
        pc.and_(pc.is_in(op, pa.array(["c", "r"])), has_after),
        pc.and_(update, has_after),
        pc.and_(update, has_before),
        pc.and_(pc.equal(op, "d"), has_before),
    )
    by_op = pc.case_when(conditions, *(pa.scalar(k.value) for k in
                                       (RowKind.INSERT, RowKind.UPDATE_AFTER, RowKind.UPDATE_BEFORE, RowKind.DELETE)))
    given = parsed.column(KIND_COLUMN)
    if given.null_count == len(given):
        kinds = by_op  # another writer's records (Flink's, Debezium's): no _kind
    else:
        retraction = pc.is_in(given, pa.array(RETRACTION_VALUES))
        shaped = pc.if_else(
            retraction,
            pc.and_(pc.equal(op, "d"), has_before),
            pc.and_(pc.equal(op, "c"), has_after),
        )
        valid = pc.and_(pc.is_in(given, pa.array(KIND_VALUES)), shaped)
        kinds = pc.if_else(pc.is_null(given), by_op, pc.if_else(valid, given, pa.scalar(None, pa.string())))
    if isinstance(kinds, pa.ChunkedArray):
        kinds = kinds.combine_chunks()
    if kinds.null_count:
        raise ValueError("a value is not a Debezium envelope of a row")
    from_before = pc.is_in(kinds, pa.array(RETRACTION_VALUES))
    columns = [
        pc.if_else(from_before, pc.struct_field(before, [i]), pc.struct_field(after, [i])) for i in range(width)
    ]
    return kinds, columns
