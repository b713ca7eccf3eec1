"""The time of a table partition, as Paimon's ``PartitionTimeExtractor`` tells it from the
partition's values (partition expiry's ``values-time`` strategy).

- ``partition.timestamp-pattern`` builds the timestamp text from the partition's values:
  ``$dt``, ``$dt $hour:00:00``; without it, the first partition column's value is the text.
- ``partition.timestamp-formatter`` parses that text, in Java's ``DateTimeFormatter``
  letters (``yyyyMMdd``, ``yyyy-MM-dd HH``); without it, ``yyyy-MM-dd`` or
  ``yyyy-MM-dd HH:mm:ss`` (fractions of a second allowed). A text of a date alone is its
  start of day.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping, Sequence
from typing import Any

from tablelog.option_values import InvalidValue

#: The Java ``DateTimeFormatter`` letters a formatter may use, and their ``strptime`` codes.
JAVA_LETTERS = {"yyyy": "%Y", "MM": "%m", "dd": "%d", "HH": "%H", "mm": "%M", "ss": "%S"}
_TOKEN = re.compile(r"'[^']*'|yyyy|MM|dd|HH|mm|ss|[A-Za-z]+|[^A-Za-z']+")
_VARIABLE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


def to_timestamp_formatter(value: Any) -> str | None:
    """A ``partition.timestamp-formatter``: Java letters tablelog can parse with, checked."""
    if value is None:
        return None
    text = str(value)
    strptime_format(text)
    return text


def strptime_format(formatter: str) -> str:
    """The ``strptime`` format of the Java formatter ``formatter``."""
    parts = []
    for token in _TOKEN.findall(formatter):
        if token.startswith("'"):
            parts.append(token[1:-1].replace("%", "%%") or "'")
        elif token in JAVA_LETTERS:
            parts.append(JAVA_LETTERS[token])
        elif token[0].isalpha():
            raise InvalidValue(
                f"{formatter!r}: {token!r} is not a pattern letter tablelog reads; use "
                f"{', '.join(JAVA_LETTERS)} and literal text (quoted as 'T' when it is a letter)"
            )
        else:
            parts.append(token.replace("%", "%%"))
    return "".join(parts)


def unknown_variables(pattern: str, partition_keys: Sequence[str]) -> list[str]:
    """What ``partition.timestamp-pattern`` names with ``$`` that is no partition column
    (what is left after each ``$<column>`` is replaced, as Paimon replaces them)."""
    return [f"${name}" for name in _VARIABLE.findall(_substituted(pattern, dict.fromkeys(partition_keys, "")))]


def _substituted(pattern: str, values: Mapping[str, Any]) -> str:
    """``pattern`` with each ``$<column>`` replaced by the column's value, column by
    column in partition order (Paimon's ``PartitionTimeExtractor``: ``$dtT$hh`` is
    ``$dt``, ``T``, ``$hh``)."""
    text = pattern
    for column, value in values.items():
        text = text.replace(f"${column}", _text(value))
    return text


def partition_time(
    values: Mapping[str, Any], partition_keys: Sequence[str], pattern: str | None, formatter: str | None
) -> datetime.datetime | None:
    """The time of the partition ``values`` (by partition column); None when its values
    do not make a time (Paimon leaves such a partition alone)."""
    if pattern is None:
        text = _text(values[partition_keys[0]])
    else:
        text = _substituted(pattern, {column: values.get(column) for column in partition_keys})
    try:
        if formatter is not None:
            return datetime.datetime.strptime(text, strptime_format(formatter))
        return _default_parse(text)
    except ValueError:
        return None


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _default_parse(text: str) -> datetime.datetime:
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        return datetime.datetime.combine(datetime.date.fromisoformat(text), datetime.time())
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d{1,9})?", text):
        raise ValueError(f"{text!r} is neither yyyy-MM-dd nor yyyy-MM-dd HH:mm:ss")
    return datetime.datetime.fromisoformat(text[:26])
