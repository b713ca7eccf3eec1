"""Verify: replay the log up to the latest snapshot and compare with the table's rows.

The table files and the log are written separately; this is the check that they
tell the same story. It replays every committed change transactionally from the
first snapshot and compares the resulting rows with the rows Paimon returns. Once older
snapshots have expired, the replay starts from the rows of the earliest snapshot kept.
Snapshots other writers committed (no log records: :mod:`tablelog.reading.foreign`) are
replayed from the table files, as transactional readers read them; a relay's copy of
their changes in the log is not replayed twice.

The replay keeps the last row of a key whatever the table's merge engine: a table with
one (or with ``changelog-producer = lookup``) carries whole merged rows in its log, and
its snapshots' changes read from the files are the diff of its merged rows
(:func:`tablelog.store.snapshot_changes`), so the replay is compared with the table's
merged read.

A table with a projection stream (``log.arrow.projection``) has its stream replayed too,
with the projection's columns, and compared with those columns of the table's rows.

Only a difference of data is INCONSISTENT (rows that differ, log records that are
gone or damaged). A log that cannot be reached, or a table that cannot be verified
(no log), raises instead: nothing was compared.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from tablelog.errors import LogUnavailableError, TablelogError
from tablelog.options import Consistency
from tablelog.positions import ReaderPosition
from tablelog.row_equality import row_items, row_key, rows_equal
from tablelog.table import Table, internals

if TYPE_CHECKING:
    import pyarrow as pa


@attrs.frozen
class VerifyReport:
    table: str
    snapshot_id: int | None
    changes_replayed: int
    table_rows: int
    log_rows: int
    missing_from_log: Sequence[Mapping[str, Any]] = attrs.field(factory=list)  # in the table, not in the replay
    unexpected_in_log: Sequence[Mapping[str, Any]] = attrs.field(factory=list)  # in the replay, not in the table
    differing: list[tuple[Mapping[str, Any], Mapping[str, Any]]] = attrs.field(factory=list)  # (table, log)
    error: str | None = None
    #: Whether the log's projection stream was replayed and compared too.
    projection_checked: bool = False

    @property
    def consistent(self) -> bool:
        return self.error is None and not (self.missing_from_log or self.unexpected_in_log or self.differing)

    def summary(self) -> str:
        if self.consistent:
            return (
                f"consistent: table {self.table} at snapshot {self.snapshot_id}: {self.table_rows} rows, "
                f"the log replays {self.changes_replayed} changes to the same {self.log_rows} rows"
                + (", and its projection stream to the same rows of its columns" if self.projection_checked else "")
            )
        parts = []
        if self.error:
            parts.append(self.error)
        if self.missing_from_log:
            parts.append(f"{len(self.missing_from_log)} row(s) in the table but not in the log")
        if self.unexpected_in_log:
            parts.append(f"{len(self.unexpected_in_log)} row(s) in the log but not in the table")
        if self.differing:
            parts.append(f"{len(self.differing)} row(s) differ between table and log")
        return f"INCONSISTENT: table {self.table} at snapshot {self.snapshot_id}: " + "; ".join(parts)


def verify(table: Table, progress: Callable[[int], None] | None = None) -> VerifyReport:
    latest = internals(table).files.latest_snapshot()
    if latest is None:
        return VerifyReport(table.identifier, None, 0, 0, 0)
    earliest = internals(table).files.earliest_snapshot_id() or 1
    if not table.options.log_enabled:
        raise TablelogError(f"cannot verify table {table.identifier!r}: it has no log (log.system=none)")
    # The table's rows and the replayed log in one schema, the latest: a log written under
    # several schemas is mapped into it, however the polls fall. Snapshots before the
    # earliest kept one have expired: their changes are replayed as the rows they left,
    # those of the earliest snapshot kept. Both are read once, for every stream replayed.
    schema_id = internals(table).files.latest_schema_id()
    start = 0 if earliest == 1 else earliest
    rows = _TableRows(latest.id, schema_id, internals(table).files.read_rows(latest.id, None, schema_id), start,
                      internals(table).files.read_rows(earliest, None, schema_id) if start else None)
    report = _verify(table, rows, None, progress)
    if not table.projection or not report.consistent:
        return report
    projected = _verify(table, rows, table.projection, progress)
    if projected.consistent:
        return attrs.evolve(report, projection_checked=True)
    topic = internals(table).projection_log_config().topic
    return attrs.evolve(projected, error=f"the projection stream (topic {topic!r})"
                        + (f": {projected.error}" if projected.error else " differs from the table"))


@attrs.frozen
class _TableRows:
    """What the log is compared with: the table's rows at the latest snapshot, and (``start``
    > 0: older snapshots expired) those of the earliest kept, where the replay starts."""

    latest_id: int
    schema_id: int
    at_latest: pa.Table
    start: int
    at_start: pa.Table | None


def _verify(
    table: Table, rows: _TableRows, columns: Sequence[str] | None, progress: Callable[[int], None] | None
) -> VerifyReport:
    """Replay the log (only ``columns``: the projection stream's) and compare with the table."""
    latest_id, schema_id, start = rows.latest_id, rows.schema_id, rows.start
    table_rows = _rows(rows.at_latest, columns)
    replayed = 0
    key_of = _key_function(table)
    state: dict[Any, Mapping[str, Any]] = {}
    bag: Counter[Any] = Counter()
    for row in _rows(rows.at_start, columns) if rows.at_start is not None else ():
        if key_of is None:
            bag[row_items(row)] += 1
        else:
            state[key_of(row)] = row
    position = ReaderPosition(Consistency.TRANSACTIONAL, snapshot=start)
    try:
        # The log alone: changes it lost are a difference, not read from the table.
        with table.reader(position, consistency="transactional", changes_from_table=False,
                          schema_id=schema_id, columns=columns) as reader:
            while reader.position.snapshot < latest_id:
                batch = reader.poll(timeout_s=0.0)
                replayed += len(batch)
                if progress and batch:
                    progress(len(batch))
                for change in batch:
                    if key_of is None:
                        items = row_items(change.row)
                        bag[items] += -1 if change.kind.is_retraction else 1
                    elif change.kind.is_retraction:
                        state.pop(key_of(change.row), None)
                    else:
                        state[key_of(change.row)] = change.row
                if not batch and reader.position.snapshot < latest_id:
                    # nothing returned yet the latest snapshot is not reached: only
                    # snapshots without log records remain; poll advances over them.
                    continue
    except LogUnavailableError:
        raise  # an outage, not a difference: nothing was compared
    except TablelogError as err:
        return VerifyReport(table.identifier, latest_id, replayed, len(table_rows), 0, error=str(err))
    if key_of is None:
        log_rows = [dict(k) for k, n in bag.items() for _ in range(max(n, 0))]
        table_bag = Counter(row_items(r) for r in table_rows)
        missing = [dict(k) for k, n in (table_bag - bag).items() for _ in range(n)]
        extra = [dict(k) for k, n in (bag - table_bag).items() for _ in range(n)]
        return VerifyReport(table.identifier, latest_id, replayed, len(table_rows), len(log_rows), missing, extra)
    table_state = {key_of(r): r for r in table_rows}
    missing_rows = [r for k, r in table_state.items() if k not in state]
    extra_rows = [r for k, r in state.items() if k not in table_state]
    differing = [(table_state[k], state[k]) for k in table_state if k in state and not rows_equal(table_state[k], state[k])]
    return VerifyReport(
        table.identifier, latest_id, replayed, len(table_rows), len(state), missing_rows, extra_rows, differing
    )


def _rows(rows: Any, columns: Sequence[str] | None) -> list[Mapping[str, Any]]:
    return (rows if columns is None else rows.select(list(columns))).to_pylist()  # type: ignore[no-any-return]


def _key_function(table: Table) -> Callable[[Mapping[str, Any]], Any] | None:
    keys = table.primary_key
    if not keys:
        return None
    return lambda row: row_key(row, keys)
