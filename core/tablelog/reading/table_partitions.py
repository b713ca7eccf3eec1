"""A reader limited to some partitions of a partitioned table (``partitions=[{"dt": ...}]``).

The full scan of a hybrid read prunes the table files to those partitions; the log keeps
every partition's records in one topic (a key's log partition is its bucket, whatever its
table partition), so the changes of other table partitions are dropped as they are read:
a partition column is part of every change's row.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from tablelog.errors import OptionError

if TYPE_CHECKING:
    from tablelog.table_view import TableView


class PartitionFilter:
    """Which table partitions a reader reads: any of ``specs``, each a mapping of partition
    columns to values (a spec naming some of the columns matches every partition with
    those values), the values in the columns' types."""

    def __init__(self, specs: Sequence[Mapping[str, Any]]) -> None:
        self.specs = tuple(dict(spec) for spec in specs)

    @classmethod
    def parse(
        cls, identifier: str, partition_keys: Sequence[str], schema: pa.Schema, given: Iterable[Mapping[str, Any]]
    ) -> PartitionFilter:
        """The filter of ``given`` specs (values as text or in the column's type), or an
        error naming what is wrong: an unpartitioned table, a column that is not a
        partition column, a value the column cannot hold, no spec at all."""
        specs = list(given)
        if not partition_keys:
            raise OptionError(
                f"partitions={specs}: table {identifier!r} is not partitioned; a reader is limited to table "
                "partitions only on a table created with partition_keys (or to log partitions: partitions=[0, 1])"
            )
        if not specs or any(not spec for spec in specs):
            raise OptionError(
                f"partitions={specs}: give one mapping of partition column to value per partition, "
                f"e.g. [{{{partition_keys[0]!r}: ...}}]; partition columns: {', '.join(partition_keys)}"
            )
        normalized = []
        for spec in specs:
            unknown = [column for column in spec if column not in partition_keys]
            if unknown:
                raise OptionError(
                    f"partitions={specs}: {unknown} are not partition columns of table {identifier!r}; "
                    f"its partition columns: {', '.join(partition_keys)}"
                )
            normalized.append({column: _typed(column, value, schema.field(column).type, specs)
                               for column, value in spec.items()})
        return cls(normalized)

    def matches(self, row: Mapping[str, Any]) -> bool:
        return any(all(row.get(column) == value for column, value in spec.items()) for spec in self.specs)

    def mask(self, rows: pa.Table) -> pa.Array:
        """Which of ``rows`` are in the filter's partitions."""
        result = None
        for spec in self.specs:
            matched = None
            for column, value in spec.items():
                values = rows.column(column)
                equal = (pc.is_null(values) if value is None
                         else pc.fill_null(pc.equal(values, pa.scalar(value, values.type)), False))
                matched = equal if matched is None else pc.and_(matched, equal)
            result = matched if result is None else pc.or_(result, matched)
        return result


def table_partitions(
    identifier: str, partition_keys: Sequence[str], schema: pa.Schema, given: Iterable[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """``given`` partitions with their values in the columns' types (checked as
    :meth:`PartitionFilter.parse` checks them)."""
    return list(PartitionFilter.parse(identifier, partition_keys, schema, given).specs)


def parse_partition_specs(text: str, given_as: str) -> tuple[dict[str, str], ...]:
    """``dt=2026-11-24,hh=01;dt=2026-11-25`` (as Paimon's procedures write partitions) as
    one mapping of column to value per partition; ``given_as`` names where it was given."""
    partitions = []
    for part in (p.strip() for p in text.split(";")):
        if not part:
            continue
        spec: dict[str, str] = {}
        for item in part.split(","):
            column, sep, value = item.partition("=")
            if not sep or not column.strip():
                raise OptionError(
                    f"{given_as}={text!r}: {item.strip()!r} is not column=value; write partitions as "
                    "'dt=2026-11-24;dt=2026-11-25' (a partition's columns separated by ',')"
                )
            spec[column.strip()] = value.strip()
        partitions.append(spec)
    if not partitions:
        raise OptionError(f"{given_as}={text!r}: no partition given, e.g. 'dt=2026-11-24;dt=2026-11-25'")
    return tuple(partitions)


def _typed(column: str, value: Any, data_type: pa.DataType, specs: list[Mapping[str, Any]]) -> Any:
    try:
        return pa.array([value]).cast(data_type).to_pylist()[0]
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as err:
        raise OptionError(
            f"partitions={specs}: value {value!r} of partition column {column!r} is not a {data_type} ({err})"
        ) from err


def partition_arguments(
    table: TableView, partitions: Iterable[int] | Iterable[Mapping[str, Any]] | None,
    table_partitions: Iterable[Mapping[str, Any]] | None,
) -> tuple[frozenset[int] | None, PartitionFilter | None]:
    """The log partitions and the table partitions read: ``partitions`` are log partitions
    (numbers) or table partitions (mappings of partition column to value), never both;
    ``table_partitions`` table partitions (with log partitions in ``partitions``)."""
    given: list[Any] | None = None if partitions is None else list(partitions)
    mappings = [p for p in given or () if isinstance(p, Mapping)]
    if mappings and len(mappings) != len(given or ()):
        raise OptionError(
            f"partitions={given}: give log partitions (numbers) or table partitions (mappings of partition "
            "column to value), not both"
        )
    if mappings and table_partitions is not None:
        raise OptionError("table partitions are given twice: in partitions= and in table_partitions=; give them once")
    logs = None if given is None or mappings else frozenset(int(p) for p in given)
    wanted = mappings or (None if table_partitions is None else list(table_partitions))
    if wanted is None:
        return logs, None
    files = table.files
    return logs, PartitionFilter.parse(table.identifier, files.partition_keys, files.schema, wanted)


def check_log_partitions(table: TableView, only: frozenset[int] | None) -> None:
    """Refuse log partitions the table's log does not have (they would read as empty)."""
    unknown = sorted(p for p in only or () if not 0 <= p < table.log_partitions)
    if unknown:  # they would be read as empty partitions
        raise OptionError(
            f"partitions={unknown}: the log of table {table.identifier!r} has partitions "
            f"0..{table.log_partitions - 1}"
        )
