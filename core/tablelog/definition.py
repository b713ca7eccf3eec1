"""What defines a table, checked where tables are created and opened.

A table's **definition** is what its log records and table files depend on: the
columns and primary key, the buckets, the log system, topic, formats and changelog
mode, the Paimon options that shape its files, and the options a log-system plugin
declares with ``OptionSpec(defines_table=True)`` (:func:`system_definition`). It is
fixed when the table is created, but for the columns, which change only by ``Table.alter`` (:mod:`tablelog.schema_rules`). Given again when the table is opened or written (Python API, CLI ``-o``,
Spark ``.option``), an equal value is fine and a different one is an error, before
anything is written: a write with another ``log.format`` or topic would leave
records that ``tail``, ``verify`` and readers cannot use. Everything else (secrets,
client settings, time-outs, reader overrides) is a runtime option and may differ.

At creation, column names tablelog or Paimon use themselves, column types the table
files would narrow, and Paimon options whose routing, merging or file layout tablelog
cannot follow, are refused with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import pyarrow as pa

from tablelog.errors import OptionError, SchemaMismatchError
from tablelog.formats.codec import KIND_COLUMN, SCHEMA_FIELD
from tablelog.logs import discovery
from tablelog.options import TableOptions, fixed_option_keys
from tablelog.paimon_options import (  # re-exported: part of what defines a table
    CHANGELOG_FILE_FORMATS as CHANGELOG_FILE_FORMATS,
)
from tablelog.paimon_options import (
    FILE_COMPRESSIONS as FILE_COMPRESSIONS,
)
from tablelog.paimon_options import (
    FILE_FORMATS as FILE_FORMATS,
)
from tablelog.paimon_options import (
    REFUSED_PAIMON_OPTIONS as REFUSED_PAIMON_OPTIONS,
)
from tablelog.paimon_options import (
    RefusedOption as RefusedOption,
)
from tablelog.paimon_options import (
    check_paimon_options as check_paimon_options,
)
from tablelog.partition_time import unknown_variables
from tablelog.redaction import shown_value
from tablelog.store import (
    KIND_FIELD,
    TableFiles,
    as_stored,
    lossy_stored_type,
    paimon_option_default,
    system_column_names,
)
from tablelog.topic_owners import default_topic, topic_option


def _reserved_columns() -> dict[str, str]:
    reserved = {
        KIND_COLUMN: "tablelog's row-kind column (writes, reads, the json log format)",
        KIND_FIELD: "the row-kind column in the files of tables created by earlier tablelog versions",
        SCHEMA_FIELD: "the schema id of every log record (the json log format)",
    }
    for name in sorted(system_column_names()):
        reserved[name] = "a Paimon system column"
    return reserved


#: Prefix of the key columns in Paimon's primary-key data files.
PAIMON_KEY_PREFIX = "_KEY_"


def reserved_column_names() -> list[str]:
    """The column names a table may not have (compared case-insensitively), and the prefix."""
    return [*_reserved_columns(), PAIMON_KEY_PREFIX + "*"]


def check_columns(schema: pa.Schema) -> None:
    """Refuse columns that could not be written or read back: reserved, empty or
    duplicate names (Spark and Paimon's engines resolve names case-insensitively)."""
    reserved = {name.lower(): (name, why) for name, why in _reserved_columns().items()}
    seen: dict[str, str] = {}
    for name in schema.names:
        if not name.strip():
            raise SchemaMismatchError(f"column names may not be empty; columns: {schema.names}")
        folded = name.lower()
        if folded in reserved or folded.startswith(PAIMON_KEY_PREFIX.lower()):
            own, why = reserved.get(folded, (PAIMON_KEY_PREFIX + "*", "Paimon's prefix of key columns"))
            raise SchemaMismatchError(
                f"column {name!r} is a reserved name ({own}: {why}); reserved column names: "
                f"{', '.join(reserved_column_names())}. Rename the column"
            )
        if folded in seen:
            raise SchemaMismatchError(
                f"columns {seen[folded]!r} and {name!r} have the same name (names are compared "
                "case-insensitively, as Spark and Paimon's engines resolve them)"
            )
        seen[folded] = name


def check_column_types(schema: pa.Schema) -> None:
    """Refuse a column the table files would keep in a narrower type
    (:func:`tablelog.store.lossy_stored_type`): created in it without a word, the column
    would then refuse the very values its declared type holds."""
    for field in schema:
        stored = lossy_stored_type(field.type)
        if stored is not None:
            raise SchemaMismatchError(
                f"column {field.name!r}: type {field.type} cannot be a table column: a Paimon table keeps it "
                f"as {stored}, so its values finer than that could not be written; declare the column {stored}"
            )


def check_partition_keys(schema: pa.Schema, partition: Sequence[str], primary_key: Sequence[str]) -> None:
    """Refuse partition columns Paimon refuses, naming them: unknown or repeated ones, in
    a primary-key table columns outside the key (a key's rows would be in several
    partitions, Paimon's cross-partition update, which pypaimon cannot write), or the
    whole key (one row per partition), and columns of a nested type."""
    if not partition:
        return
    unknown = [c for c in partition if c not in schema.names]
    if unknown:
        raise OptionError(
            f"partition={','.join(partition)!r} names unknown columns {unknown}; columns: {', '.join(schema.names)}"
        )
    if len(set(partition)) != len(partition):
        raise OptionError(f"partition={','.join(partition)!r} names a column twice")
    outside = [c for c in partition if c not in primary_key]
    if primary_key and outside:
        raise OptionError(
            f"partition={','.join(partition)!r} is not supported: partition columns {outside} are not in the "
            f"primary key ({', '.join(primary_key)}). Paimon requires a primary-key table's partition columns "
            "to be primary-key columns: add them to the primary key"
        )
    if primary_key and set(primary_key) == set(partition):
        raise OptionError(
            f"partition={','.join(partition)!r} is the whole primary key ({', '.join(primary_key)}): every "
            "partition would hold one row. Paimon requires other primary-key columns besides the partition's"
        )
    if not primary_key and set(partition) == set(schema.names):
        raise OptionError(
            f"partition={','.join(partition)!r} names every column: a table needs columns besides its partition's"
        )
    for name in partition:
        data_type = schema.field(name).type
        if pa.types.is_nested(data_type) or pa.types.is_floating(data_type):
            raise OptionError(
                f"partition column {name!r} has type {data_type}: a partition column is a primitive, "
                "non-floating type (Paimon keeps a partition value in a directory name)"
            )


def check_partition_expiry(options: TableOptions) -> None:
    """Refuse partition expiry where it cannot run: a table without partitions, an append
    table (its log holds inserts only: readers could not retract the dropped rows), a
    timestamp pattern naming other columns than the partition's."""
    if options.partition_expiration_time is None:
        return
    if not options.partition:
        raise OptionError(
            "partition.expiration-time is set on a table without partitions: give partition_keys "
            "(--partition, the 'partition' option), or leave the option out"
        )
    if not options.primary_key:
        raise OptionError(
            "partition.expiration-time needs a primary-key table: an expired partition's rows are retracted "
            "in the log (-D records), and a table without a primary key has a log of inserts only"
        )
    pattern = options.partition_timestamp_pattern
    unknown = unknown_variables(pattern or "", options.partition)
    if unknown:
        raise OptionError(
            f"partition.timestamp-pattern={pattern!r} names {unknown}, which are not partition columns "
            f"({', '.join(options.partition)}): write $<column>"
        )


def check_same_schema(identifier: str, table_schema: pa.Schema, given: pa.Schema) -> None:
    """Refuse a schema given for an existing table (``create_table(..., exist_ok=True)``)
    that is not the table's: the caller would write columns the table does not have."""
    wanted = as_stored(given)
    if [(f.name, f.type) for f in wanted] != [(f.name, f.type) for f in table_schema]:
        raise SchemaMismatchError(
            f"table {identifier!r} already exists with columns "
            f"{', '.join(f'{f.name} {f.type}' for f in table_schema)}; the given schema has "
            f"{', '.join(f'{f.name} {f.type}' for f in wanted)}. Columns change only by Table.alter or "
            "`tablelog alter` (docs/schema-evolution.md)"
        )


def system_definition(identifier: str, system: str, system_options: Mapping[str, str]) -> dict[str, str | None]:
    """The table's value (None: unset) of each option of its log system that defines it:
    the option naming the topic (the topic the table uses, derived when not given) and
    those the plugin declares ``OptionSpec(defines_table=True)``. ``system_options``: the
    table's stored ones."""
    values: dict[str, str | None] = {
        spec.key: system_options.get(spec.key, spec.default)
        for spec in discovery.declared_options(system) if spec.defines_table
    }
    values[topic_option(system)] = default_topic(identifier, system, system_options)
    return values


def defining_defaults(system: str, system_options: Mapping[str, str]) -> dict[str, str]:
    """The declared defaults of the defining options not given: stored with a table created,
    so that a plugin release with another default does not change what defines it."""
    return {
        spec.key: spec.default for spec in discovery.declared_options(system)
        if spec.defines_table and spec.default is not None and spec.key not in system_options
    }


def check_same_definition(
    store: TableFiles,
    stored: TableOptions,
    system_values: Mapping[str, str | None],
    given_keys: Sequence[str],
    given: TableOptions,
    given_system_options: Mapping[str, str],
    given_paimon_options: Mapping[str, str],
) -> None:
    """Refuse options given when a table is opened that would change its definition.

    ``stored``: the table's own options, ``system_values`` its log system's defining
    options (:func:`system_definition`); ``given_*``: the parsed options of this open
    (``given_keys`` the keys it named, normalized).
    """
    differences: list[tuple[str, Any, Any]] = []  # key, the table's value, the given value
    fields = {f.metadata["key"]: f.name for f in attrs.fields(TableOptions)}
    for key in fixed_option_keys():
        if key not in given_keys:
            continue
        actual, wanted = getattr(stored, fields[key]), getattr(given, fields[key])
        if key == "primary-key":
            actual = store.primary_key
        elif key == "partition":
            actual = store.partition_keys
        elif key == "bucket":
            actual = store.bucket
        elif key == "log.system.partitions":  # unset means the default of the table's buckets
            actual = stored.log_partition_count
        if wanted != actual:
            differences.append((key, actual, wanted))
    for key, value in system_values.items():
        if key in given_system_options and not _same_text(given_system_options[key], value):
            differences.append((key, value, given_system_options[key]))
    properties = store.properties
    for key, value in given_paimon_options.items():
        actual_value = properties.get(key, paimon_option_default(key))
        if not _same_text(value, actual_value):
            differences.append((key, actual_value, value))
    if differences:
        shown = "; ".join(
            f"{key}: the table has {_text(shown_value(key, actual))}, given {_text(shown_value(key, wanted))}"
            for key, actual, wanted in differences
        )
        raise OptionError(
            f"table {store.identifier!r}: options that define the table differ from the table's ({shown}). "
            "They are fixed when the table is created: give the table's value or leave the option out; "
            "nothing was written"
        )


def _same_text(given: str, actual: str | None) -> bool:
    if actual is None:
        return False
    given, actual = given.strip(), actual.strip()
    booleans = ("true", "false")
    return given == actual or (actual.lower() in booleans and given.lower() == actual.lower())


def _text(value: Any) -> str:
    if value is None:
        return "it unset"
    if isinstance(value, tuple):
        return repr(",".join(value)) if value else "none"
    return repr(getattr(value, "value", value))
