"""Reading the changelog from the log, with the consistency the table (or reader) asks for.

**Transactional**: the reader walks snapshots in commit order. For each snapshot
it fetches, per partition, the span covering the ranges of the writer tokens that
snapshot commits, and returns exactly the records of those tokens inside their
ranges, each once (duplicates a retrying client wrote are dropped by sequence
number). Records of failed, speculative or replayed attempts belong to no
committed token and are never returned. A committed range the log cannot
produce is reported as lost data, never skipped.

**Eventual**: the reader returns every record of this table as soon as the log has
it (at least once; records of other tables on the topic, told by the tag in their
writer token, are left out); add :class:`tablelog.normalize.Normalizer` for a correct
changelog. Idle, it waits in the log's own fetch, not in a loop of fetches.

**Hybrid** (``scan.mode = latest-full``): first the rows of the latest snapshot as
``+I``, then the changes after it: transactional readers continue with the next
snapshot, eventual readers at that snapshot's log end positions.

:attr:`ChangelogReader.position` is a small JSON value; pass it back to resume. It
names its table: another table refuses it (see :mod:`tablelog.positions`).
"""

from __future__ import annotations

import bisect
import contextlib
import gc
import operator
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import attrs
import pyarrow as pa

from tablelog.errors import (
    ForeignRecordError,
    LogDataLostError,
    OptionError,
    PositionOutOfRangeError,
    TablelogError,
    TopicError,
)
from tablelog.formats import KIND_COLUMN
from tablelog.identity import TAG_SEPARATOR
from tablelog.options import Consistency, ForeignRecords, ScanMode
from tablelog.positions import (
    ReaderPosition,
    check_identity,
    check_not_past_ends,
    check_partitions,
    check_snapshot,
    check_transactional,
    log_name,
)
from tablelog.protocol import LogCommitRecord
from tablelog.records import FetchResult, LogRecord, ProducedRange, RowKind, SeekSpec, ValuesResult

if TYPE_CHECKING:
    from tablelog.registry import LogClient
    from tablelog.table import Table

_POLL_SLEEP_S = 0.01
#: An idle eventual reader waits in one partition at a time: each partition is
#: looked at again within this long (the most an idle reader adds to a record's latency).
_IDLE_ROUND_S = 0.02
_TOKEN = operator.itemgetter(3)  # LogRecord.token


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a batch of changes is built.

    The records, rows and changes a fetch creates hold no reference cycles, so the
    collector finds nothing in them, but they survive long enough to be promoted,
    and the collections they trigger walk every live object: measured, more than
    half of the reader's time. Reference counting still frees everything at once;
    the collector resumes at the end of the batch (unless it was off already).
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


class Change(NamedTuple):
    """One change of the changelog.

    A named tuple, not a class with an ``__init__``: readers build one per record,
    and this is the cheapest object that still has named fields (measured: 0.23 µs
    built with ``tuple.__new__``, against 0.8 µs for a frozen attrs class).
    """

    kind: RowKind
    row: dict[str, Any]
    snapshot_id: int | None = None  # the snapshot that committed it (transactional)
    partition: int | None = None
    position: int | None = None  # where it is in the log (None for rows of the full scan)


class _Batch:
    """What one transactional poll collects, in order: lists of :class:`Change`, and
    Arrow tables (``poll_arrow`` decodes the values of dense committed ranges into
    Arrow directly: no Python object per change)."""

    def __init__(self, arrow: bool) -> None:
        self.arrow = arrow
        self.parts: list[list[Change] | pa.Table] = []
        self.size = 0  # changes in every part but a trailing list of changes

    def __len__(self) -> int:
        tail = self.parts[-1] if self.parts else None
        return self.size + len(tail) if isinstance(tail, list) else self.size

    def changes(self) -> list[Change]:
        """The list to append changes to (after every part so far)."""
        tail = self.parts[-1] if self.parts else None
        if isinstance(tail, list):
            return tail
        fresh: list[Change] = []
        self.parts.append(fresh)
        return fresh

    def add(self, table: pa.Table) -> None:
        tail = self.parts[-1] if self.parts else None
        if isinstance(tail, list):
            self.size += len(tail)
        self.parts.append(table)
        self.size += table.num_rows

    def to_changes(self) -> list[Change]:
        out: list[Change] = []
        for part in self.parts:
            assert isinstance(part, list)
            out.extend(part)
        return out


