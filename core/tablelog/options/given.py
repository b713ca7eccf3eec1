"""The options an entry point was given, parsed once.

An entry point (``create_table``, ``open_table``, a Spark read or write, the dashboard)
parses the options it was given into a :class:`GivenOptions`, once: the warehouse's
``s3.*`` keys apart, the value of each tablelog option converted. The layers below take
that object and parse nothing again: opening a table checks it against the table
(:meth:`GivenOptions.check`: the keys of which log systems a table accepts depend on
its own, which need not be installed) and lays it over the table's stored options; a
Spark executor opens the table with the driver's object.

Nothing is raised while parsing: each problem is raised where the options are used,
in the order they were given, so an entry point that parses early still reports what
it reported when each layer parsed for itself: a missing table before a bad option
for it, and only the options it uses (a Spark write to an existing table passes over
its read options).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

import attrs

from tablelog.errors import OptionError
from tablelog.options import keys as option_keys
from tablelog.options.definitions import TableOptions, option_fields
from tablelog.options.keys import GivenValue, sort_values, split_warehouse_options


@attrs.frozen
class GivenOptions:
    """Options as given, parsed: see the module's docstring."""

    values: tuple[GivenValue, ...] = ()
    warehouse_options: dict[str, str] = attrs.field(factory=dict, repr=False)
    #: Why the warehouse options were refused (raised by :attr:`warehouse`).
    refusal: str | None = None

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> GivenOptions:
        """An entry point's options: the warehouse's apart, the rest read."""
        try:
            warehouse, rest = split_warehouse_options(raw)
        except OptionError as err:
            return cls(refusal=str(err))
        return cls(option_keys.read_values(rest, option_fields()), warehouse)

    @classmethod
    def read(cls, raw: Mapping[str, Any]) -> GivenOptions:
        """Options among which an ``s3.*`` key is no warehouse option (a table's stored
        properties, an alter's ``SetOption``)."""
        return cls(option_keys.read_values(raw, option_fields()))

    @property
    def warehouse(self) -> dict[str, str]:
        """The warehouse's options (``s3.*``); raises the error of a refused one."""
        if self.refusal is not None:
            raise OptionError(self.refusal)
        return self.warehouse_options

    @property
    def keys(self) -> tuple[str, ...]:
        """The keys given (but the warehouse's), lower-cased, in order."""
        return tuple(given.key for given in self.values)

    def check(
        self, *, log_systems: Iterable[str] = (), passthrough: Iterable[str] = ()
    ) -> tuple[TableOptions, dict[str, str], dict[str, str]]:
        """``(options, system_options, paimon_options)``, or the first problem raised, as
        :meth:`TableOptions.parse <tablelog.options.definitions.TableOptions.parse>` does."""
        fields = option_fields()
        values, system_options, paimon_options = sort_values(self.values, fields, log_systems, passthrough)
        return TableOptions(**values), system_options, paimon_options

    def without(self, keys: Collection[str]) -> GivenOptions:
        """These options but ``keys`` (lower-cased)."""
        return attrs.evolve(self, values=tuple(given for given in self.values if given.key not in keys))

    def over(self, base: GivenOptions) -> GivenOptions:
        """These options laid over ``base``'s, as mappings merge: a key given here (in any
        case) takes its value from here, its place from ``base``."""
        merged = {given.given_key: given for given in base.values}
        for given in self.values:
            merged[given.key] = attrs.evolve(given, given_key=given.key)
        return GivenOptions(tuple(merged.values()))

    def with_argument(self, key: str, argument: str, value: str) -> GivenOptions:
        """These options with a keyword argument (``create_table(primary_key=...)``) as the
        option ``key``, refusing a different value given for it among the options."""
        argument_value = option_keys.read_values({key: value}, option_fields())[0]
        values = list(self.values)
        last = next((i for i in reversed(range(len(values))) if values[i].key == key), None)
        if last is not None:
            given = values.pop(last)
            if not given.same_as(argument_value):
                raise OptionError(
                    f"{key!r} is given twice with different values: {argument}={value!r} and "
                    f"options[{given.given_key!r}]={given.value!r}; give it once"
                )
        same_key = next((i for i, given in enumerate(values) if given.given_key == key), None)
        if same_key is None:
            values.append(argument_value)
        else:
            values[same_key] = argument_value
        return attrs.evolve(self, values=tuple(values))
