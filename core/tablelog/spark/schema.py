"""Spark <-> Arrow schemas, and the driver-side check that a DataFrame fits a table.

The check applies the casting policy of :mod:`tablelog.writing.casting` (the one the Python
API applies): a conversion that is never made fails here; one checked value by value
fails the task that meets a value that does not fit, before it produces anything.
The check runs in the writer factory on the driver (Spark hands ``DataSource.writer``
and ``streamWriter`` the DataFrame's schema), so a DataFrame that does not fit fails
the job before any task produces a record.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from tablelog.errors import SchemaMismatchError
from tablelog.formats.codec import KIND_COLUMN
from tablelog.writing.casting import Verdict, refusal_hint, verdict
from tablelog.writing.inputs import fillable

if TYPE_CHECKING:
    from pyspark.sql.types import StructType


def to_arrow(schema: StructType) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema)


def to_spark(schema: pa.Schema) -> StructType:
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema, prefer_timestamp_ntz=True)


def output_schema(table_schema: pa.Schema) -> StructType:
    """What the source returns: ``_kind`` (``+I``, ``-U``, ``+U``, ``-D``), then the table's columns."""
    return to_spark(pa.schema([pa.field(KIND_COLUMN, pa.string(), nullable=False), *table_schema]))


def data_columns(schema: pa.Schema) -> pa.Schema:
    """A DataFrame's schema without its ``_kind`` column: the columns of a table created from it."""
    return pa.schema([f for f in schema if f.name != KIND_COLUMN])


def extra_columns(table_schema: pa.Schema, data_schema: pa.Schema) -> list[pa.Field]:
    """The DataFrame's columns the table does not have (``mergeSchema`` adds them)."""
    return [f for f in data_columns(data_schema) if f.name not in table_schema.names]


def check_write_schema(
    table: str, table_schema: pa.Schema, data_schema: pa.Schema, primary_key: tuple[str, ...] = ()
) -> None:
    """Raise :class:`SchemaMismatchError` naming every column that does not fit. A nullable
    non-key column the DataFrame lacks is written as null (unless it has unknown columns:
    see :func:`tablelog.writing.inputs.fillable`)."""
    problems = []
    if KIND_COLUMN in data_schema.names:
        kind_type = data_schema.field(KIND_COLUMN).type
        if not (pa.types.is_string(kind_type) or pa.types.is_large_string(kind_type)):
            problems.append(f"column {KIND_COLUMN!r} must be a string of row kinds (+I, -U, +U, -D), not {kind_type}")
    columns = data_columns(data_schema)
    missing = [n for n in table_schema.names if n not in columns.names]
    extra = [n for n in columns.names if n not in table_schema.names]
    if missing and (extra or not all(fillable(table_schema.field(n), primary_key) for n in missing)):
        problems.append(f"missing columns {missing}")
    if extra:
        problems.append(
            f"unknown columns {extra} (set .option('mergeSchema', 'true') to add them to the table)"
        )
    for field in table_schema:
        if field.name not in columns.names:
            continue
        given = columns.field(field.name).type
        if verdict(given, field.type) is Verdict.NEVER:
            problems.append(
                f"column {field.name!r} is {given} in the DataFrame but {field.type} in the table "
                f"({refusal_hint(given, field.type)})"
            )
    if problems:
        raise SchemaMismatchError(
            f"table {table!r}: the DataFrame does not match the table schema: {'; '.join(problems)}. "
            f"Table columns: {', '.join(f'{f.name} {f.type}' for f in table_schema)} "
            f"(plus an optional {KIND_COLUMN!r} string column); nothing was written"
        )
