"""What a table's schema may become: the checks of ``Table.alter`` and ``tablelog alter``.

The changes are checked one after the other against the schema the earlier ones
leave, all before anything is stored: a refused change refuses the whole alter and
the table (its schema id, snapshots and topic) stays as it was.

Allowed: add a nullable column (last, first, or after a column); rename a column that
is not in the primary key; drop a column that is neither in the primary key nor in
the bucket key; widen a type (``int8`` -> ``int16`` -> ``int32`` -> ``int64``,
``float32`` -> ``float64``, a decimal's precision up without losing digits). Refused,
beyond what Paimon itself refuses:

- narrowing or any other type change: Paimon would allow ``bigint`` -> ``int``, and
  reads of older files would wrap the values that do not fit;
- renaming a primary-key column (Paimon allows it): the log's record key is the key
  as JSON (``{"id": 7}``), so one row would have two keys in the log, and a compacted
  topic would keep the old key's last record for ever;
- dropping or retyping a bucket-key column: a row's bucket (and so its log partition)
  is a hash of those columns' values;
- changing the primary key, the bucket count or any option that defines the table; the
  options of the log's records change only with the log itself (:mod:`tablelog.log_change`);
- dropping or renaming a column the table's merge options name (``sequence.field``,
  ``fields.<f>.aggregate-function``, a sequence group...): the option would name a column
  the table lacks, and the rows merged by it would be merged otherwise (:mod:`tablelog.merge_rules`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import pyarrow as pa

from tablelog.definition import check_column_types, check_columns
from tablelog.errors import SchemaChangeError
from tablelog.formats.codec import check_loggable
from tablelog.merge_rules import is_merge_option, merge_option_columns
from tablelog.options import fixed_option_keys, log_option_keys
from tablelog.store import (
    AddColumn,
    DropColumn,
    RenameColumn,
    SchemaChange,
    SetOption,
    WidenColumn,
    paimon_immutable_option_keys,
)

_INTEGERS = (pa.int8(), pa.int16(), pa.int32(), pa.int64())
_FLOATS = (pa.float32(), pa.float64())
WIDENINGS = (
    "int8 -> int16 -> int32 -> int64 (tinyint, smallint, int, bigint), float32 -> float64 "
    "(float, double), decimal(p,s) -> decimal(p2,s2) with s2 >= s and p2 - s2 >= p - s"
)


def is_widening(old: pa.DataType, new: pa.DataType) -> bool:
    """Whether every value of ``old`` is exactly a value of ``new`` (and they differ)."""
    for ladder in (_INTEGERS, _FLOATS):
        if old in ladder and new in ladder:
            return ladder.index(new) > ladder.index(old)
    if pa.types.is_decimal(old) and pa.types.is_decimal(new):
        return (new.scale >= old.scale and new.precision - new.scale >= old.precision - old.scale
                and (new.precision, new.scale) != (old.precision, old.scale))
    return False


def check_changes(
    identifier: str,
    schema: pa.Schema,
    primary_key: Sequence[str],
    bucket_key: Sequence[str],
    changes: Sequence[SchemaChange],
    projected: Sequence[str] = (),
    log_change: bool = False,
    table_options: Mapping[str, str] | None = None,
) -> None:
    """Raise :class:`SchemaChangeError` for the first change the table cannot take.
    ``projected``: the columns named in ``log.arrow.projection``. ``log_change``: the alter
    attaches, moves or detaches the table's log (:mod:`tablelog.log_change`), and may set the
    options of the log's records with it. ``table_options``: the table's options (its merge
    options name columns)."""
    if not changes:
        raise SchemaChangeError(f"table {identifier!r}: the alter names no change")
    fields = {f.name: f for f in schema}
    order = list(schema.names)
    merge_columns = merge_option_columns(table_options or {})

    def refuse(change: SchemaChange, why: str) -> SchemaChangeError:
        return SchemaChangeError(
            f"table {identifier!r}: {describe(change)} is not allowed: {why}; nothing was changed "
            f"(columns: {', '.join(order)})"
        )

    def existing(change: SchemaChange, name: str) -> pa.Field:
        if name not in fields:
            raise refuse(change, f"the table has no column {name!r}")
        return fields[name]

    def new_name(change: SchemaChange, name: str) -> None:
        clash = next((n for n in order if n.lower() == name.lower()), None)
        if clash is not None:
            raise refuse(change, f"the table already has a column {clash!r} (names are compared case-insensitively)")
        try:
            check_columns(pa.schema([pa.field(name, pa.null())]))
        except Exception as err:
            raise refuse(change, str(err)) from None

    for change in changes:
        if isinstance(change, AddColumn):
            new_name(change, change.name)
            if not change.nullable:
                raise refuse(change, "a new column must be nullable: the rows written before it have no value "
                                     "for it (and Paimon refuses NOT NULL there)")
            if change.first and change.after is not None:
                raise refuse(change, "give either first or after, not both")
            if change.after is not None:
                existing(change, change.after)
            try:
                check_loggable(pa.schema([pa.field(change.name, change.type)]))
                check_column_types(pa.schema([pa.field(change.name, change.type)]))
            except Exception as err:
                raise refuse(change, str(err)) from None
            fields[change.name] = pa.field(change.name, change.type)
            at = 0 if change.first else order.index(change.after) + 1 if change.after else len(order)
            order.insert(at, change.name)
        elif isinstance(change, RenameColumn):
            field = existing(change, change.name)
            if change.name in primary_key:
                raise refuse(change, "it is a primary-key column; the log's record key is the primary key "
                                     "as JSON, so one row would have two keys in the log")
            if change.name in projected:
                raise refuse(change, _projected_why(projected))
            if change.name in merge_columns:
                raise refuse(change, _merge_why(change.name, merge_columns))
            if change.new_name != change.name:
                new_name(change, change.new_name)
            del fields[change.name]
            fields[change.new_name] = field.with_name(change.new_name)
            order[order.index(change.name)] = change.new_name
            bucket_key = [change.new_name if c == change.name else c for c in bucket_key]
        elif isinstance(change, DropColumn):
            existing(change, change.name)
            if change.name in primary_key:
                raise refuse(change, "it is a primary-key column")
            if change.name in bucket_key:
                raise refuse(change, f"it is in the bucket key ({', '.join(bucket_key)}), whose values choose "
                                     "each row's bucket and log partition")
            if change.name in projected:
                raise refuse(change, _projected_why(projected))
            if change.name in merge_columns:
                raise refuse(change, _merge_why(change.name, merge_columns))
            if len(order) == 1:
                raise refuse(change, "it is the table's last column")
            del fields[change.name]
            order.remove(change.name)
        elif isinstance(change, WidenColumn):
            field = existing(change, change.name)
            if change.name in primary_key or change.name in bucket_key:
                raise refuse(change, "it is a primary-key or bucket-key column, whose values choose each "
                                     "row's bucket and log partition")
            if not is_widening(field.type, change.type):
                raise refuse(change, f"{field.type} -> {change.type} is not a widening; allowed: {WIDENINGS}")
            fields[change.name] = field.with_type(change.type)
        elif isinstance(change, SetOption):
            _check_option(change, refuse, log_change)
        else:  # pragma: no cover - a programming error
            raise TypeError(f"not a schema change: {change!r}")


def _projected_why(projected: Sequence[str]) -> str:
    return (f"it is in log.arrow.projection ({', '.join(projected)}), which names the columns of the log's "
            "projection stream and is fixed when the table is created")


def _merge_why(column: str, merge_columns: Mapping[str, str]) -> str:
    return (f"the table's merge option {merge_columns[column]} names it; merge options are fixed when the "
            "table is created, since the rows in the table were merged by them")


def _check_option(
    change: SetOption, refuse: Callable[[SchemaChange, str], SchemaChangeError], log_change: bool
) -> None:
    key = change.key.strip().lower()
    if log_change and key in log_option_keys():
        return
    if is_merge_option(key):  # Table.alter refused a value other than the table's (merge_rules)
        return
    reasons = {
        "bucket": "the bucket count is fixed: bucket b is log partition b, so a key's later changes "
                  "would go to another partition than its earlier ones",
        "primary-key": "the primary key is fixed: the table's files are merged by it and the log is keyed by it",
        "bucket-key": "the bucket key is fixed: its values choose each row's bucket and log partition",
    }
    why = reasons.get(key)
    if why is None and (key in fixed_option_keys() or key in paimon_immutable_option_keys()):
        why = "it defines the table (its log records or files depend on it) and is fixed when the table is created"
        if key in log_option_keys():
            why = ("it defines the records of the table's log: it may be set only together with a new log.system "
                   "or topic, which attaches a new log (docs/attaching.md)")
    if why is not None:
        raise refuse(change, why)


def describe(change: SchemaChange) -> str:
    """A change as ``tablelog alter`` writes it."""
    if isinstance(change, AddColumn):
        where = " first" if change.first else f" after {change.after}" if change.after else ""
        return f"add column {change.name} {change.type}{'' if change.nullable else ' not null'}{where}"
    if isinstance(change, RenameColumn):
        return f"rename column {change.name} to {change.new_name}"
    if isinstance(change, DropColumn):
        return f"drop column {change.name}"
    if isinstance(change, WidenColumn):
        return f"change column {change.name} to type {change.type}"
    return f"set option {change.key}={change.value!r}"
