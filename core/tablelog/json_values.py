"""How each column type travels through JSON, exactly, in both directions.

Values that JSON cannot carry as they are take the encodings Debezium's connectors use,
so a consumer that knows nothing of tablelog can read them:

==================  =========================================================
table column        JSON value
==================  =========================================================
integers, boolean,  as they are (integers exact to the int64 bounds; a consumer
string              in a language with only doubles loses precision above 2^53)
float, double       a number; NaN, +inf and -inf as the strings ``"NaN"``,
                    ``"Infinity"``, ``"-Infinity"`` (what Jackson, and so Flink
                    and Debezium, write and read for special doubles)
decimal             a string (``"12.340"``), exact at any precision up to 38
binary              base64 string
date                epoch days
time                microseconds of the day
timestamp           epoch microseconds (Debezium's MicroTimestamp), with or
                    without time zone; nanosecond columns are refused a value
                    with a sub-microsecond part when written
==================  =========================================================

Only these types can be columns of a table: pypaimon refuses unsigned integers,
half floats, ``date64`` and large binary (BLOB), and the log has no encoding for
nested or other types, so :func:`json_type` names them all at create time.
"""

from __future__ import annotations

import base64
import math
import struct
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from tablelog.errors import SchemaMismatchError

#: What a table column may be, for error messages.
SUPPORTED_TYPES = (
    "boolean, int8, int16, int32, int64, float32, float64, decimal128 (precision up to 38), "
    "string, large_string, binary, date32, time32/time64, timestamp (s, ms, us, ns; with or without time zone)"
)

#: The strings that stand for the floating-point values JSON has no number for.
SPECIAL_FLOATS: dict[str, float] = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
SPECIAL_FLOAT_TOKENS = tuple(f'"{name}"'.encode() for name in SPECIAL_FLOATS)

_REFUSED_HINTS = {
    "uint": "use a signed integer type wide enough for the values (uint32 -> int64)",
    "halffloat": "use float32",
    "date64": "use date32",
    "large_binary": "use binary",
    "fixed_size_binary": "use binary",
    "decimal256": "use decimal128 (precision up to 38)",
}


def json_type(data_type: pa.DataType) -> pa.DataType:
    """The Arrow type a column takes on its way through JSON; raises
    :class:`SchemaMismatchError` for a type a table column cannot have."""
    t = pa.types
    if t.is_timestamp(data_type) or t.is_time(data_type):
        return pa.int64()
    if t.is_date32(data_type):
        return pa.int32()
    if t.is_decimal128(data_type) or t.is_binary(data_type) or t.is_large_string(data_type):
        return pa.string()
    if t.is_signed_integer(data_type) or t.is_boolean(data_type) or t.is_string(data_type):
        return data_type
    if t.is_float32(data_type) or t.is_float64(data_type):
        return data_type
    raise SchemaMismatchError(f"type {data_type} cannot be a table column{_hint(data_type)}; supported: {SUPPORTED_TYPES}")


def _hint(data_type: pa.DataType) -> str:
    t = pa.types
    if t.is_nested(data_type) or t.is_dictionary(data_type):
        return " (nested and dictionary types are not supported: store them as a JSON string column)"
    if t.is_unsigned_integer(data_type):
        return f" ({_REFUSED_HINTS['uint']})"
    if t.is_decimal(data_type):
        return f" ({_REFUSED_HINTS['decimal256']})"
    name = str(data_type).split("[")[0]
    return f" ({_REFUSED_HINTS[name]})" if name in _REFUSED_HINTS else ""


def is_float(data_type: pa.DataType) -> bool:
    return pa.types.is_floating(data_type)


# -- writing ------------------------------------------------------------------------------


