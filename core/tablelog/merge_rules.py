"""A table's merge options (``merge-engine``, ``sequence.field``, ``fields.<f>.aggregate-function``,
``changelog-producer``, the delete options...): checked as Paimon checks them when a table is
created, and when a log is attached to a table created elsewhere, by
:func:`tablelog.merging.parse_merge_options`, which also refuses what tablelog does not
build; fixed once the table exists. Part of a table's definition (:mod:`tablelog.definition`).

They are fixed because the rows already in the table were merged under the table's rule,
and the log's past changes were computed with it: a table and log merged under another
rule from some snapshot on would not replay to the same rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pyarrow as pa

from tablelog.errors import OptionError, SchemaChangeError
from tablelog.merging import parse_merge_options

#: The merge options Paimon defines by name (``fields.<f>.…`` are the others: :data:`FIELD_PREFIX`).
MERGE_OPTION_KEYS = frozenset({
    "merge-engine", "sequence.field", "sequence.field.sort-order",
    "changelog-producer", "changelog-producer.row-deduplicate", "changelog-producer.row-deduplicate-ignore-fields",
    "partial-update.remove-record-on-delete", "partial-update.remove-record-on-sequence-group",
    "aggregation.remove-record-on-delete",
    "ignore-delete", "first-row.ignore-delete", "deduplicate.ignore-delete", "partial-update.ignore-delete",
    "ignore-update-before",
    # refused by the merging package with their reason, unless given their default
    "lookup-wait", "changelog-producer.lookup-wait", "force-lookup", "sequence.snapshot-ordering",
})
#: ``fields.<names>.<option>`` and ``fields.default-aggregate-function``.
FIELD_PREFIX = "fields."
#: The ``fields.<f>.<option>`` options the merging package reads (some to refuse them).
FIELD_OPTIONS = (
    "aggregate-function", "ignore-retract", "list-agg-delimiter", "distinct", "sequence-group",
    "nested-key", "nested-key-null-strategy", "nested-sequence-field", "count-limit", "ts-field",
)
#: The keys option parsing lets through to the table (``*``: a prefix).
PASSTHROUGH = (*sorted(MERGE_OPTION_KEYS), FIELD_PREFIX + "*")

#: On a table without a primary key, the values Paimon's defaults mean (accepted as before).
_WITHOUT_PRIMARY_KEY = {
    "merge-engine": ("deduplicate",),
    "changelog-producer": ("none",),  # pypaimon refuses the others there
    "ignore-delete": ("false",),
}
#: Values Paimon reads case-insensitively (enums, booleans); others (columns, delimiters) as they are.
_WORDS = frozenset({
    "true", "false", "none", "input", "lookup", "full-compaction", "ascending", "descending",
    "deduplicate", "first-row", "partial-update", "aggregation",
})
_FIXED_REASON = (
    "a table's merge options are fixed when it is created: the rows already in the table were merged "
    "under the old rule, and the log's past changes were computed with it, so they would not match "
    "the table any more; create a new table with the new options and copy the rows into it"
)


def is_merge_option(key: str) -> bool:
    return key in MERGE_OPTION_KEYS or key.startswith(FIELD_PREFIX)


def check_merge_options(
    options: Mapping[str, str], schema: pa.Schema, primary_key: Sequence[str], partition_keys: Sequence[str] = (),
) -> None:
    """Refuse the merge options among ``options`` (a new table's Paimon options, or an
    existing table's properties) that Paimon or tablelog refuse, with the reason."""
    given = {k: v for k, v in options.items() if is_merge_option(k)}
    if not given:
        return
    for key, value in given.items():
        if key.startswith(FIELD_PREFIX) and key != FIELD_PREFIX + "default-aggregate-function":
            option = key.rsplit(".", 1)[-1]
            if key.count(".") < 2 or option not in FIELD_OPTIONS:
                raise OptionError(
                    f"table option {key}={value!r} is not supported: tablelog knows the merge options "
                    f"fields.<column>.{{{','.join(FIELD_OPTIONS[:5])}}} and fields.default-aggregate-function "
                    "(docs/merge-engines.md)"
                )
    if not primary_key:
        for key, value in given.items():
            if value.strip().lower() not in _WITHOUT_PRIMARY_KEY.get(key, ()):
                raise OptionError(
                    f"table option {key}={value!r} is not supported on a table without a primary key: Paimon "
                    "merges the rows of a key, and ignores merge options on a table without one; give a primary key"
                )
        return
    parse_merge_options(given, schema, primary_key, partition_keys)


def check_merge_options_kept(identifier: str, sets: Mapping[str, str], table_options: Mapping[str, str],
                             defaults: Mapping[str, str | None]) -> None:
    """Refuse an alter that sets a merge option to another value than the table's
    (``defaults``: Paimon's default of each key the table does not set); the same value is fine."""
    for key, value in sets.items():
        if not is_merge_option(key):
            continue
        current = table_options.get(key, defaults.get(key))
        if current is not None and (value == current or current.lower() in _WORDS and value.lower() == current.lower()):
            continue
        shown = "it unset" if current is None else repr(current)
        raise SchemaChangeError(
            f"table {identifier!r}: set option {key}={value!r} is not allowed (the table has {shown}): "
            f"{_FIXED_REASON}; nothing was changed"
        )


def merge_option_columns(table_options: Mapping[str, str]) -> dict[str, str]:
    """The columns the table's merge options name, each with the first option naming it:
    a drop or rename of one would leave the option naming a column the table lacks."""
    named: dict[str, str] = {}
    for key, value in table_options.items():
        columns: list[str] = []
        if key in ("sequence.field", "changelog-producer.row-deduplicate-ignore-fields",
                   "partial-update.remove-record-on-sequence-group"):
            columns = [c.strip() for c in value.split(",")]
        elif key.startswith(FIELD_PREFIX) and key.count(".") >= 2:
            columns = key[len(FIELD_PREFIX):].rsplit(".", 1)[0].split(",")
            if key.endswith(".sequence-group"):
                columns += value.split(",")
        for column in columns:
            if column:
                named.setdefault(column, key)
    return named
