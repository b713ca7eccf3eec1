"""`tablelog create`."""

from __future__ import annotations

import re

import click
import pyarrow as pa

from tablelog.cli.common import (
    console,
    friendly_errors,
    options_option,
    parse_options,
    table_argument,
    warehouse_option,
)
from tablelog.errors import OptionError
from tablelog.tables import create_table

_TYPES = {
    "tinyint": pa.int8(), "int8": pa.int8(), "smallint": pa.int16(), "int16": pa.int16(),
    "int": pa.int32(), "int32": pa.int32(), "bigint": pa.int64(), "int64": pa.int64(),
    "float": pa.float32(), "float32": pa.float32(), "double": pa.float64(), "float64": pa.float64(),
    "boolean": pa.bool_(), "bool": pa.bool_(), "string": pa.string(), "binary": pa.binary(),
    "date": pa.date32(), "timestamp": pa.timestamp("us"),
}


def parse_schema(text: str) -> pa.Schema:
    """``"id bigint, name string, price decimal(10,2)"`` -> an Arrow schema."""
    fields = []
    for part in re.split(r",(?![^()]*\))", text):
        if not part.strip():
            continue
        name, _, type_name = part.strip().partition(" ")
        type_name = type_name.strip().lower()
        decimal = re.fullmatch(r"decimal\((\d+),\s*(\d+)\)", type_name)
        if decimal:
            fields.append(pa.field(name, pa.decimal128(int(decimal[1]), int(decimal[2]))))
        elif type_name in _TYPES:
            fields.append(pa.field(name, _TYPES[type_name]))
        else:
            raise OptionError(
                f"column {name!r}: unknown type {type_name!r}; known: {', '.join(_TYPES)}, decimal(p,s)"
            )
    if not fields:
        raise OptionError("the schema has no columns; e.g. --schema 'id bigint, name string'")
    return pa.schema(fields)


@click.command()
@warehouse_option
@table_argument
@click.option("--schema", "schema_text", required=True, help="Columns, e.g. 'id bigint, name string'.")
@click.option("--primary-key", "-k", default="", help="Primary key columns, comma-separated.")
@click.option("--partition", "-p", "partition", default="",
              help="Partition columns, comma-separated (a primary-key table's are primary-key columns).")
@click.option("--bucket", "-b", type=int, default=None,
              help="Number of buckets (log partitions); -1: Paimon's dynamic buckets.")
@options_option
@friendly_errors
def create(warehouse: str, table: str, schema_text: str, primary_key: str, partition: str, bucket: int | None,
           raw_options: tuple[str, ...]) -> None:
    """Create a table."""
    options = parse_options(raw_options, **{
        "primary-key": ("-k/--primary-key", primary_key or None),
        "partition": ("-p/--partition", partition or None),
        "bucket": ("-b/--bucket", None if bucket is None else str(bucket)),
    })
    created = create_table(warehouse, table, parse_schema(schema_text), options=options)
    console.print(f"created {created.identifier} in {created.warehouse.path} (log.system={created.options.log_system})")