def to_json_array(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """The column in the types it has in JSON (see the module docstring); special floats
    stay floats here (the caller writes them as strings, see :func:`special_float_rows`)."""
    data_type = column.type
    if pa.types.is_timestamp(data_type):
        return pc.cast(pc.cast(column, pa.timestamp("us", tz=data_type.tz)), pa.int64())
    if pa.types.is_time(data_type):
        return pc.cast(pc.cast(column, pa.time64("us")), pa.int64())
    if pa.types.is_date(data_type):
        return pc.cast(column, pa.int32())
    if pa.types.is_decimal(data_type):
        return pc.cast(column, pa.string())
    if pa.types.is_binary(data_type):
        return pa.chunked_array(
            [pa.array([None if v is None else base64.b64encode(v).decode() for v in column.to_pylist()],
                      pa.string())]
        )
    if pa.types.is_large_string(data_type):
        return pc.cast(column, pa.string())
    return column


def unloggable_value(data: pa.Table) -> tuple[str, int, Any] | None:
    """(column, row, value) of the first value the log cannot carry exactly, if any:
    a nanosecond timestamp or time with a sub-microsecond part (the log carries
    microseconds)."""
    for name, column in zip(data.column_names, data.columns, strict=True):
        unit = getattr(column.type, "unit", None)
        if unit != "ns" or not (pa.types.is_timestamp(column.type) or pa.types.is_time(column.type)):
            continue
        nanos = pc.cast(column, pa.int64())
        lossy = pc.not_equal(pc.multiply(pc.divide(nanos, 1000), 1000), nanos)
        if pc.any(lossy).as_py():
            row = pc.index(lossy, True).as_py()
            return name, row, column[row].as_py()
    return None


# -- reading ------------------------------------------------------------------------------


def float_from_json(value: Any) -> Any:
    """A JSON float value back as a float; raises KeyError for a string that is none of
    the special values (the record is then not ours)."""
    if type(value) is str:
        return SPECIAL_FLOATS[value]
    return value


def from_json_values(values: list[Any], data_type: pa.DataType) -> pa.Array:
    """JSON-level Python values of one column as an Arrow array of the table's type."""
    if pa.types.is_binary(data_type):
        return pa.array([None if v is None else base64.b64decode(v) for v in values], data_type)
    if pa.types.is_timestamp(data_type):
        micros = pa.array(values, pa.int64()).cast(pa.timestamp("us", tz=data_type.tz))
        return micros.cast(data_type)
    if pa.types.is_time(data_type):
        return pa.array(values, pa.int64()).cast(pa.time64("us")).cast(data_type)
    if pa.types.is_date(data_type):
        return pa.array(values, pa.int32()).cast(data_type)
    if pa.types.is_decimal(data_type):
        return pa.array(values, pa.string()).cast(data_type)
    if is_float(data_type) and any(type(v) is str for v in values):
        return pa.array([float_from_json(v) for v in values], data_type)
    return pa.array(values, data_type)


def from_json_arrow(column: pa.ChunkedArray | pa.Array, data_type: pa.DataType) -> pa.ChunkedArray | pa.Array:
    """A column parsed at its JSON-level type (see :func:`json_type`) in the table's type."""
    if column.type == data_type:
        return column
    if pa.types.is_timestamp(data_type):
        return pc.cast(pc.cast(column, pa.timestamp("us", tz=data_type.tz)), data_type)
    if pa.types.is_time(data_type):
        return pc.cast(pc.cast(column, pa.time64("us")), data_type)
    if pa.types.is_binary(data_type):
        return from_json_values(column.to_pylist(), data_type)
    return pc.cast(column, data_type)


def float32_from_json(value: Any) -> Any:
    """A JSON float32 value as the double the table returns for it: JSON holds the
    shortest text of the float32 (0.1), the table the float32 itself (0.10000000149011612)."""
    value = float_from_json(value)
    if value is None:
        return None
    return _FLOAT32.unpack(_FLOAT32.pack(value))[0]


_FLOAT32 = struct.Struct("<f")


def python_converter(data_type: pa.DataType) -> Callable[[Any], Any] | None:
    """Turns one JSON-level value into the table's Python value; None when the JSON value
    already is that (the fast path of a reader's python_row)."""
    if pa.types.is_float32(data_type):
        return float32_from_json
    if is_float(data_type):
        return float_from_json
    if json_type(data_type) == data_type:
        return None

    def convert(value: Any) -> Any:
        if value is None:
            return None
        return from_json_values([value], data_type)[0].as_py()

    return convert