#: Values up to this size on average are decoded faster all at once by Arrow's JSON
#: reader than one by one with orjson; longer ones not (its string parsing is slower):
#: measured per record, 100 B 1.1 against 1.5 µs, 1 KB 3.3 against 2.0 µs, 10 KB 31
#: against 5.6 µs (orjson alone; building the Arrow table from the rows comes on top).
_AT_ONCE_MAX_AVERAGE_BYTES = 512


def _decodes_faster_at_once(values: list[bytes | None]) -> bool:
    if None in values:
        return False  # not ours: decoded one by one, which reports it
    return sum(map(len, values)) <= _AT_ONCE_MAX_AVERAGE_BYTES * len(values)  # type: ignore[arg-type]


def _dense(ranges: list[ProducedRange]) -> bool:
    """Whether every record inside these ranges (sorted by first) is a committed one:
    no two overlap, and each is ``contiguous`` (the log system says so) or its count
    equals its length. Counts are of distinct acknowledged records at distinct
    positions, so a count equal to the length leaves no position for anything else
    (a failed attempt's record, a retry's duplicate): logs with consecutive integer
    positions (Kafka offsets) need no word from the plugin."""
    previous_last = -1
    for r in ranges:
        if not (r.contiguous or r.last - r.first + 1 == r.count) or r.first <= previous_last:
            return False
        previous_last = r.last
    return True


