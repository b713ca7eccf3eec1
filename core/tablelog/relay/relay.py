"""The relay: publish into the log the changes of snapshots other writers committed.

A snapshot without a log-commit record that is not a compaction was committed by
another writer (pypaimon directly, a Java engine, a procedure): tablelog's readers take
its changes from the table files, but a consumer that knows nothing of tablelog (a
plain Kafka consumer, Flink's ``debezium-json``) never sees them. The relay follows the
table's snapshots and, for each such *foreign* snapshot in commit order, produces its
changes (:mod:`tablelog.relay.changes`) into the table's log, in its log format and
routed to log partitions as the writer routes them, then commits a snapshot of its own
with no data files: its log-commit record holds the ranges it produced and
``tablelog.log.relayed-snapshots`` (the foreign snapshot ids), so transactional readers
skip those ranges (they read the changes from the files) and the next relay run knows
where to go on.

Exactly once: commits are idempotent per (writer ``tablelog-relay``, commit identifier =
the last foreign snapshot id of the commit), and a relay killed between producing and
committing finds its records in the log on the next start (:mod:`tablelog.relay.own_records`)
and produces only what is missing. One relay per table at a time.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs
import pyarrow as pa

from tablelog.commit import committer
from tablelog.commit.history import last_end_positions, log_commits, snapshot_commits
from tablelog.commit.leases import AttemptLease
from tablelog.commit.log_commit import WriteReceipt, relay_token
from tablelog.errors import OptionError
from tablelog.logs.pool import LogPool, release
from tablelog.options import ChangelogMode
from tablelog.records import ProduceBatch, RowKind
from tablelog.relay.changes import RelayError, snapshot_changes
from tablelog.relay.own_records import FoundRecords, find_own_records
from tablelog.writing.routing import partition_order

if TYPE_CHECKING:
    from tablelog.logs.client import LogClient
    from tablelog.store import SnapshotInfo, TableFiles
    from tablelog.table_view import TableView

#: The writer id of the relay's commits.
RELAY_WRITER = "tablelog-relay"
#: How often the relay's consumer is written again while it stays at one snapshot.
_CONSUMER_REFRESH_S = 60.0


@attrs.frozen
class RelayStep:
    """What one relay step published."""

    #: The relay's snapshot (None: nothing was pending).
    snapshot_id: int | None
    #: The foreign snapshots whose changes it carries, in commit order.
    relayed: tuple[int, ...]
    #: Changes published (those an earlier, killed run produced included).
    changes: int
    #: The log records holding them (a record of the ``arrow`` log format holds many).
    records: int = 0
    #: Of those, the records an earlier run had produced and not committed.
    recovered: int = 0

    def summary(self) -> str:
        if not self.relayed:
            return "nothing to relay"
        ids = ", ".join(map(str, self.relayed))
        again = f" ({self.recovered} record(s) found in the log from an earlier run)" if self.recovered else ""
        return f"relayed snapshot(s) {ids}: {self.changes} change(s){again} in snapshot {self.snapshot_id}"


def is_foreign(snapshot: SnapshotInfo, has_log_commit: bool) -> bool:
    """Whether another writer committed ``snapshot``: no log-commit record, not a compaction."""
    return not has_log_commit and snapshot.commit_kind != "COMPACT"


def first_unrelayed(files: TableFiles, from_snapshot: int | None = None) -> int:
    """The first snapshot id the relay has not looked at: after the foreign snapshots the
    newest relay commit carries; with none, ``from_snapshot``, else after the first snapshot
    kept with a log-commit record (where the log began), else the earliest snapshot kept.
    ``from_snapshot`` later than where the relay stands skips the snapshots before it."""
    resume = None
    for _, record in log_commits(files, newest_first=True):
        if record.relayed_snapshots:
            resume = max(record.relayed_snapshots) + 1
            break
    if resume is None and from_snapshot is None:
        first = next(log_commits(files), None)
        resume = first[0].id + 1 if first is not None else (files.earliest_snapshot_id() or 1)
    return max(resume or 1, from_snapshot or 1)


class Relay:
    """Publishes a table's foreign snapshots into its log, a step at a time (:meth:`step`).

    ``from_snapshot``: where to start when the table has no relay commit yet (default:
    after the first kept snapshot with a log-commit record, where the log began; every kept
    snapshot when there is none), or to skip snapshots that expired unpublished.
    ``max_snapshots``: the most foreign snapshots one relay commit carries.
    ``resume_from``: where a relay of this process stopped (:attr:`next_snapshot`), to
    start there without reading the snapshots back to the last relay commit.
    ``consumer_id``: a Paimon consumer the relay keeps at the snapshots it still needs, so
    that snapshot expiry keeps them while the relay is behind or stopped (as a reader's
    ``consumer-id``; ``consumer.expiration-time`` removes it once unseen that long).

    One relay per table: on a local warehouse a second one is refused (the table's relay lock).
    """

    def __init__(
        self, table: TableView, *, from_snapshot: int | None = None, max_snapshots: int = 100,
        consumer_id: str | None = None, resume_from: int | None = None,
    ) -> None:
        if not table.options.log_enabled:
            raise OptionError(
                f"table {table.identifier!r} has no log (log.system=none): there is nothing to relay "
                "other writers' commits into; attach one first (tablelog alter --set log.system=...)"
            )
        if max_snapshots < 1:
            raise OptionError(f"max_snapshots must be >= 1, got {max_snapshots}")
        self.table = table
        self._stack = contextlib.ExitStack()
        if not self._stack.enter_context(table.files.relay_lock()):
            self._stack.close()
            raise RelayError(
                f"table {table.identifier!r}: another relay is running for this table (it holds the table's "
                "relay lock); run one relay per table"
            )
        self._consumer_id = consumer_id
        self._consumer_recorded: tuple[int, float] | None = None  # (next snapshot, when)
        self._from = from_snapshot
        self._max = max_snapshots
        self._pool = LogPool(max_idle=1)
        self._next: int | None = resume_from  # the first snapshot id not looked at yet
        #: What a killed earlier run produced and did not commit, by token (looked for once per run).
        self._found: dict[str, FoundRecords] | None = None

    def close(self) -> None:
        try:
            self._pool.close()
        finally:
            self._stack.close()

    def __enter__(self) -> Relay:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- where it is -------------------------------------------------------------

    def _start(self) -> int:
        return first_unrelayed(self.table.files, self._from)

    @property
    def next_snapshot(self) -> int | None:
        """The first snapshot this relay has not looked at (None: it has not looked yet)."""
        return self._next

    def pending(self) -> list[SnapshotInfo]:
        """The foreign snapshots not relayed yet, in commit order. Raises
        :class:`RelayError` when some that may have been foreign expired unpublished."""
        files = self.table.files
        if self._next is None:
            self._next = self._start()
        latest = files.latest_snapshot()
        if latest is None or latest.id < self._next:
            return []
        earliest = files.earliest_snapshot_id()
        if earliest is not None and earliest > self._next:
            raise RelayError(
                f"table {self.table.identifier!r}: snapshots {self._next}..{earliest - 1} expired before the "
                "relay published them; the changes other writers committed there (if any) never reached the "
                "log. Give the relay a consumer id (--consumer-id) or keep snapshots longer "
                f"(snapshot.time-retained); to go on without them, start the relay with --from-snapshot {earliest}"
            )
        found: list[SnapshotInfo] = []
        relayed: set[int] = set()
        for snapshot, record in snapshot_commits(files, after=self._next - 1, upto=latest.id):
            if is_foreign(snapshot, record is not None):
                found.append(snapshot)
            elif record is not None:
                relayed.update(record.relayed_snapshots)
        # Relayed already (by a relay that ran since this one looked: the Spark query's
        # next micro-batch goes on from where the last one stopped).
        found = [s for s in found if s.id not in relayed]
        if not found:
            self._next = latest.id + 1
        return found

    # -- one step ----------------------------------------------------------------

    def step(self) -> RelayStep:
        """Relay the pending foreign snapshots (up to ``max_snapshots``) in one commit."""
        self.table.refresh_schema()
        pending = self.pending()
        batch = pending[: self._max]
        if not batch:
            self._hold_snapshots()
            return RelayStep(None, (), 0)
        log = self._pool.checkout(self.table)
        reusable = False
        try:
            # A step that fails after producing leaves records this process knows nothing of
            # (the pops below): the next step looks in the log again.
            if self._found is None:
                self._found = self._own_records(log, pending)
            found = {token: self._found.pop(token) for token in map(self._token, (s.id for s in batch))
                     if token in self._found}
            produced = [self._produce(log, snapshot, found.get(self._token(snapshot.id))) for snapshot in batch]
            flushed = log.flush(self.table.options.log_flush_timeout_ms / 1000)
            receipts = []
            for (token, rows, lease), snapshot in zip(produced, batch, strict=True):
                own = [r for r in flushed if r.token == token]
                ranges = found.get(token, FoundRecords()).merged(token, own)
                if ranges:
                    lease.refresh()
                receipts.append(WriteReceipt(token=token, task=f"relay-{snapshot.id}", rows=rows, ranges=ranges,
                                             paimon_messages=[]))
            reusable = True
        except BaseException:
            self._found = None
            raise
        finally:
            release(log, self._pool, reusable=reusable)
        try:
            result = committer.commit(self.table, RELAY_WRITER, batch[-1].id, receipts, self._pool,
                                      relayed=[s.id for s in batch])
        except BaseException:
            self._found = None
            raise
        self._next = batch[-1].id + 1
        self._hold_snapshots()
        return RelayStep(
            result.snapshot_id, tuple(s.id for s in batch), changes=sum(r.rows for r in receipts),
            records=sum(r.count for receipt in receipts for r in receipt.ranges),
            recovered=sum(f.count() for f in found.values()),
        )

    def _hold_snapshots(self) -> None:
        """Keep the consumer at the snapshot before the next one to look at (its rows are the
        next foreign snapshot's before-images); written again now and then while unchanged,
        so that an idle relay is not taken for gone."""
        if self._consumer_id is None or self._next is None:
            return
        needed, now = max(self._next - 1, 1), time.monotonic()
        if self._consumer_recorded is not None:
            recorded, at = self._consumer_recorded
            if recorded == needed and now - at < _CONSUMER_REFRESH_S:
                return
        self.table.files.consumers().record(self._consumer_id, needed)
        self._consumer_recorded = (needed, now)

    def _token(self, snapshot_id: int) -> str:
        return relay_token(self.table.token_prefix, snapshot_id)

    def _own_records(self, log: LogClient, pending: Sequence[SnapshotInfo]) -> dict[str, FoundRecords]:
        """What a killed earlier run produced of the ``pending`` snapshots' changes: it
        produced them after the snapshots existed, so after the end positions committed before."""
        start = last_end_positions(self.table.files, *self.table.log_name, upto=pending[0].id)
        return find_own_records(log, self.table.log_partitions, start, [self._token(s.id) for s in pending])

    def _produce(
        self, log: LogClient, snapshot: SnapshotInfo, found: FoundRecords | None,
    ) -> tuple[str, int, AttemptLease]:
        """Produce ``snapshot``'s changes but those ``found`` in the log already."""
        token = self._token(snapshot.id)
        data, kinds = snapshot_changes(self.table.files, snapshot)
        lease = AttemptLease(self.table, token)
        now = int(time.time() * 1000)
        records, rows = self._encode(data, kinds, now)
        for partition, keys, values in records:
            todo = [i for i in range(len(values)) if found is None or not found.has(partition, i)]
            for chunk in _runs(todo):
                lease.hold(log, None)
                log.produce(ProduceBatch(
                    token=token, partition=partition, keys=[keys[i] for i in chunk],
                    values=[values[i] for i in chunk], timestamp_ms=now, first_seq=chunk[0],
                ))
        return token, rows, lease

    def _encode(
        self, data: pa.Table, kinds: list[RowKind], now: int,
    ) -> tuple[list[tuple[int, Sequence[bytes | None], Sequence[bytes]]], int]:
        """The records per log partition, as the writer encodes and routes them, and how
        many changes they hold."""
        table = self.table
        if table.changelog_mode is ChangelogMode.UPSERT:  # upsert logs carry no -U
            keep = [i for i, k in enumerate(kinds) if k is not RowKind.UPDATE_BEFORE]
            data, kinds = data.take(pa.array(keep, pa.int64())), [kinds[i] for i in keep]
        if data.num_rows == 0:
            return [], 0
        data = data.select(table.codec.schema.names).cast(table.codec.schema)
        table.codec.check_values(data)
        order, groups = partition_order(table.files, data, table.log_partitions)
        if order is not None:
            data = data.take(order)
            kinds = [kinds[i] for i in order.tolist()]
        encoded = table.codec.encode_partitions(data, kinds, groups, now, table.options.log_max_record_bytes,
                                                lambda row: row)
        return [(partition, keys, values) for partition, keys, values in encoded], data.num_rows


def _runs(indices: list[int]) -> list[list[int]]:
    """``indices`` (ascending) cut into runs of consecutive numbers."""
    runs: list[list[int]] = []
    for i in indices:
        if runs and runs[-1][-1] == i - 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return runs
