"""Where a reader starts: the position ``scan.mode`` names, or a saved one checked
against the table (see :mod:`tablelog.positions`)."""

from __future__ import annotations

from tablelog.commit.history import last_end_positions
from tablelog.options import Consistency, ScanMode
from tablelog.positions import (
    ReaderPosition,
    check_identity,
    check_not_past_ends,
    check_partitions,
    check_snapshot,
    check_transactional,
    inside_foreign_snapshot,
    log_name,
    topic_to_check,
)
from tablelog.reading.context import ReadContext
from tablelog.records import SeekSpec


def check_given_position(context: ReadContext, position: ReaderPosition) -> None:
    """Refuse a position of another table or topic, or one ahead of the table."""
    table = context.table
    check_identity(table, position.table, topic_to_check(position))
    check_snapshot(table, position.snapshot)
    check_partitions(table, {**position.offsets, **position.horizon})
    if position.consistency is Consistency.TRANSACTIONAL:
        check_transactional(table, position)
    position.table, position.topic = table.table_id, log_name(table)


def check_ends(context: ReadContext, position: ReaderPosition) -> None:
    """Refuse a given position whose log positions are past the log's end (a look-up
    of the ends: done once, when the log is first read)."""
    if position.offsets and not inside_foreign_snapshot(context.table, position):
        check_not_past_ends(context.table, position.offsets, context.log.end_positions(sorted(position.offsets)))


def initial_position(context: ReadContext) -> ReaderPosition:
    """The position ``scan.mode`` names, for a reader started without one."""
    options = context.options
    store = context.table.files
    mode = options.scan_mode
    latest = store.latest_snapshot()
    latest_id = latest.id if latest else 0
    consistency = options.log_consistency
    if mode is ScanMode.LATEST_FULL or mode is ScanMode.LATEST:
        snapshot = latest_id
    elif mode is ScanMode.EARLIEST:
        snapshot = (store.earliest_snapshot_id() or 1) - 1
    else:
        assert options.scan_timestamp_millis is not None
        before = store.snapshot_at_or_before(options.scan_timestamp_millis)
        snapshot = before.id if before else (store.earliest_snapshot_id() or 1) - 1
    position = ReaderPosition(
        consistency=consistency,
        snapshot=snapshot,
        full_pending=mode is ScanMode.LATEST_FULL and snapshot > 0,
        table=context.table.table_id,
        topic=log_name(context.table),
    )
    if consistency is Consistency.EVENTUAL and context.table.options.log_enabled:
        position.offsets = _eventual_start(context, mode, snapshot)
        if mode is ScanMode.LATEST_FULL:
            position.horizon = dict(position.offsets)
    return position


def _eventual_start(context: ReadContext, mode: ScanMode, snapshot: int) -> dict[int, int]:
    partitions = [p for p in range(context.table.log_partitions) if context.reads(p)]
    if mode is ScanMode.LATEST_FULL:
        table = context.table
        ends = last_end_positions(table.files, table.options.log_system, table.topic, upto=snapshot)
        return {p: ends[p] if p in ends else context.log.seek(p, SeekSpec.earliest()) for p in partitions}
    if mode is ScanMode.LATEST:
        spec = SeekSpec.latest()
    elif mode is ScanMode.EARLIEST:
        spec = SeekSpec.earliest()
    else:
        assert context.options.scan_timestamp_millis is not None
        spec = SeekSpec.timestamp(context.options.scan_timestamp_millis)
    return {p: context.log.seek(p, spec) for p in partitions}
