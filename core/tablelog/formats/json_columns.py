"""Many ``debezium-json`` or ``json`` values decoded at once into Arrow columns.

Arrow's JSON reader parses them in native code, no Python object per record: what a
``poll_arrow`` of short values costs least with. It is stricter than the decoding of
one value (:class:`~tablelog.formats.json_codec.JsonCodec`): whatever it does not take
is decoded one by one instead, with the same result.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from tablelog.formats.codec import KIND_COLUMN, SCHEMA_FIELD
from tablelog.formats.debezium import KIND_VALUES, debezium_columns
from tablelog.formats.json_values import from_json_arrow, json_type


def parse_values(
    values: Sequence[bytes | None], schema: pa.Schema, schema_id: int, *, envelope: bool
) -> pa.Table | None:
    """The rows of ``values`` (of the table ``schema``, id ``schema_id``; Debezium
    envelopes when ``envelope``) as a table of ``_kind`` and the schema's columns. None
    when Arrow's reader cannot take them as they are (decode them one by one); ValueError
    when a value is none of the table's rows of this schema."""
    output = pa.schema([pa.field(KIND_COLUMN, pa.string()), *schema])
    if not values:
        return output.empty_table()
    if None in values:
        raise ValueError("a record has no value")
    data = b"\n".join(values)  # type: ignore[arg-type]  # None ruled out above
    # A value must not straddle two blocks of the reader: blocks hold the largest value.
    block = max(1 << 20, 2 * max(map(len, values)) + 2)  # type: ignore[arg-type]
    try:
        parsed = pa_json.read_json(
            pa.BufferReader(data),
            read_options=pa_json.ReadOptions(block_size=block),
            parse_options=_parse_options(schema, envelope),
        )
    except pa.ArrowInvalid:
        # Arrow's reader takes a column's values of one JSON type only: the rare values
        # with NaN or an infinity (strings in a number column), and those of the older
        # encoding (numbers for times), are decoded one by one.
        return None
    if parsed.num_rows != len(values):  # a value with a raw newline: not one of ours
        raise ValueError("values do not parse one row each")
    schema_ids = parsed.column(SCHEMA_FIELD)  # none: another writer's, the first schema
    bounds = pc.min_max(schema_ids.fill_null(0) if schema_ids.null_count else schema_ids).as_py()
    if bounds["min"] != schema_id or bounds["max"] != schema_id:
        raise ValueError("values of another schema")  # decoded one by one, which maps them
    if not envelope:
        kinds = parsed.column(KIND_COLUMN).combine_chunks()
        if kinds.null_count or not pc.all(pc.is_in(kinds, pa.array(KIND_VALUES))).as_py():
            raise ValueError("a value has no valid _kind")
        columns = [parsed.column(field.name) for field in schema]
    else:
        kinds, columns = debezium_columns(parsed, len(schema))
    try:
        arrays = [kinds] + [from_json_arrow(column, field.type) for column, field in zip(columns, schema, strict=True)]
    except ValueError:  # Arrow's casts are stricter than the rules (a fraction's trailing zeros)
        return None
    return pa.Table.from_arrays(arrays, schema=output)


def _parse_options(schema: pa.Schema, envelope: bool) -> pa_json.ParseOptions:
    row = pa.struct([pa.field(f.name, json_type(f.type)) for f in schema])
    if not envelope:
        fields = pa.schema([*row, pa.field(KIND_COLUMN, pa.string()), pa.field(SCHEMA_FIELD, pa.int64())])
    else:
        fields = pa.schema([
            ("before", row), ("after", row), ("op", pa.string()), (KIND_COLUMN, pa.string()),
            (SCHEMA_FIELD, pa.int64()),
        ])
    return pa_json.ParseOptions(explicit_schema=fields, unexpected_field_behavior="ignore")