class ChangelogReader:
    """Reads a table's changelog; see the module docstring for the semantics."""

    def __init__(
        self,
        table: Table,
        position: ReaderPosition | str | dict[str, Any] | None = None,
        *,
        consistency: str | Consistency | None = None,
        scan_mode: str | ScanMode | None = None,
        timestamp_millis: int | None = None,
        partitions: Iterable[int] | None = None,
        until_snapshot: int | None = None,
        **option_keys: Any,
    ) -> None:
        """``partitions``: read only these log partitions (and, in the full scan, only
        the rows of the buckets with those numbers). ``until_snapshot``: transactional
        readers stop after this snapshot (a bounded read, e.g. one Spark micro-batch)."""
        overrides = {k.replace("_", "-") if "." not in k else k: v for k, v in option_keys.items()}
        if consistency is not None:
            overrides["log.consistency"] = getattr(consistency, "value", consistency)
        if scan_mode is not None:
            overrides["scan.mode"] = getattr(scan_mode, "value", scan_mode)
        if timestamp_millis is not None:
            overrides["scan.timestamp-millis"] = timestamp_millis
        self.table = table
        self.options = table.options.with_overrides(overrides)
        if self.options.scan_mode is ScanMode.FROM_TIMESTAMP and self.options.scan_timestamp_millis is None:
            raise OptionError("scan.mode='from-timestamp' needs option 'scan.timestamp-millis'")
        self._position: ReaderPosition | None = None
        # A saved position (its JSON, or a dict) is checked against the log's ends when
        # the log is first used; a ReaderPosition object is trusted there (the Spark
        # source builds them from offsets it checked on the driver).
        self._ends_checked = position is None or isinstance(position, ReaderPosition)
        if position is not None:
            self._position = ReaderPosition.parse(position)
            if consistency is not None and self._position.consistency is not self.options.log_consistency:
                raise OptionError(
                    f"the saved position is {self._position.consistency.value}, "
                    f"the reader asks for {self.options.log_consistency.value}"
                )
            self._check_given_position(self._position)
        self._partitions = None if partitions is None else frozenset(partitions)
        unknown = sorted(p for p in self._partitions or () if not 0 <= p < table.log_partitions)
        if unknown:  # they would be read as empty partitions
            raise OptionError(
                f"partitions={unknown}: the log of table {table.identifier!r} has partitions "
                f"0..{table.log_partitions - 1}"
            )
        self._until_snapshot = until_snapshot
        self._log: LogClient | None = None
        self._full_rows: list[dict[str, Any]] | None = None
        self._last_seq: dict[tuple[str, int], int] = {}
        self._counts: dict[tuple[str, int], int] = defaultdict(int)
        self._counted_from_start = position is None or not self._position_offsets()
        self.foreign_skipped = 0
        #: Records of other tables that share this table's topic, left out (eventual reads).
        self.other_tables_skipped = 0
        self._own_prefix = table.token_prefix
        self._wait_turn = 0  # which partition an idle eventual reader waits in next

    def _check_given_position(self, position: ReaderPosition) -> None:
        """Refuse a position of another table or topic, or one ahead of the table; a
        position saved before positions named their table is accepted, and names it now."""
        check_identity(self.table, position.table, position.topic)
        check_snapshot(self.table, position.snapshot)
        check_partitions(self.table, {**position.offsets, **position.horizon})
        if position.consistency is Consistency.TRANSACTIONAL:
            check_transactional(self.table, position)
        position.table, position.topic = self.table.table_id, log_name(self.table)

    def _check_ends(self) -> None:
        """Refuse a given position whose log positions are past the log's end (once, when
        the log is first read: the check costs a look-up of the ends)."""
        self._ends_checked = True
        offsets = self._position_offsets()
        if offsets:
            check_not_past_ends(self.table, offsets, self.log.end_positions(sorted(offsets)))

    def _position_offsets(self) -> dict[int, int]:
        return self._position.offsets if self._position is not None else {}

    @property
    def consistency(self) -> Consistency:
        return self._position.consistency if self._position else self.options.log_consistency

    @property
    def position(self) -> ReaderPosition:
        """Where the reader is now (changes returned so far are before it)."""
        position = self._ensure_position()
        return attrs.evolve(position, offsets=dict(position.offsets), horizon=dict(position.horizon))

    # -- public reading ----------------------------------------------------------

    def poll(self, max_records: int = 10_000, timeout_s: float = 0.0) -> list[Change]:
        """Return the changes available now (up to about ``max_records``), waiting at
        most ``timeout_s`` for the first one. An empty list means: nothing new yet."""
        position = self._ensure_position()
        if not self._ends_checked:
            self._check_ends()
        if position.full_pending:
            return self._poll_full(max_records)
        if self.consistency is Consistency.TRANSACTIONAL:
            return self._poll_transactional(max_records, timeout_s, _Batch(arrow=False)).to_changes()
        return self._poll_eventual(max_records, timeout_s)

    def poll_arrow(self, max_records: int = 10_000, timeout_s: float = 0.0) -> pa.Table:
        """:meth:`poll`, as one Arrow table in the layout of :meth:`to_arrow`.

        The fast way to read: a transactional reader decodes the values of dense
        committed ranges (every position between a write's first and last record is
        one of its records; the common case) all at once in native code, where
        :meth:`poll` builds a Python row and a :class:`Change` per record."""
        position = self._ensure_position()
        if position.full_pending or self.consistency is not Consistency.TRANSACTIONAL:
            return self.to_arrow(self.poll(max_records, timeout_s))
        if not self._ends_checked:
            self._check_ends()
        batch = self._poll_transactional(max_records, timeout_s, _Batch(arrow=True))
        tables = [part if not isinstance(part, list) else self.to_arrow(part) for part in batch.parts]
        if not tables:
            return self.to_arrow([])
        return tables[0] if len(tables) == 1 else pa.concat_tables(tables)

    def changes(self, follow: bool = False, idle_timeout_s: float = 1.0) -> Iterator[Change]:
        """Iterate changes. Without ``follow``, stop once nothing new arrived for
        ``idle_timeout_s``; with it, wait for new changes forever."""
        while True:
            batch = self.poll(timeout_s=idle_timeout_s)
            if not batch and not follow:
                return
            yield from batch

    def read_all(self, idle_timeout_s: float = 0.5) -> list[Change]:
        """Every change available now (until the reader is idle for ``idle_timeout_s``)."""
        return list(self.changes(follow=False, idle_timeout_s=idle_timeout_s))

    def to_arrow(self, changes: list[Change]) -> pa.Table:
        """Changes as an Arrow table: a ``_kind`` column, then the table's columns."""
        kinds = pa.array([c.kind.value for c in changes], pa.string())
        rows = pa.Table.from_pylist([c.row for c in changes], schema=self.table.schema)
        return rows.add_column(0, KIND_COLUMN, kinds)

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> ChangelogReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- start position ----------------------------------------------------------

    @property
    def log(self) -> LogClient:
        if self._log is None:
            self._log = self.table.open_log()
        return self._log

    def _ensure_position(self) -> ReaderPosition:
        if self._position is None:
            self._position = self._initial_position()
        return self._position

    def _initial_position(self) -> ReaderPosition:
        store = self.table.store
        mode = self.options.scan_mode
        latest = store.latest_snapshot()
        latest_id = latest.id if latest else 0
        consistency = self.options.log_consistency
        if mode is ScanMode.LATEST_FULL or mode is ScanMode.LATEST:
            snapshot = latest_id
        elif mode is ScanMode.EARLIEST:
            snapshot = (store.earliest_snapshot_id() or 1) - 1
        else:
            assert self.options.scan_timestamp_millis is not None
            before = store.snapshot_at_or_before(self.options.scan_timestamp_millis)
            snapshot = before.id if before else (store.earliest_snapshot_id() or 1) - 1
        position = ReaderPosition(
            consistency=consistency,
            snapshot=snapshot,
            full_pending=mode is ScanMode.LATEST_FULL and snapshot > 0,
            table=self.table.table_id,
            topic=log_name(self.table),
        )
        if consistency is Consistency.EVENTUAL:
            position.offsets = self._eventual_start(mode, snapshot)
            if mode is ScanMode.LATEST_FULL:
                position.horizon = dict(position.offsets)
        return position

    def _eventual_start(self, mode: ScanMode, snapshot: int) -> dict[int, int]:
        partitions = [
            p for p in range(self.table.log_partitions) if self._partitions is None or p in self._partitions
        ]
        if mode is ScanMode.LATEST_FULL:
            ends = self._end_positions_at(snapshot)
            return {p: ends[p] if p in ends else self.log.seek(p, SeekSpec.earliest()) for p in partitions}
        if mode is ScanMode.LATEST:
            spec = SeekSpec.latest()
        elif mode is ScanMode.EARLIEST:
            spec = SeekSpec.earliest()
        else:
            assert self.options.scan_timestamp_millis is not None
            spec = SeekSpec.timestamp(self.options.scan_timestamp_millis)
        return {p: self.log.seek(p, spec) for p in partitions}

    def _end_positions_at(self, snapshot_id: int) -> dict[int, int]:
        for sid in range(snapshot_id, 0, -1):
            snapshot = self.table.store.snapshot(sid)
            if snapshot is None:
                break
            record = LogCommitRecord.from_properties(snapshot.properties)
            if record is not None:
                return dict(record.end_positions)
        return {}

    # -- full scan (hybrid read) -------------------------------------------------

    def _poll_full(self, max_records: int) -> list[Change]:
        position = self._ensure_position()
        if self._full_rows is None:
            buckets = None if self._partitions is None else sorted(self._partitions)
            self._full_rows = self.table.rows(position.snapshot, buckets).to_pylist()
        start = position.full_offset
        chunk = self._full_rows[start : start + max_records]
        position.full_offset = start + len(chunk)
        if position.full_offset >= len(self._full_rows):
            position.full_pending = False
            position.full_offset = 0
            self._full_rows = None
        return [Change(RowKind.INSERT, row, position.snapshot) for row in chunk]

    # -- transactional -----------------------------------------------------------

    def _poll_transactional(self, budget: int, timeout_s: float, out: _Batch) -> _Batch:
        position = self._ensure_position()
        deadline = time.monotonic() + timeout_s
        while len(out) < budget:
            if self._until_snapshot is not None and position.snapshot >= self._until_snapshot:
                break
            snapshot = self.table.store.snapshot(position.snapshot + 1)
            if snapshot is None:
                self._check_not_expired(position.snapshot + 1)
                if out or time.monotonic() >= deadline:
                    break
                time.sleep(_POLL_SLEEP_S)
                continue
            record = LogCommitRecord.from_properties(snapshot.properties)
            if record is None or not record.ranges:
                self._advance(snapshot.id)
                continue
            self._check_same_log(record)
            if not self._read_snapshot(snapshot.id, record, out, budget):
                break
            self._advance(snapshot.id)
        return out

    def _check_not_expired(self, snapshot_id: int) -> None:
        earliest = self.table.store.earliest_snapshot_id()
        if earliest is not None and earliest > snapshot_id:
            raise TablelogError(
                f"table {self.table.identifier!r}: snapshot {snapshot_id} expired before this reader "
                f"read it (earliest kept: {earliest}); changes committed there cannot be returned. "
                "Restart the reader with scan.mode=latest-full"
            )

    def _check_same_log(self, record: LogCommitRecord) -> None:
        if record.system != self.table.options.log_system or record.topic != self.table.topic:
            raise TablelogError(
                f"table {self.table.identifier!r}: a snapshot committed records to log "
                f"{record.system!r} topic {record.topic!r}, but this reader reads "
                f"{self.table.options.log_system!r} topic {self.table.topic!r}"
            )

    def _advance(self, snapshot_id: int) -> None:
        position = self._ensure_position()
        position.snapshot = snapshot_id
        position.offsets = {}
        self._last_seq.clear()
        self._counts.clear()
        self._counted_from_start = True

    def _read_snapshot(self, snapshot_id: int, record: LogCommitRecord, out: _Batch, budget: int) -> bool:
        """Append the snapshot's committed changes to ``out``; False if the budget ran out first."""
        position = self._ensure_position()
        by_partition = {  # each partition's ranges sorted by first position
            partition: ranges for partition, ranges in sorted(record.ranges_by_partition().items())
            if self._partitions is None or partition in self._partitions
        }
        # The partitions are read one after the other; a client that fetches ahead
        # starts on all of them now (no wait at each partition switch).
        self.log.prefetch({
            p: start for p, ranges in by_partition.items()
            if (start := position.offsets.get(p, ranges[0].first)) <= max(r.last for r in ranges)
        })
        for partition, ranges in by_partition.items():
            if not self._read_partition(snapshot_id, partition, ranges, out, budget):
                return False
            if self._counted_from_start:
                self._check_counts(partition, ranges)
        return True

    def _read_partition(
        self, snapshot_id: int, partition: int, ranges: list[ProducedRange], out: _Batch, budget: int
    ) -> bool:
        """Append one partition's committed changes to ``out``, a chunk at a time; False if
        the budget ran out first. Dense ranges (see :func:`_dense`) are fetched as values
        only; elsewhere every record's token, position and sequence number decide."""
        position = self._ensure_position()
        read_chunk = self._read_dense_chunk if _dense(ranges) else self._read_sparse_chunk
        hi = max(r.last for r in ranges)
        pos = position.offsets.get(partition, ranges[0].first)
        while pos <= hi:
            if len(out) >= budget:
                position.offsets[partition] = pos
                return False
            with _gc_paused():
                pos = read_chunk(snapshot_id, partition, ranges, pos, hi, self._chunk(out, budget, pos, hi), out)
            position.offsets[partition] = pos
        return True

    def _read_sparse_chunk(
        self, snapshot_id: int, partition: int, ranges: list[ProducedRange], pos: int, hi: int,
        max_records: int, out: _Batch,
    ) -> int:
        """One fetch of records, the committed ones kept; returns where to go on."""
        result = self._fetch_committed(partition, pos, hi, max_records, values=False)
        assert isinstance(result, FetchResult)
        by_token = {r.token: r for r in ranges}
        if self._take_all_committed(result.records, partition, hi, by_token, snapshot_id, out.changes()):
            return hi + 1
        return result.next_position

    def _read_dense_chunk(
        self, snapshot_id: int, partition: int, ranges: list[ProducedRange], pos: int, hi: int,
        max_records: int, out: _Batch,
    ) -> int:
        """One fetch of values, each inside a dense range a committed change; returns where to go on."""
        result = self._fetch_committed(partition, pos, hi, max_records, values=True)
        assert isinstance(result, ValuesResult)
        for r in ranges:
            # The chunk's records inside this range (records between ranges are other
            # writes'); positions only grow, so two bisections find them.
            a = bisect.bisect_left(result.positions, r.first)
            b = bisect.bisect_right(result.positions, r.last)
            if b > a:
                self._take_values(result.values[a:b], result.positions[a:b], partition, snapshot_id, out)
                self._counts[(r.token, partition)] += b - a
        return result.next_position

    @staticmethod
    def _chunk(out: _Batch, budget: int, pos: int, hi: int) -> int:
        # Never more than the positions left up to hi: a fetch that stops at the last
        # committed record leaves the client standing where the next snapshot starts.
        # Never more than the budget left: a poll returns at most max_records changes, so
        # that its position is right after the last one a caller (tail --limit) prints.
        return max(1, min(budget - len(out), hi - pos + 1))

    def _take_values(
        self, values: list[bytes | None], positions: Sequence[int], partition: int, snapshot_id: int, out: _Batch
    ) -> None:
        """Committed values decoded: all at once into Arrow for ``poll_arrow``, else one
        by one into changes (and one by one whenever a value does not decode)."""
        if out.arrow and _decodes_faster_at_once(values):
            try:
                out.add(self.table.codec.values_to_arrow(values))
                return
            except ValueError:
                pass  # decoded one by one below, which reports the value that is not ours
        changes: list[Change] = []
        self._decode_all(values, positions, partition, snapshot_id, changes)
        if out.arrow:
            out.add(self.to_arrow(changes))
        else:
            out.changes().extend(changes)

    def _decode_all(
        self, values: list[bytes | None], positions: Sequence[int], partition: int, snapshot_id: int | None,
        out: list[Change],
    ) -> None:
        """Append the changes the values decode to; report a value that does not decode
        (one tight loop: it runs for every record a reader returns one by one)."""
        codec = self.table.codec
        decode_value, python_row = codec.decode_value, codec.python_row
        new = tuple.__new__  # what Change(...) does, without its Python-level __new__
        append = out.append
        for value, pos in zip(values, positions, strict=True):
            if value is not None:
                try:
                    kind, row = decode_value(value)
                except (ValueError, KeyError, TypeError):
                    pass
                else:
                    append(new(Change, (kind, python_row(row), snapshot_id, partition, pos)))
                    continue
            change = self._decode(LogRecord(pos, None, value, None, None, 0), partition, snapshot_id)
            if change is not None:
                append(change)

    def _fetch_committed(
        self, partition: int, pos: int, hi: int, max_records: int, values: bool
    ) -> FetchResult | ValuesResult:
        """Records (or only values) at ``pos`` or later; waits for them and reports them
        lost if they never come."""
        waited_until = time.monotonic() + self.options.log_fetch_timeout_ms / 1000
        while True:
            try:
                result: FetchResult | ValuesResult
                if values:
                    result = self.log.fetch_values(partition, pos, max_records, 0.2)
                    if result.values:
                        return result
                else:
                    result = self.log.fetch(partition, pos, max_records, 0.2)
                    if result.records:
                        return result
                end = self.log.end_positions([partition]).get(partition, 0)
            except PositionOutOfRangeError as err:
                raise self._lost(partition, pos, hi, f"the log no longer holds them ({err})") from err
            except TopicError as err:
                # The topic or partition is gone (deleted, or a broker that lost its storage).
                raise self._lost(partition, pos, hi, f"the log no longer has them ({err})") from err
            if end <= pos:
                raise self._lost(partition, pos, hi, f"the log ends at position {end}")
            if time.monotonic() >= waited_until:
                raise self._lost(
                    partition, pos, hi,
                    f"the log did not return them within log.fetch-timeout-ms={self.options.log_fetch_timeout_ms}",
                )

    def _take_all_committed(
        self,
        records: list[LogRecord],
        partition: int,
        hi: int,
        by_token: dict[str, ProducedRange],
        snapshot_id: int,
        out: list[Change],
    ) -> bool:
        """Append the committed changes among ``records`` up to position ``hi``: a record
        counts when its token is committed in this snapshot, its position lies in that
        token's range, and its sequence number is new (one tight loop: it runs for every
        record a transactional reader returns). True when a record past ``hi`` was reached."""
        bounds = {token: (r.first, r.last) for token, r in by_token.items()}
        last_seq = self._last_seq
        counts = self._counts
        codec = self.table.codec
        decode_value, python_row = codec.decode_value, codec.python_row
        new = tuple.__new__  # what Change(...) does, without its Python-level __new__
        append = out.append
        for rec in records:
            position, _key, value, token, seq, _ts = rec
            if position > hi:
                return True
            if token is None:
                self._foreign(rec, partition, "it carries no tablelog writer token")
                continue
            bound = bounds.get(token)
            if bound is None or not bound[0] <= position <= bound[1]:
                continue  # another attempt's record: failed, replayed, or another snapshot's
            key = (token, partition)
            if seq is None:
                seq = -1
            if seq <= last_seq.get(key, -1):
                continue  # a duplicate a retrying client wrote
            last_seq[key] = seq
            if value is not None:
                try:
                    kind, row = decode_value(value)
                except (ValueError, KeyError, TypeError):
                    change = self._decode(rec, partition, snapshot_id)  # reports it
                else:
                    change = new(Change, (kind, python_row(row), snapshot_id, partition, position))
            else:
                change = self._decode(rec, partition, snapshot_id)
            if change is not None:
                counts[key] += 1
                append(change)
        return False

    def _check_counts(self, partition: int, ranges: list[ProducedRange]) -> None:
        for r in ranges:
            found = self._counts.get((r.token, partition), 0)
            if found != r.count:
                raise self._lost(
                    partition, r.first, r.last,
                    f"only {found} of the {r.count} records of write {r.token} were found",
                )

    def _lost(self, partition: int, first: int, last: int, detail: str) -> LogDataLostError:
        return LogDataLostError(
            table=self.table.identifier, topic=self.table.topic, partition=partition,
            first=first, last=last, detail=detail,
        )

    # -- eventual ------------------------------------------------------------------

    def _poll_eventual(self, budget: int, timeout_s: float) -> list[Change]:
        position = self._ensure_position()
        out: list[Change] = self._late_writes() if position.horizon else []
        deadline = time.monotonic() + timeout_s
        partitions = sorted(position.offsets) or list(range(self.table.log_partitions))
        if self._partitions is not None:
            partitions = [p for p in partitions if p in self._partitions]
        for partition in partitions:  # what every partition holds now
            if len(out) >= budget:
                return out
            self._fetch_eventual(partition, budget - len(out), 0.0, out)
        # Nothing yet: the log's own waiting fetch does the waiting (a fetch may be a
        # round trip or a database transaction: never spin on it). It waits in one
        # partition at a time, taking turns, for a slice short enough that each
        # partition is looked at again within _IDLE_ROUND_S.
        while not out and (remaining := deadline - time.monotonic()) > 0:
            if not partitions:
                time.sleep(remaining)
                break
            partition = partitions[self._wait_turn % len(partitions)]
            self._wait_turn += 1
            wait = remaining if len(partitions) == 1 else min(remaining, _IDLE_ROUND_S / (len(partitions) - 1))
            self._fetch_eventual(partition, budget, wait, out)
        return out

    def _fetch_eventual(self, partition: int, max_records: int, timeout_s: float, out: list[Change]) -> None:
        position = self._ensure_position()
        pos = position.offsets.get(partition, 0)
        # The collector is paused for the whole process: not while a fetch waits.
        with _gc_paused() if timeout_s <= 0 else contextlib.nullcontext():
            try:
                result = self.log.fetch(partition, pos, max_records, timeout_s)
            except PositionOutOfRangeError as err:
                raise self._lost(partition, pos, pos, f"the log no longer holds them ({err})") from err
        with _gc_paused():
            self._take_all_eventual(result.records, partition, out)
        position.offsets[partition] = result.next_position

    def _take_all_eventual(self, records: list[LogRecord], partition: int, out: list[Change]) -> None:
        """Every record of this table, decoded: records without a writer token are
        foreign, records whose token carries another table's tag are left out (they
        share the topic). The tokens are looked at once per distinct token, not per
        record: a fetch usually holds a few writes' records."""
        own = self._own_prefix
        tokens = set(map(_TOKEN, records))
        if None in tokens or any(not t.startswith(own) and TAG_SEPARATOR in t for t in tokens if t is not None):
            records = self._own_records(records, partition)
        self._decode_all([r.value for r in records], [r.position for r in records], partition, None, out)

    def _own_records(self, records: list[LogRecord], partition: int) -> list[LogRecord]:
        own = self._own_prefix
        kept = []
        for rec in records:
            token = rec.token
            if token is None:
                self._foreign(rec, partition, "it carries no tablelog writer token")
            elif not token.startswith(own) and TAG_SEPARATOR in token:
                self.other_tables_skipped += 1
            else:
                kept.append(rec)
        return kept

    def _late_writes(self) -> list[Change]:
        """Records of writes committed after the full scan but produced before the log
        part began (a concurrent writer's): returned once, so the hybrid read has no gap."""
        position = self._ensure_position()
        out: list[Change] = []
        while (snapshot := self.table.store.snapshot(position.snapshot + 1)) is not None:
            record = LogCommitRecord.from_properties(snapshot.properties)
            for r in record.ranges if record is not None else ():
                horizon = position.horizon.get(r.partition, 0)
                if r.first < horizon:
                    out.extend(self._token_records(r, min(r.last, horizon - 1)))
            position.snapshot = snapshot.id
        return out

    def _token_records(self, committed: ProducedRange, last: int) -> list[Change]:
        out: list[Change] = []
        pos = committed.first
        while pos <= last:
            result = self._fetch_committed(committed.partition, pos, last, 10_000, values=False)
            assert isinstance(result, FetchResult)
            for rec in result.records:
                if rec.position > last:
                    return out
                if rec.token == committed.token:
                    change = self._decode(rec, committed.partition, None)
                    if change is not None:
                        out.append(change)
            pos = result.next_position
        return out

    # -- records -------------------------------------------------------------------

    def _decode(self, rec: LogRecord, partition: int, snapshot_id: int | None) -> Change | None:
        if rec.value is None:
            self._foreign(rec, partition, "it has no value")
            return None
        try:
            kind, row = self.table.codec.decode_value(rec.value)
        except (ValueError, KeyError, TypeError) as err:
            self._foreign(rec, partition, f"its value does not decode as {self.table.options.log_format.value} ({err})")
            return None
        return Change(kind, self.table.codec.python_row(row), snapshot_id, partition, rec.position)

    def _foreign(self, rec: LogRecord, partition: int, reason: str) -> None:
        if self.options.log_foreign_records is ForeignRecords.SKIP:
            self.foreign_skipped += 1
            return
        raise ForeignRecordError(topic=self.table.topic, partition=partition, position=rec.position, reason=reason)
