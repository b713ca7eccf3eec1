"""A table's schemas over time, and the one way from a row of an older schema to a newer one.

Paimon gives every column a field id that never changes: a renamed column keeps its
id, a dropped column's id is never given again, an added column gets a new one. So a
value written under schema N belongs, under schema M, to the column with the same
field id (under its name in M, cast to its type in M when it was widened), and a
column of M whose id N does not have is null. :class:`SchemaMapping` is that rule,
for the rows a reader decodes from the log (JSON-level dicts) and for the Arrow rows
of the table files; everything that returns rows of an older schema goes through it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import pyarrow as pa

from tablelog.errors import SchemaMismatchError


@attrs.frozen
class SchemaVersion:
    """One schema of a table: its id and its user-visible columns with their field ids."""

    id: int
    field_ids: tuple[int, ...]
    schema: pa.Schema = attrs.field(eq=False)

    @property
    def names(self) -> list[str]:
        return list(self.schema.names)


@attrs.frozen
class SchemaMapping:
    """From rows of schema ``source`` to rows of schema ``target`` (see the module docstring)."""

    source: SchemaVersion
    target: SchemaVersion
    #: (name in source, name in target) of each column both have, in the target's order.
    kept: tuple[tuple[str, str], ...] = attrs.field(init=False)

    @kept.default
    def _kept(self) -> tuple[tuple[str, str], ...]:
        source_names = dict(zip(self.source.field_ids, self.source.names, strict=True))
        return tuple(
            (source_names[field_id], name)
            for field_id, name in zip(self.target.field_ids, self.target.names, strict=True)
            if field_id in source_names
        )

    @property
    def identity(self) -> bool:
        return self.source.id == self.target.id

    def row(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """A decoded row of the source schema, keyed by the target's names (its values
        left as they are: the target's converters read them). Columns the source did
        not have are absent, which readers return as null."""
        return {new: row[old] for old, new in self.kept if old in row}

    def full_row(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """A row of the source schema in the target's Python form: every target column in
        order, null where the source had none. Widening keeps a Python value as it is."""
        by_target = {new: old for old, new in self.kept}
        return {name: row.get(by_target[name]) if name in by_target else None for name in self.target.names}

    def arrow(self, table: pa.Table) -> pa.Table:
        """Rows of the source schema (its columns, any extra ones ignored) in the target
        schema: renamed columns under their new names, widened ones cast, added ones null."""
        by_target = {new: old for old, new in self.kept}
        columns = []
        for field in self.target.schema:
            old = by_target.get(field.name)
            if old is None or old not in table.column_names:
                columns.append(pa.nulls(table.num_rows, field.type))
            else:
                columns.append(self._cast(table.column(old), field))
        return pa.Table.from_arrays(columns, schema=self.target.schema)

    def _cast(self, column: pa.ChunkedArray, field: pa.Field) -> pa.ChunkedArray:
        if column.type == field.type:
            return column
        try:
            return column.cast(field.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
            # Only into an older schema (a reader pinned to it): a widened column's value
            # that the narrower type cannot hold.
            raise SchemaMismatchError(
                f"column {field.name!r}: a value written under schema {self.source.id} ({column.type}) does not "
                f"fit the reader's schema {self.target.id} ({field.type}): {err}. Read with the table's latest "
                "schema (a Spark query started again, or a reader not pinned to a schema)"
            ) from None
