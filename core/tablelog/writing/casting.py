"""The casting policy: which values go into which column, for every entry point.

Python rows, pandas, Arrow and Spark DataFrames all pass through here
(:func:`cast_column` when rows are written, :func:`verdict` on the Spark driver before
any task runs). A value goes into a column when the column holds it exactly:

* **always** (a lossless widening): the same type; nulls; a narrower integer into a
  wider one; float32 into float64; integers into a float column that holds every value
  of their type (up to 16 bits into float32, 32 bits into float64); a decimal into one
  with at least as many digits before and after the point; an integer into a decimal
  with enough digits; string into large_string and back; date into a timestamp without
  time zone (midnight); a coarser timestamp or time unit into a finer one; a timestamp
  with a time zone into one with another (the same instant).
* **when each value fits** (checked value by value; the first that does not is an
  error naming its row): integers into a narrower integer type (Python and pandas
  integers are int64); integers into a float column up to 2^24 (float32) or 2^53
  (float64); a decimal or integer into a decimal with fewer digits; a finer timestamp
  or time unit into a coarser one; float64 into float32, where a value becomes the
  nearest float32 (the column's precision) but a finite value may not overflow to
  infinity.
* **never**, whatever the values: booleans and numbers into each other, strings and
  numbers (``'7'`` into an integer, ``123`` into a string), floats into integers or
  decimals, decimals into floats, binary and strings, a timestamp with a time zone (an
  instant) and one without (a wall-clock time) into each other, dates into a timestamp
  with a time zone.

Every refusal is a :class:`~tablelog.errors.SchemaMismatchError` naming the column,
the row, the value and both types.
"""

from __future__ import annotations

import enum
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from tablelog.errors import SchemaMismatchError


class Verdict(enum.Enum):
    ALWAYS = "always"  # a lossless widening
    CHECKED = "checked"  # when each value fits
    NEVER = "never"


_INT_RANGES = {
    bits: (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) for bits in (8, 16, 32, 64)
}
_FLOAT_EXACT_INT_TYPE_BITS = {32: 16, 64: 32}  # float bits -> the widest integer type it holds exactly


def _int_range(data_type: pa.DataType) -> tuple[int, int]:
    bits = data_type.bit_width
    if pa.types.is_unsigned_integer(data_type):
        return 0, (1 << bits) - 1
    return _INT_RANGES[bits]


def _int_digits(data_type: pa.DataType) -> int:
    low, high = _int_range(data_type)
    return len(str(max(-low, high)))


def _family(data_type: pa.DataType) -> str:
    t = pa.types
    checks = [
        (t.is_null, "null"), (t.is_boolean, "boolean"), (t.is_integer, "integer"), (t.is_floating, "float"),
        (t.is_decimal, "decimal"), (t.is_timestamp, "timestamp"), (t.is_date, "date"), (t.is_time, "time"),
    ]
    for check, family in checks:
        if check(data_type):
            return family
    if t.is_string(data_type) or t.is_large_string(data_type) or t.is_string_view(data_type):
        return "string"
    if t.is_binary(data_type) or t.is_large_binary(data_type) or t.is_fixed_size_binary(data_type):
        return "binary"
    return str(data_type)


_UNITS = {"s": 0, "ms": 1, "us": 2, "ns": 3}


def verdict(given: pa.DataType, target: pa.DataType) -> Verdict:
    """Whether values of type ``given`` go into a column of type ``target``."""
    if given == target:
        return Verdict.ALWAYS
    family, target_family = _family(given), _family(target)
    if family == "null":
        return Verdict.ALWAYS
    rule = _RULES.get((family, target_family))
    return rule(given, target) if rule else Verdict.NEVER


def _widening(lossless: bool) -> Verdict:
    return Verdict.ALWAYS if lossless else Verdict.CHECKED


def _integer_to_integer(given: pa.DataType, target: pa.DataType) -> Verdict:
    (low, high), (target_low, target_high) = _int_range(given), _int_range(target)
    return _widening(target_low <= low and high <= target_high)


def _integer_to_float(given: pa.DataType, target: pa.DataType) -> Verdict:
    # float32 holds every integer of up to 16 bits, float64 of up to 32; wider ones are checked
    return _widening(given.bit_width <= _FLOAT_EXACT_INT_TYPE_BITS.get(target.bit_width, 0))


def _float_to_float(given: pa.DataType, target: pa.DataType) -> Verdict:
    return _widening(given.bit_width <= target.bit_width)


def _integer_to_decimal(given: pa.DataType, target: pa.DataType) -> Verdict:
    return _widening(_int_digits(given) <= target.precision - target.scale)


def _decimal_to_decimal(given: pa.DataType, target: pa.DataType) -> Verdict:
    return _widening(given.scale <= target.scale and given.precision - given.scale <= target.precision - target.scale)


def _same_family(given: pa.DataType, target: pa.DataType) -> Verdict:
    return Verdict.ALWAYS


def _date_to_date(given: pa.DataType, target: pa.DataType) -> Verdict:
    return _widening(pa.types.is_date32(given) or pa.types.is_date64(target))


