"""Turn what users hand a writer (Arrow, pandas, rows) into an Arrow table of the
table's schema plus row kinds, or a clear error that names the problem."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from tablelog.errors import SchemaMismatchError
from tablelog.formats.codec import KIND_COLUMN
from tablelog.records import RowKind
from tablelog.writing.casting import Verdict, cast_column, verdict

_KIND_VALUES = {k.value: k for k in RowKind}


def to_arrow(data: Any, where: str = "") -> pa.Table:
    """``data`` as an Arrow table with the types its values have (cast later, by
    :mod:`tablelog.writing.casting`); a column whose values do not make one Arrow type is an
    error naming the column and the row."""
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if type(data).__module__.startswith("pandas"):
        try:
            return pa.Table.from_pandas(data, preserve_index=False)
        except _CONVERSION_ERRORS:
            return _columns_table({str(name): data[name].tolist() for name in data.columns}, where)
    if isinstance(data, Sequence):
        rows = [_row_with_kind(item) for item in data]
        names = _all_keys(rows)
        if rows and len(names) == len(rows[0]):
            try:
                return pa.Table.from_pylist(rows)
            except _CONVERSION_ERRORS:
                pass  # column by column below, which names the column and the row
        return _columns_table({name: [row.get(name) for row in rows] for name in names}, where)
    raise SchemaMismatchError(
        f"cannot write {type(data).__name__}: pass a pyarrow Table or RecordBatch, a pandas "
        "DataFrame, a list of dicts, or a list of (row_kind, dict) pairs"
    )


_CONVERSION_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError)


def _all_keys(rows: list[dict[str, Any]]) -> list[str]:
    """Every row's keys, in the order they first appear: a key that only a later row has
    is a column too (and then an unknown one), not dropped as Arrow's from_pylist does."""
    if not rows:
        return []
    first = list(rows[0])
    every = set().union(*rows)  # in native code; the common case ends here
    if len(every) == len(first):
        return first
    return list(dict.fromkeys(name for row in rows for name in row))


def _columns_table(columns: dict[str, list[Any]], where: str) -> pa.Table:
    return pa.table({name: _python_column(name, values, where) for name, values in columns.items()})


def _python_column(name: str, values: list[Any], where: str) -> pa.Array:
    try:
        return pa.array(values)
    except _CONVERSION_ERRORS:
        pass
    first: tuple[int, Any] | None = None
    for row, value in enumerate(values):
        if value is None:
            continue
        try:
            pa.array([value])
        except _CONVERSION_ERRORS as err:
            hint = " (outside int64 and uint64)" if isinstance(value, int) else ""
            raise SchemaMismatchError(
                f"{where}column {name!r} row {row}: {value!r} ({type(value).__name__}) is no value a table "
                f"column can hold{hint}: {err}; nothing was written"
            ) from None
        if first is None:
            first = (row, value)
            continue
        try:
            pa.array([first[1], value])
        except _CONVERSION_ERRORS:
            if _is_number(first[1]) and _is_number(value):
                raise SchemaMismatchError(
                    f"{where}column {name!r} row {row}: {value!r} mixed with floats (row {first[0]}: "
                    f"{first[1]!r}) is not exactly a float64: integers go into a float column only up to "
                    "2^53 in magnitude; nothing was written"
                ) from None
            raise SchemaMismatchError(
                f"{where}column {name!r} mixes types: row {first[0]} is {type(first[1]).__name__} "
                f"({first[1]!r}), row {row} is {type(value).__name__} ({value!r}); nothing was written"
            ) from None
    raise SchemaMismatchError(f"{where}column {name!r}: its values do not make one Arrow column; nothing was written")


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
    A nullable non-key column the data does not have is null (see :func:`fillable`).

    Row kinds come from ``kind`` (all rows) or a ``_kind`` column of ``+I``,
    ``-U``, ``+U``, ``-D`` values; default ``+I``.
    """
    where = f"table {table!r}: " if table else ""
    arrow = to_arrow(data, where)
    kinds = _kinds(arrow, kind, where)
    if KIND_COLUMN in arrow.schema.names:
        arrow = arrow.drop_columns([KIND_COLUMN])
    missing = [n for n in schema.names if n not in arrow.schema.names]
    extra = [n for n in arrow.schema.names if n not in schema.names]
    required = [n for n in missing if not fillable(schema.field(n), primary_key)]
    if extra or required:
        parts = []
        if extra and missing:  # a missing column may be a misspelt unknown one: name them all
            parts.append(f"missing columns {missing}")
        elif required:  # the nullable columns it lacks are written as nulls: not the problem
            parts.append(
                f"missing columns {required} (every row needs the primary-key and NOT NULL "
                "columns; nullable columns may be left out)"
            )
        if extra:
            parts.append(f"unknown columns {extra}")
        raise SchemaMismatchError(
            f"{where}data does not match the table schema: {'; '.join(parts)}; "
            f"table columns: {schema.names}"
        )
    columns = [
        pa.chunked_array([pa.nulls(arrow.num_rows, field.type)]) if field.name in missing else
        cast_column(arrow.column(field.name), field.type, field.name, where,
                    first_row_of=_first_row_refused(data, field.name))
        for field in schema
    ]
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


def fillable(field: pa.Field, primary_key: Sequence[str]) -> bool:
    """Whether data without the column ``field`` is written with nulls in it: a nullable
    column outside the primary key (a column added to the table since the writer's data
    was shaped, as Spark and Delta fill it). Not when the data has unknown columns too:
    then a missing column is more likely misspelt, and both are named."""
    return field.nullable and field.name not in primary_key


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


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _first_row_refused(data: Any, name: str) -> Any:
    """For Python rows: the row of the first value whose own type a column refuses (a
    column of ``[1, 2.5]`` is double, and row 1 is the one to name)."""
    if not isinstance(data, Sequence) or isinstance(data, pa.Table | pa.RecordBatch):
        return None

    def first_row_of(target: pa.DataType) -> int | None:
        for row, item in enumerate(data):
            value = (item if isinstance(item, Mapping) else item[1]).get(name)
            try:
                refused = value is not None and verdict(pa.array([value]).type, target) is Verdict.NEVER
            except _CONVERSION_ERRORS:
                refused = True
            if refused:
                return row
        return None

    return first_row_of
