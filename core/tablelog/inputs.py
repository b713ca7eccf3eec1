"""Turn what users hand a writer (Arrow, pandas, rows) into an Arrow table of the
table's schema plus row kinds, or a clear error that names the problem."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from tablelog.errors import SchemaMismatchError
from tablelog.formats import KIND_COLUMN
from tablelog.records import RowKind

_KIND_VALUES = {k.value: k for k in RowKind}


def to_arrow(data: Any) -> pa.Table:
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if type(data).__module__.startswith("pandas"):
        return pa.Table.from_pandas(data, preserve_index=False)
    if isinstance(data, Sequence):
        return pa.Table.from_pylist([_row_with_kind(item) for item in data])
    raise SchemaMismatchError(
        f"cannot write {type(data).__name__}: pass a pyarrow Table or RecordBatch, a pandas "
        "DataFrame, a list of dicts, or a list of (row_kind, dict) pairs"
    )


def _row_with_kind(item: Any) -> dict[str, Any]:
    """A dict row (``+I``) or a ``(row_kind, dict)`` pair, as one dict with ``_kind``."""
    if isinstance(item, Mapping):
        return {**item, KIND_COLUMN: item.get(KIND_COLUMN, RowKind.INSERT.value)}
    if isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], Mapping):
        kind, row = item
        return {**row, KIND_COLUMN: kind.value if isinstance(kind, RowKind) else str(kind)}
    raise SchemaMismatchError(f"cannot write row {item!r}: expected a dict or a (row_kind, dict) pair")


def prepare(
    data: Any,
    schema: pa.Schema,
    primary_key: tuple[str, ...],
    kind: RowKind | str | None = None,
    table: str = "",
) -> tuple[pa.Table, list[RowKind]]:
    """Validate and cast ``data``; returns the rows in ``schema`` and one kind per row.

    Row kinds come from ``kind`` (all rows) or a ``_kind`` column of ``+I``,
    ``-U``, ``+U``, ``-D`` values; default ``+I``.
    """
    arrow = to_arrow(data)
    where = f"table {table!r}: " if table else ""
    kinds = _kinds(arrow, kind, where)
    if KIND_COLUMN in arrow.schema.names:
        arrow = arrow.drop_columns([KIND_COLUMN])
    missing = [n for n in schema.names if n not in arrow.schema.names]
    extra = [n for n in arrow.schema.names if n not in schema.names]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing columns {missing}")
        if extra:
            parts.append(f"unknown columns {extra}")
        raise SchemaMismatchError(
            f"{where}data does not match the table schema: {'; '.join(parts)}; "
            f"table columns: {schema.names}"
        )
    columns = []
    for field in schema:
        column = arrow.column(field.name)
        if column.type != field.type:
            try:
                column = pc.cast(column, field.type, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
                raise SchemaMismatchError(
                    f"{where}column {field.name!r} has type {column.type}, the table has "
                    f"{field.type}, and the values do not convert: {err}"
                ) from None
        columns.append(column)
    result = pa.Table.from_arrays(columns, schema=schema.remove_metadata())
    for key in primary_key:
        nulls = result.column(key).null_count
        if nulls:
            row = pc.index(pc.is_null(result.column(key)), True).as_py()
            raise SchemaMismatchError(
                f"{where}primary-key column {key!r} is null in {nulls} row(s), first at row {row}; "
                "primary keys may not be null"
            )
    if not primary_key and any(k is not RowKind.INSERT for k in kinds):
        bad = next(i for i, k in enumerate(kinds) if k is not RowKind.INSERT)
        raise SchemaMismatchError(
            f"{where}row {bad} has row kind {kinds[bad].value!r}, but a table without a primary key "
            "only takes '+I' rows (it cannot update or delete)"
        )
    return result, kinds


def _kinds(arrow: pa.Table, kind: RowKind | str | None, where: str) -> list[RowKind]:
    if kind is not None:
        return [RowKind.parse(kind.value if isinstance(kind, RowKind) else kind)] * arrow.num_rows
    if KIND_COLUMN not in arrow.schema.names:
        return [RowKind.INSERT] * arrow.num_rows
    kinds = []
    for i, value in enumerate(arrow.column(KIND_COLUMN).to_pylist()):
        parsed = _KIND_VALUES.get(value)
        if parsed is None:
            raise SchemaMismatchError(
                f"{where}row {i} has row kind {value!r} in column {KIND_COLUMN!r}; "
                f"allowed: {', '.join(_KIND_VALUES)}"
            )
        kinds.append(parsed)
    return kinds
