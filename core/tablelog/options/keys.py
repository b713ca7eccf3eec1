"""Which option each given key is, and what is wrong with the first that is wrong.

:func:`read_values` converts the value of each tablelog option once, keeping why a
value is refused; :func:`sort_values` then sorts the keys into tablelog's options, a
log system's (by prefix: ``kafka.*``) and Paimon's, and raises the first problem in
the order the options were given: a key given twice with different values, a refused
value, an unknown key with a "did you mean" hint. Two steps because the log systems
whose keys a table accepts may be known only once the table is open (its own system
need not be installed): an entry point converts what it was given at once, and the
table sorts it (:class:`tablelog.options.given.GivenOptions`).

The warehouse's ``s3.*`` keys and a log system's own options are split off here too.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from tablelog.errors import OptionError
from tablelog.option_values import InvalidValue, invalid_value, parse_bool
from tablelog.redaction import REDACTED, is_secret


@attrs.frozen
class GivenValue:
    """One option as given: its key as given and lower-cased, its value and, for a
    tablelog option (``field``: its attribute), the value converted or why not."""

    given_key: str
    key: str
    value: Any = attrs.field(repr=False)  # a secret, maybe
    field: str | None = None
    converted: Any = attrs.field(default=None, repr=False)
    refusal: str | None = attrs.field(default=None, repr=False)

    def same_as(self, other: GivenValue) -> bool:
        """Whether two values of this key mean the same: ``2`` and ``"2"`` for ``bucket``,
        ``"id, v"`` and ``"id,v"`` for ``primary-key``; other keys compare as text."""
        if self.field is not None and self.refusal is None and other.refusal is None:
            return bool(self.converted == other.converted)
        return str(self.value).strip() == str(other.value).strip()


def read_values(raw: Mapping[str, Any], fields: Mapping[str, attrs.Attribute[Any]]) -> tuple[GivenValue, ...]:
    """``raw``'s options in order, each tablelog option's value converted by its field
    (``fields``: by key) once."""
    values = []
    for given_key, value in raw.items():
        key = given_key.strip().lower()
        field = fields.get(key)
        if field is None:
            values.append(GivenValue(given_key, key, value))
            continue
        try:
            values.append(GivenValue(given_key, key, value, field.name, field.metadata["convert"](value)))
        except InvalidValue as err:
            values.append(GivenValue(given_key, key, value, field.name, refusal=str(err)))
    return tuple(values)


def sort_values(
    values: Sequence[GivenValue], option_keys: Iterable[str], log_systems: Iterable[str], passthrough: Iterable[str]
) -> tuple[dict[str, Any], dict[str, str], dict[str, str]]:
    """``(tablelog options by attribute, system options, Paimon options)``; ``log_systems``:
    the prefixes accepted besides the named ``log.system``'s, ``passthrough``: the Paimon
    keys allowed, and key prefixes ending in ``*`` (``fields.*``). Raises the first problem in order."""
    # The named log system's own keys are accepted even when it is not installed,
    # so that the discovery error ("pip install ...") is the one users see.
    named = {str(v.value).strip().lower() for v in values if v.key == "log.system"}
    prefixes = {*log_systems, *named}
    allowed_passthrough = {k for k in passthrough if not k.endswith("*")}
    passthrough_prefixes = tuple(k[:-1] for k in passthrough if k.endswith("*"))
    _refuse_repeated_keys(values)
    options: dict[str, Any] = {}
    system_options: dict[str, str] = {}
    paimon_options: dict[str, str] = {}
    for given in values:
        key = given.key
        if given.field is not None:
            if given.refusal is not None:
                raise invalid_value(key, given.value, given.refusal)
            options[given.field] = given.converted
        elif "." in key and key.split(".", 1)[0] in prefixes:
            system_options[key] = str(given.value)
        elif key in allowed_passthrough:
            paimon_options[key] = str(given.value)
        elif key.startswith(passthrough_prefixes):
            paimon_options[_names_kept(given.given_key)] = str(given.value)
        else:
            hint = _closest(key, [*option_keys, *sorted(allowed_passthrough)])
            prefix_hint = ""
            if "." in key and not hint:
                prefix_hint = f"; keys with a prefix belong to a log system ({', '.join(sorted(prefixes))})"
            raise OptionError(f"unknown option {key!r}{hint}{prefix_hint}")
    return options, system_options, paimon_options


def _names_kept(given_key: str) -> str:
    """A key of a passthrough prefix as Paimon reads it: its middle names columns
    (``fields.Amount.aggregate-function``), which are case-sensitive, so only the prefix
    and the last segment are lower-cased."""
    first, _, rest = given_key.strip().partition(".")
    names, dot, last = rest.rpartition(".")
    return f"{first.lower()}.{names}{dot}{last.lower()}"


def _closest(key: str, candidates: Sequence[str]) -> str:
    """``; did you mean 'x'?`` naming the closest candidate, or nothing."""
    hint = difflib.get_close_matches(key, candidates, n=1, cutoff=0.6)
    return f"; did you mean {hint[0]!r}?" if hint else ""


def _refuse_repeated_keys(values: Sequence[GivenValue]) -> None:
    """One key given twice (``Bucket`` and ``bucket``) with different values: an error,
    where a mapping would silently keep one of them."""
    first: dict[str, GivenValue] = {}
    for given in values:
        other = first.setdefault(given.key, given)
        if other is given or other.same_as(given):
            continue
        shown = [REDACTED if is_secret(given.key) else v.value for v in (other, given)]
        raise OptionError(
            f"option {given.key!r} is given twice with different values: {other.given_key}={shown[0]!r} and "
            f"{given.given_key}={shown[1]!r}; give it once"
        )


#: The prefix of the warehouse's connection options (``s3.endpoint``...): runtime
#: options, like secrets, passed to the catalog and never stored in the table.
WAREHOUSE_PREFIX = "s3."


def split_warehouse_options(raw: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, Any]]:
    """``(warehouse options, the other options)``: the ``s3.*`` keys, checked against
    :data:`tablelog.store.s3.S3_OPTION_KEYS`, apart from the table's options."""
    from tablelog.store.s3 import (
        S3_OPTION_KEYS,
        TIMEOUT_DEFAULTS,
        endpoint_problem,
        timeout_problem,
    )

    warehouse: dict[str, str] = {}
    rest: dict[str, Any] = {}
    for given_key, value in raw.items():
        key = str(given_key).strip().lower()
        if not key.startswith(WAREHOUSE_PREFIX):
            rest[given_key] = value
            continue
        if key not in S3_OPTION_KEYS:
            raise OptionError(
                f"unknown option {key!r}{_closest(key, S3_OPTION_KEYS)}"
                f"; an s3:// warehouse knows: {', '.join(S3_OPTION_KEYS)}"
            )
        text = str(value).strip()
        if key == "s3.endpoint" and text and (problem := endpoint_problem(text)):
            raise invalid_value(key, value, problem)
        if key in TIMEOUT_DEFAULTS and (problem := timeout_problem(key, text)):
            raise invalid_value(key, value, problem)
        if key == "s3.path-style-access":
            try:
                text = "true" if parse_bool(text) else "false"
            except InvalidValue as err:
                raise invalid_value(key, value, str(err)) from None
        if key in warehouse and warehouse[key] != text:
            raise OptionError(f"option {key!r} is given twice with different values; give it once")
        warehouse[key] = text
    return warehouse, rest


def split_system_options(system: str, system_options: Mapping[str, str]) -> dict[str, str]:
    """The options of ``system`` with its prefix removed (``kafka.acks`` -> ``acks``)."""
    prefix = system + "."
    return {k[len(prefix):]: v for k, v in system_options.items() if k.startswith(prefix)}
