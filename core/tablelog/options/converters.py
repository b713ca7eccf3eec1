"""The value converters of tablelog's own options, and their values back as text.

Each converter takes a value as given (text, or already the type) and returns it
converted, or raises :class:`~tablelog.option_values.InvalidValue` saying what is
allowed; the caller names the key (:func:`~tablelog.option_values.invalid_value`).
"""

from __future__ import annotations

import datetime
import enum
import re
from typing import Any

from tablelog.option_values import (
    InvalidValue,
    duration_text,
    parse_bool,
    parse_duration_ms,
    parse_int,
    parse_memory_size,
)


def to_enum(enum_type: type[enum.Enum]) -> Any:
    def convert(value: Any) -> Any:
        if isinstance(value, enum_type):
            return value
        try:
            return enum_type(str(value).strip().lower())
        except ValueError:
            allowed = ", ".join(repr(m.value) for m in enum_type)
            raise InvalidValue(f"allowed: {allowed}") from None

    return convert


def to_bool(value: Any) -> bool:
    return parse_bool(value)


def to_int(minimum: int) -> Any:
    def convert(value: Any) -> int | None:
        return None if value is None else parse_int(value, minimum)

    return convert


def to_duration(value: Any) -> datetime.timedelta | None:
    if value is None or isinstance(value, datetime.timedelta):
        return value
    return datetime.timedelta(milliseconds=parse_duration_ms(value))


def to_positive_duration(value: Any) -> datetime.timedelta:
    given = to_duration(value)
    if not given:
        raise InvalidValue("expected a duration > 0 such as '1 h', '30 min', '90 s', '500 ms'")
    return given


def to_memory_size(value: Any) -> int | None:
    """A size in bytes (Paimon's MemorySize text); None: unbounded."""
    return None if value is None else parse_memory_size(value)


def to_split_size(value: Any) -> int:
    """A size in bytes > 0 (Paimon's MemorySize text)."""
    size = parse_memory_size(value)
    if size < 1:
        raise InvalidValue("expected a size > 0 such as '128 mb', '32 mb', '512 kb'")
    return size


def to_optional_text(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    if not text:
        raise InvalidValue("expected a non-empty text")
    return text


def to_consumer_id(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    # Paimon stores a consumer as the file consumer/consumer-<id>: the id is a file name.
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}", text):
        raise InvalidValue(
            "expected a consumer id of letters, digits, '_', '.', '-' (starting with a letter or "
            "digit, at most 128 characters)"
        )
    return text


def to_columns(value: Any) -> tuple[str, ...]:
    """Column names, comma-separated (or a tuple of them already)."""
    if isinstance(value, tuple):
        return value
    return tuple(c.strip() for c in str(value).split(",") if c.strip())


#: ``bucket = -1``: Paimon's dynamic bucket mode (its default for a primary-key table).
DYNAMIC_BUCKET = -1


def to_bucket(value: Any) -> int:
    text = str(value).strip()
    if text == "-2":
        raise InvalidValue(
            "postponed buckets (-2) are not supported: Paimon keeps their rows out of every read until "
            "a postpone compaction (a Flink job) moves them into real buckets, so a snapshot would publish "
            "log records of rows its readers cannot see. Allowed: an integer >= 1 (fixed buckets) or -1 "
            "(dynamic buckets)"
        )
    if text == str(DYNAMIC_BUCKET):
        return DYNAMIC_BUCKET
    try:
        number: int = to_int(1)(value)
    except InvalidValue:
        raise InvalidValue("expected an integer >= 1 (fixed buckets) or -1 (dynamic buckets)") from None
    return number


def to_share(value: Any) -> float:
    """A share of a whole: a number above 0 and at most 1."""
    try:
        share = float(str(value).strip())
    except ValueError:
        raise InvalidValue("expected a number above 0 and at most 1, such as 0.5") from None
    if not 0 < share <= 1:
        raise InvalidValue("expected a number above 0 and at most 1, such as 0.5")
    return share


def to_nice(value: Any) -> int:
    """A nice increment, 0 to 19 (Linux's lowest priority is 19 steps below the default)."""
    return parse_int(value, 0, 19)


def to_system_name(value: Any) -> str:
    text = str(value).strip().lower()
    if not re.fullmatch(r"[a-z][a-z0-9_-]*", text):
        raise InvalidValue("expected a log system name such as 'kafka' (letters, digits, '-', '_')")
    return text


def as_text(value: Any) -> str:
    """A converted value as the text that converts back to it (stored table properties,
    the docs' defaults)."""
    if isinstance(value, datetime.timedelta):
        return duration_text(value // datetime.timedelta(milliseconds=1))
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(value)
    return str(value)
