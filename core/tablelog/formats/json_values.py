"""How each column type travels through JSON, exactly, in both directions.

Values are written as Flink's JSON formats write them (``json``, ``debezium-json``:
``RowDataToJsonConverters``, with their default options), so a Flink table declaring
the matching SQL types reads them, and tablelog reads what Flink writes:

==================  ===============================================  ======================
table column        JSON value written                               also read
==================  ===============================================  ======================
integers, boolean,  as they are (integers exact to the int64 bounds;
string              a consumer in a language with only doubles loses
                    precision above 2^53)
float, double       a number, the shortest text that reads back as
                    the same float32 or float64; NaN, +inf and -inf
                    as the strings ``"NaN"``, ``"Infinity"``,
                    ``"-Infinity"`` (what Jackson, and so Flink,
                    writes and reads)
decimal             a number, as Java's ``BigDecimal.toString``      a string (``"12.340"``)
                    writes it (``12.340``, ``1.00E-7``): exact at
                    any precision up to 38
binary              base64 string
date                ``"2024-01-02"``                                 epoch days
time                ``"03:04:05"``, ``"03:04:05.25"``                microseconds of the day
timestamp           ``"2024-01-02 03:04:05.123456"``; with a time    epoch microseconds;
                    zone (an instant), in UTC with a final ``Z``     ``T`` for the space
==================  ===============================================  ======================

The encodings in the last column are those of Debezium's connectors, read as well;
:mod:`tablelog.formats.json_times` has the rules of the text of times.
Only these types can be columns of a table: pypaimon refuses unsigned integers,
half floats, ``date64`` and large binary (BLOB), and the log has no encoding for
nested or other types, so :func:`json_type` names them all at create time.
"""

from __future__ import annotations

import base64
import decimal
import math
import struct
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from tablelog.errors import SchemaMismatchError
from tablelog.formats import json_times

#: What a table column may be, for error messages.
SUPPORTED_TYPES = (
    "boolean, int8, int16, int32, int64, float32, float64, decimal128 (precision up to 38), "
    "string, large_string, binary, date32, time32/time64, timestamp (s, ms, us, ns; with or without time zone)"
)

#: The strings that stand for the floating-point values JSON has no number for.
SPECIAL_FLOATS: dict[str, float] = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}

_REFUSED_HINTS = {
    "uint": "use a signed integer type wide enough for the values (uint32 -> int64)",
    "halffloat": "use float32",
    "date64": "use date32",
    "large_binary": "use binary",
    "fixed_size_binary": "use binary",
    "decimal256": "use decimal128 (precision up to 38)",
}


def json_type(data_type: pa.DataType) -> pa.DataType:
    """The Arrow type Arrow's JSON reader parses a column at (text for times and binary;
    a decimal at its own type, which takes JSON numbers and strings exactly); raises
    :class:`SchemaMismatchError` for a type a table column cannot have."""
    t = pa.types
    if json_times.is_temporal(data_type) or t.is_binary(data_type) or t.is_large_string(data_type):
        return pa.string()
    if t.is_decimal128(data_type):
        return data_type
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
    """The column in the types it has in JSON (see the module docstring): times, binary and
    decimals as text (a decimal's, :func:`written_as_number`, is written unquoted); special
    floats stay floats here (the encoder writes them as strings)."""
    data_type = column.type
    if json_times.is_temporal(data_type):
        return json_times.to_text(column)
    if pa.types.is_decimal(data_type):
        return pc.cast(column, pa.string())  # Arrow's text of a decimal is BigDecimal.toString's
    if pa.types.is_binary(data_type):
        return pa.chunked_array(
            [pa.array([None if v is None else base64.b64encode(v).decode() for v in column.to_pylist()],
                      pa.string())]
        )
    if pa.types.is_large_string(data_type):
        return pc.cast(column, pa.string())
    return column


def written_as_number(data_type: pa.DataType) -> bool:
    """Whether :func:`to_json_array` turns the column into the text of a JSON number."""
    return pa.types.is_decimal(data_type)


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
    if type(value) is decimal.Decimal:  # parsed exactly, for a decimal column of the row
        return float(value)
    return value


def from_json_arrow(column: pa.ChunkedArray | pa.Array, data_type: pa.DataType) -> pa.ChunkedArray | pa.Array:
    """A column parsed at its JSON-level type (see :func:`json_type`) in the table's type."""
    if column.type == data_type:
        return column
    if json_times.is_temporal(data_type):
        return json_times.from_text(column, data_type)
    if pa.types.is_binary(data_type):
        return pa.array([None if v is None else base64.b64decode(v) for v in column.to_pylist()], data_type)
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
    if pa.types.is_decimal(data_type):
        return _decimal_reader(data_type)
    if json_times.is_temporal(data_type):
        return json_times.python_reader(data_type)
    if pa.types.is_binary(data_type):
        return _bytes_from_json
    if pa.types.is_large_string(data_type):
        return _text_from_json
    return None


def _bytes_from_json(value: Any) -> Any:
    return None if value is None else base64.b64decode(value)


def _text_from_json(value: Any) -> Any:
    if value is None or type(value) is str:
        return value
    raise TypeError(f"{value!r} is not a string")


#: Digits enough for any decimal128 value and its rounding, whatever the current context.
_EXACT = decimal.Context(prec=100)
#: A double holds any decimal of up to this many digits exactly (``DBL_DIG``).
_DOUBLE_DIGITS = 15


def _decimal_reader(data_type: pa.DataType) -> Callable[[Any], Any]:
    """One JSON value of a decimal column (a number: an int, a float or an exact Decimal;
    or the text of the older encoding) as the column's Decimal; ValueError when the column
    cannot hold it exactly."""
    quantum = decimal.Decimal(1).scaleb(-data_type.scale)
    bound = decimal.Decimal(1).scaleb(data_type.precision - data_type.scale)
    zero = decimal.Decimal(0).quantize(quantum)
    floats_exact = data_type.precision <= _DOUBLE_DIGITS

    def convert(value: Any) -> Any:
        if value is None:
            return None
        kind = type(value)
        try:
            if kind is decimal.Decimal:
                number = value
            elif kind is str or kind is int:
                number = decimal.Decimal(value)
            elif kind is float and floats_exact:
                number = decimal.Decimal(repr(value))
            else:
                raise TypeError(f"{value!r} is not a decimal of a {data_type} column")
            exact = number.quantize(quantum, context=_EXACT)
        except ArithmeticError:  # no number's text, or NaN / Infinity
            raise ValueError(f"{value!r} is not a decimal") from None
        if exact != number or not exact.copy_abs() < bound:  # copy_abs: abs() rounds to the context
            raise ValueError(f"{value!r} does not fit a {data_type} column exactly")
        return exact if exact else zero  # one zero, unsigned, as Arrow returns it

    return convert