def _date_to_timestamp(given: pa.DataType, target: pa.DataType) -> Verdict:
    return Verdict.NEVER if target.tz else Verdict.ALWAYS


def _timestamp_to_timestamp(given: pa.DataType, target: pa.DataType) -> Verdict:
    if (given.tz is None) != (target.tz is None):
        return Verdict.NEVER
    return _widening(_UNITS[given.unit] <= _UNITS[target.unit])


def _time_to_time(given: pa.DataType, target: pa.DataType) -> Verdict:
    return _widening(_UNITS[given.unit] <= _UNITS[target.unit])


_RULES = {
    ("integer", "integer"): _integer_to_integer,
    ("integer", "float"): _integer_to_float,
    ("integer", "decimal"): _integer_to_decimal,
    ("float", "float"): _float_to_float,
    ("decimal", "decimal"): _decimal_to_decimal,
    ("string", "string"): _same_family,
    ("binary", "binary"): _same_family,
    ("date", "date"): _date_to_date,
    ("date", "timestamp"): _date_to_timestamp,
    ("timestamp", "timestamp"): _timestamp_to_timestamp,
    ("time", "time"): _time_to_time,
}


def refusal_hint(given: pa.DataType, target: pa.DataType) -> str:
    """Why a conversion is never made, and what to do instead."""
    family, target_family = _family(given), _family(target)
    if family == "timestamp" and target_family == "timestamp":
        return ("a timestamp with a time zone is an instant, one without a wall-clock time; "
                "convert explicitly (attach or drop the time zone)")
    if family == "float" and target_family == "integer":
        return ("a float is not an integer; cast the values explicitly (pandas: a column with missing "
                "values is float64 unless it has the nullable dtype 'Int64')")
    return "it is not a lossless conversion; cast the values explicitly"


def _where(column: str, row: int | None, where: str) -> str:
    at = f" row {row}" if row is not None else ""
    return f"{where}column {column!r}{at}"


def refuse_type(
    column: str, given: pa.DataType, target: pa.DataType, *, row: int | None = None, value: Any = None,
    where: str = "",
) -> SchemaMismatchError:
    at = f" (row {row}: {value!r})" if row is not None else ""
    return SchemaMismatchError(
        f"{where}column {column!r} has type {given}{at}, the table column is {target}, and {given} values "
        f"are never converted to {target}: {refusal_hint(given, target)}; nothing was written"
    )


def cast_column(
    column: pa.ChunkedArray | pa.Array, target: pa.DataType, name: str, where: str = "",
    first_row_of: Any = None,
) -> pa.ChunkedArray | pa.Array:
    """``column`` as ``target`` under the policy, or :class:`SchemaMismatchError`.

    ``first_row_of(predicate)`` may name the row of a refused type more precisely
    (Python rows: the first value whose own type is refused); by default the first
    non-null row is named."""
    given = column.type
    decision = verdict(given, target)
    if decision is Verdict.NEVER:
        row = _first_non_null(column) if first_row_of is None else first_row_of(target)
        value = column[row].as_py() if row is not None else None
        raise refuse_type(name, given, target, row=row, value=value, where=where)
    if decision is Verdict.ALWAYS:
        return column if given == target else _cast(column, target)
    try:
        result = _cast(column, target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
        row = _first_failing_row(column, target)
        raise _value_error(name, column, row, target, str(err), where) from None
    if pa.types.is_floating(given) and pa.types.is_floating(target):
        overflow = pc.and_(pc.is_inf(result), pc.is_finite(column))
        if pc.any(overflow).as_py():
            row = pc.index(overflow, True).as_py()
            raise _value_error(name, column, row, target, f"out of the range of {target}", where) from None
    return result


def _cast(column: pa.ChunkedArray | pa.Array, target: pa.DataType) -> pa.ChunkedArray | pa.Array:
    if pa.types.is_integer(column.type) and pa.types.is_decimal(target):
        # Arrow sizes an integer-to-decimal cast by the integer type, not by the values
        column = pc.cast(column, pa.decimal128(38, 0))
    return pc.cast(column, target, safe=True)


def _value_error(
    name: str, column: pa.ChunkedArray | pa.Array, row: int | None, target: pa.DataType, reason: str, where: str
) -> SchemaMismatchError:
    value = column[row].as_py() if row is not None else None
    return SchemaMismatchError(
        f"{_where(name, row, where)}: {value!r} ({column.type}) does not fit the table column's type {target} "
        f"exactly ({reason}); nothing was written"
    )


def _first_non_null(column: pa.ChunkedArray | pa.Array) -> int | None:
    valid = pc.is_valid(column)
    index = pc.index(valid, True).as_py()
    return None if index < 0 else index


def _first_failing_row(column: pa.ChunkedArray | pa.Array, target: pa.DataType) -> int | None:
    """The first row whose value does not cast: a prefix fails once it holds that row."""
    def fails(length: int) -> bool:
        try:
            _cast(column.slice(0, length), target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return True
        return False

    low, high = 1, len(column)
    if not fails(high):
        return None
    while low < high:
        middle = (low + high) // 2
        if fails(middle):
            high = middle
        else:
            low = middle + 1
    return low - 1
