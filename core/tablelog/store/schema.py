"""What Paimon itself defines about a table: its option keys and their defaults, its
system columns, and how it stores an Arrow schema; plus the row-kind column earlier
tablelog versions added to primary-key tables (Paimon's ``rowkind.field`` reads it, so
``-U``/``-D`` rows are applied as retractions; readers never show it). Tables created
now have none: their rows' kinds are Paimon's own ``_VALUE_KIND`` (:mod:`.writes`).
"""

from __future__ import annotations

import functools

import pyarrow as pa

KIND_FIELD = "_tablelog_kind"


@functools.cache
def paimon_option_keys() -> frozenset[str]:
    """Every table option key pypaimon knows, allowed through to the table; and Paimon's
    ``data-file.thin-mode``, which pypaimon does not know but tablelog's writers follow
    (:mod:`tablelog.store.layout`)."""
    from pypaimon.common.options.core_options import CoreOptions

    from tablelog.store.layout import THIN_MODE

    keys = {THIN_MODE}
    for value in vars(CoreOptions).values():
        key = getattr(value, "key", None)
        if callable(key):
            try:
                keys.add(str(key()))
            except TypeError:
                continue
    return frozenset(keys)


@functools.cache
def paimon_option_default(key: str) -> str | None:
    """Paimon's default of the table option ``key`` as text, or None when it has none."""
    from pypaimon.common.options.core_options import CoreOptions

    from tablelog.store.layout import THIN_MODE

    if key == THIN_MODE:
        return "false"  # Paimon's CoreOptions.DATA_FILE_THIN_MODE; pypaimon lacks it
    for value in vars(CoreOptions).values():
        if callable(getattr(value, "key", None)) and value.key() == key:
            default = value.default_value() if value.has_default_value() else None
            if default is None:
                return None
            if isinstance(default, bool):
                return "true" if default else "false"
            return str(getattr(default, "value", default))
    return None


def system_column_names() -> frozenset[str]:
    """The column names Paimon keeps for itself (``_SEQUENCE_NUMBER``, ``_VALUE_KIND``...)."""
    from pypaimon.table.special_fields import SpecialFields

    return frozenset(SpecialFields.SYSTEM_FIELD_NAMES)


def as_stored(schema: pa.Schema) -> pa.Schema:
    """``schema`` as a Paimon table stores and returns it (``large_string`` -> ``string``...)."""
    from pypaimon import Schema
    from pypaimon.schema.data_types import PyarrowFieldParser

    return PyarrowFieldParser.from_paimon_schema(Schema.from_pyarrow_schema(schema).fields)


def lossy_stored_type(data_type: pa.DataType) -> pa.DataType | None:
    """The type a Paimon table would keep a ``data_type`` column in, when that loses values;
    None when it keeps them all (``large_string`` -> ``string``, ``time32[s]`` ->
    ``time32[ms]`` lose none). pypaimon keeps every time of day to the millisecond: it
    stores ``TIME(0)`` whatever the unit and reads ``time32[ms]`` back."""
    if pa.types.is_time64(data_type):
        return as_stored(pa.schema([("column", data_type)])).field(0).type
    return None


@functools.cache
def paimon_immutable_option_keys() -> frozenset[str]:
    """The table options Paimon refuses to change once a table has snapshots."""
    from pypaimon.common.options.core_options import CoreOptions

    return frozenset(CoreOptions.IMMUTABLE_OPTIONS)
