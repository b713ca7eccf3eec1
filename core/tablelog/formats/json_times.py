"""Dates, times and timestamps in JSON: the text Flink's JSON formats write and read.

Flink's ``json`` and ``debezium-json`` formats (``RowDataToJsonConverters``, the default
``timestamp-format.standard = SQL``; ``TimeFormats.SQL_*``) write::

    DATE                      "2024-01-02"
    TIME                      "03:04:05", "03:04:05.25"
    TIMESTAMP                 "2024-01-02 03:04:05.123456"
    TIMESTAMP_LTZ (instant)   "2024-01-02 03:04:05.123456Z"   (in UTC)

The fraction of a second has the digits it needs, none for a whole second (Java's
``appendFraction(NANO_OF_SECOND, 0, 9, true)``). Reading takes that text, a ``T`` for the
space (``ISO-8601``), an offset such as ``+01:00`` instead of ``Z`` for an instant, and the
integers of Debezium's connector encodings (epoch days, microseconds of the day, epoch
microseconds). A text with a digit finer than the column's unit, an
instant without its zone or a wall-clock time with one is not a value of the column.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

# Shared by Python's re and Arrow's RE2; the groups are the fields, in order.
_DATE = r"(\d{4})-(\d{2})-(\d{2})"
_TIME = r"(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?"
_LOCAL = _DATE + "[ T]" + _TIME
_ZONE = r"(Z|[+-]\d{2}:\d{2})"
_NANOS = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}
# How the text of a microsecond value ends when its fraction has trailing zeros.
_TRAILING_ZEROS = r"\.?0+(Z?)$"
_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_DAY = _EPOCH.date()
_NANOS_A_DAY = 86_400 * 1_000_000_000


def is_temporal(data_type: pa.DataType) -> bool:
    return pa.types.is_date32(data_type) or pa.types.is_time(data_type) or pa.types.is_timestamp(data_type)


def _pattern(data_type: pa.DataType) -> str:
    if pa.types.is_date32(data_type):
        return _DATE
    if pa.types.is_time(data_type):
        return _TIME
    return _LOCAL + _ZONE if data_type.tz else _LOCAL


# -- writing ------------------------------------------------------------------------------


def to_text(column: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """A date, time or timestamp column as the text Flink writes (see the module docstring).
    Values finer than a microsecond are refused before (:func:`tablelog.formats.json_values.unloggable_value`)."""
    data_type = column.type
    if pa.types.is_date32(data_type):
        return pc.cast(column, pa.string())
    if pa.types.is_time(data_type):
        text = pc.cast(pc.cast(column, pa.time64("us")), pa.string())
    else:  # an instant is written in UTC, where Arrow's text ends with "Z"
        text = pc.cast(pc.cast(column, pa.timestamp("us", tz="UTC" if data_type.tz else None)), pa.string())
    return pc.replace_substring_regex(text, _TRAILING_ZEROS, r"\1")


# -- reading, column-wise -----------------------------------------------------------------


def from_text(column: pa.ChunkedArray | pa.Array, data_type: pa.DataType) -> pa.ChunkedArray | pa.Array:
    """A text column (see the module docstring) in the table's type; ValueError when a value
    is not one of its texts (the caller then decodes the records one by one)."""
    matches = pc.match_substring_regex(column, f"^(?:{_pattern(data_type)})$")
    if pc.all(matches).as_py() is False:
        raise ValueError(f"a value is not the text of a {data_type}")
    if pa.types.is_date32(data_type):
        return pc.cast(column, data_type)
    if pa.types.is_time(data_type):
        # Arrow casts no text to a time: a time of day is a timestamp of 1970-01-01
        day = pc.binary_join_element_wise("1970-01-01 ", column, "")
        return pc.cast(pc.cast(day, pa.timestamp(data_type.unit)), data_type)
    return pc.cast(column, data_type)  # Arrow refuses a zone on a wall-clock time and none on an instant


# -- reading, one value -------------------------------------------------------------------


def python_reader(data_type: pa.DataType) -> Callable[[Any], Any]:
    """Turns one JSON value of a date, time or timestamp column (its text, or the integer of
    the older encoding) into the table's Python value; ValueError when it is none."""
    if pa.types.is_date32(data_type):
        return _date
    divisor = _NANOS[data_type.unit]
    if pa.types.is_time(data_type):
        return lambda value: None if value is None else _time(value, divisor, data_type)
    pattern = re.compile(_pattern(data_type))
    # The Python value of a wall-clock timestamp is the datetime itself; an instant's, with
    # the column's time zone, and a nanosecond's are what Arrow makes of the count.
    as_datetime = data_type.tz is None and data_type.unit != "ns"

    def convert(value: Any) -> Any:
        if value is None:
            return None
        nanos = _epoch_nanos(value, pattern)
        if nanos % divisor:
            raise ValueError(f"{value!r} is finer than the column's unit ({data_type})")
        if as_datetime:
            return _checked(lambda: _EPOCH + dt.timedelta(microseconds=nanos // 1000))
        return pa.array([nanos // divisor], pa.int64()).cast(data_type)[0].as_py()

    return convert


def _epoch_nanos(value: Any, pattern: re.Pattern[str]) -> int:
    if type(value) is int:  # epoch microseconds (the older encoding)
        return value * 1000
    if type(value) is not str:
        raise TypeError(f"{value!r} is not a timestamp")
    found = pattern.fullmatch(value)
    if found is None:
        raise ValueError(f"{value!r} is not a timestamp's text")
    year, month, day, hour, minute, second, fraction, *zone = found.groups()
    moment = dt.datetime(int(year), int(month), int(day), int(hour), int(minute), int(second))
    seconds = (moment - _EPOCH) // dt.timedelta(seconds=1) - (_offset_seconds(zone[0]) if zone else 0)
    return seconds * 1_000_000_000 + _nanos(fraction)


def _offset_seconds(zone: str) -> int:
    if zone == "Z":
        return 0
    hours, minutes = int(zone[1:3]), int(zone[4:6])
    if hours > 23 or minutes > 59:
        raise ValueError(f"{zone!r} is no time zone offset")
    return (-1 if zone[0] == "-" else 1) * (hours * 60 + minutes) * 60


def _time(value: Any, divisor: int, data_type: pa.DataType) -> Any:
    if type(value) is int:  # microseconds of the day (the older encoding)
        nanos = value * 1000
    elif type(value) is str:
        found = _TIME_TEXT.fullmatch(value)
        if found is None:
            raise ValueError(f"{value!r} is not a time's text")
        hour, minute, second, fraction = found.groups()
        moment = dt.time(int(hour), int(minute), int(second))  # checks the ranges
        nanos = ((moment.hour * 60 + moment.minute) * 60 + moment.second) * 1_000_000_000 + _nanos(fraction)
    else:
        raise TypeError(f"{value!r} is not a time")
    if not 0 <= nanos < _NANOS_A_DAY or nanos % divisor:
        raise ValueError(f"{value!r} is not a time of a {data_type} column")
    if divisor == 1:
        return pa.array([nanos], pa.int64()).cast(data_type)[0].as_py()
    micros = nanos // 1000
    return dt.time(micros // 3_600_000_000, micros // 60_000_000 % 60, micros // 1_000_000 % 60, micros % 1_000_000)


def _date(value: Any) -> Any:
    if value is None:
        return None
    if type(value) is int:  # epoch days (the older encoding)
        return _checked(lambda: _EPOCH_DAY + dt.timedelta(days=value))
    if type(value) is not str:
        raise TypeError(f"{value!r} is not a date")
    found = _DATE_TEXT.fullmatch(value)
    if found is None:
        raise ValueError(f"{value!r} is not a date's text")
    year, month, day = found.groups()
    return dt.date(int(year), int(month), int(day))


_DATE_TEXT = re.compile(_DATE)
_TIME_TEXT = re.compile(_TIME)


def _nanos(fraction: str | None) -> int:
    """The nanoseconds a fraction of a second's digits stand for."""
    return int(fraction.ljust(9, "0")) if fraction else 0


def _checked(make: Callable[[], Any]) -> Any:
    try:
        return make()
    except OverflowError as err:  # outside Python's dates: not a value of the table
        raise ValueError(str(err)) from None
