"""The schema changes tablelog makes to a Paimon table, and their commit as Paimon's
next schema (``schema/schema-<id+1>``, created only if absent by
:mod:`tablelog.store.schema_files`: a concurrent alter that won the race makes this one
start over from the new latest schema, as Paimon's ``SchemaManager`` does).

What is allowed is decided above the store (:mod:`tablelog.schema_rules`); this module only
turns the changes into pypaimon's ``SchemaChange`` objects.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import pyarrow as pa

from tablelog.store.schema import KIND_FIELD


@attrs.frozen
class AddColumn:
    """A new column: last (default), ``first``, or ``after`` another column. It must be
    nullable: the rows written before it have no value for it."""

    name: str
    type: pa.DataType
    first: bool = False
    after: str | None = None
    nullable: bool = True


@attrs.frozen
class RenameColumn:
    name: str
    new_name: str


@attrs.frozen
class DropColumn:
    name: str


@attrs.frozen
class WidenColumn:
    """A column's type changed to a wider one (``int32`` -> ``int64``...)."""

    name: str
    type: pa.DataType


@attrs.frozen
class SetOption:
    key: str
    value: str


SchemaChange = AddColumn | RenameColumn | DropColumn | WidenColumn | SetOption


def commit_changes(paimon: Any, schemas: Any, changes: Sequence[SchemaChange]) -> int:
    """Commit ``changes`` as the table's next schema with pypaimon's schema manager
    ``schemas`` (:func:`tablelog.store.schema_files.schema_files`); returns its id."""
    from pypaimon.schema.data_types import PyarrowFieldParser
    from pypaimon.schema.schema_change import Move
    from pypaimon.schema.schema_change import SchemaChange as Paimon

    has_kind_field = any(f.name == KIND_FIELD for f in paimon.table_schema.fields)
    converted = []
    for change in changes:
        if isinstance(change, AddColumn):
            if change.first:
                move = Move.first(change.name)
            elif change.after is not None:
                move = Move.after(change.name, change.after)
            elif has_kind_field:
                move = Move.before(change.name, KIND_FIELD)  # the row-kind column stays last
            else:
                move = None
            paimon_type = PyarrowFieldParser.to_paimon_type(change.type, True)
            converted.append(Paimon.add_column(change.name, paimon_type, move=move))
        elif isinstance(change, RenameColumn):
            converted.append(Paimon.rename_column(change.name, change.new_name))
        elif isinstance(change, DropColumn):
            converted.append(Paimon.drop_column(change.name))
        elif isinstance(change, WidenColumn):
            paimon_type = PyarrowFieldParser.to_paimon_type(change.type, True)
            converted.append(Paimon.update_column_type(change.name, paimon_type, keep_nullability=True))
        else:
            converted.append(Paimon.set_option(change.key, change.value))
    return int(schemas.commit_changes(converted).id)
