"""Parsing option values: the converters that tablelog's own options and the log-system
plugins share, so that a bad value gets the same message everywhere::

    invalid value '0' for option 'kafka.admin-timeout-ms': expected an integer >= 1

A secret's value is shown as ``******``. Plugins use these through :mod:`tablelog.plugin`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tablelog.errors import OptionError
from tablelog.redaction import shown_value


class InvalidValue(ValueError):
    """A converter refused a value; its message says what is allowed. The caller names
    the key: :func:`invalid_value` makes the :class:`~tablelog.errors.OptionError`."""


def parse_int(value: Any, minimum: int, maximum: int | None = None) -> int:
    """``value`` (an int or its text) as an int in ``[minimum, maximum]``."""
    bound = f" and <= {maximum}" if maximum is not None else ""
    try:
        number = int(str(value).strip())
    except ValueError:
        raise InvalidValue(f"expected an integer >= {minimum}{bound}") from None
    if number < minimum or (maximum is not None and number > maximum):
        raise InvalidValue(f"expected an integer >= {minimum}{bound}")
    return number


def parse_bool(value: Any) -> bool:
    """``value`` (a bool, or ``true``/``false``/``1``/``0``/``yes``/``no``) as a bool."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise InvalidValue("allowed: 'true', 'false'")


def invalid_value(key: str, value: Any, reason: str) -> OptionError:
    """The error for a bad ``value`` of the option ``key`` (its full key): names both,
    the value redacted when the key is a secret, and says what is allowed."""
    return OptionError(f"invalid value {shown_value(key, value)!r} for option {key!r}: {reason}")


def int_option(
    options: Mapping[str, Any], key: str, default: int, *, minimum: int, maximum: int | None = None,
    prefix: str = "",
) -> int:
    """``options[key]`` as an int (``default`` when it is not given); an
    :class:`~tablelog.errors.OptionError` naming ``prefix + key`` when it is not one."""
    raw = options.get(key)
    if raw is None:
        return default
    try:
        return parse_int(raw, minimum, maximum)
    except InvalidValue as err:
        raise invalid_value(prefix + key, raw, str(err)) from None


def bool_option(options: Mapping[str, Any], key: str, default: bool, *, prefix: str = "") -> bool:
    """``options[key]`` as a bool (``default`` when it is not given); an
    :class:`~tablelog.errors.OptionError` naming ``prefix + key`` when it is not one."""
    raw = options.get(key)
    if raw is None:
        return default
    try:
        return parse_bool(raw)
    except InvalidValue as err:
        raise invalid_value(prefix + key, raw, str(err)) from None


def seconds_option(
    options: Mapping[str, Any], key: str, default_ms: int, *, minimum_ms: int = 1, prefix: str = ""
) -> float:
    """A duration option given in milliseconds (a ``*-ms`` key), in seconds."""
    return int_option(options, key, default_ms, minimum=minimum_ms, prefix=prefix) / 1000.0


# Paimon's duration units (its TimeUtils), longest spellings first so "min" is not "m"+"in".
_DURATION_UNITS = (
    (1, ("ns", "nano", "nanos", "nanosecond", "nanoseconds")),
    (1_000, ("us", "µs", "micro", "micros", "microsecond", "microseconds")),
    (1_000_000, ("ms", "milli", "millis", "millisecond", "milliseconds")),
    (1_000_000_000, ("s", "sec", "secs", "second", "seconds")),
    (60_000_000_000, ("m", "min", "mins", "minute", "minutes")),
    (3_600_000_000_000, ("h", "hour", "hours")),
    (86_400_000_000_000, ("d", "day", "days")),
)


def parse_duration_ms(value: Any) -> int:
    """A duration as Paimon writes one (``1 h``, ``30min``, ``90s``, ``500 ms``; a bare
    number is milliseconds), in milliseconds."""
    import re

    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise InvalidValue("expected a duration >= 0 such as '1 h', '30 min', '90 s', '500 ms'")
        return value
    match = re.fullmatch(r"\s*(\d+)\s*([a-zµ]*)\s*", str(value).lower())
    nanos_per_unit = 1_000_000 if match is not None and not match[2] else None
    if match is not None and match[2]:
        nanos_per_unit = next((n for n, names in _DURATION_UNITS if match[2] in names), None)
    if match is None or nanos_per_unit is None:
        raise InvalidValue(
            "expected a duration: a number and a unit (d, h, min, s, ms), such as '1 h', '30 min', '500 ms'"
        )
    return int(match[1]) * nanos_per_unit // 1_000_000


def duration_text(millis: int) -> str:
    """``millis`` in the largest unit that divides it (``3600000`` -> ``1 h``)."""
    for unit, factor in (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1_000)):
        if millis and millis % factor == 0:
            return f"{millis // factor} {unit}"
    return f"{millis} ms"


# Paimon's MemorySize units (powers of 1024), by every spelling it accepts.
_MEMORY_UNITS = (
    (1, ("b", "bytes")),
    (1 << 10, ("k", "kb", "kibibytes")),
    (1 << 20, ("m", "mb", "mebibytes")),
    (1 << 30, ("g", "gb", "gibibytes")),
    (1 << 40, ("t", "tb", "tebibytes")),
)


def parse_memory_size(value: Any) -> int:
    """A size as Paimon writes one (``256 mb``, ``10gb``, ``1 kb``; a bare number is
    bytes), in bytes."""
    import re

    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise InvalidValue("expected a size >= 0 such as '256 mb', '10 gb', '512 kb'")
        return value
    match = re.fullmatch(r"\s*(\d+)\s*([a-z]*)\s*", str(value).lower())
    factor = next((f for f, names in _MEMORY_UNITS if match is not None and match[2] in names), None)
    if match is not None and not match[2]:
        factor = 1
    if match is None or factor is None:
        raise InvalidValue("expected a size: a number and a unit (b, kb, mb, gb, tb), such as '256 mb', '10 gb'")
    return int(match[1]) * factor
