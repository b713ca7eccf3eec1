"""A write attempt: it produces to the log and writes Paimon data files; a commit
publishes both in one snapshot.

:class:`WriteTask` is one attempt (a Spark task attempt, or one round of a
:class:`~tablelog.writing.writer.Writer`): it has its own writer token, sends records to
the log at once (readers in eventual mode see them immediately) and returns a
:class:`~tablelog.commit.log_commit.WriteReceipt`. The committer, possibly in another
process, turns receipts into a snapshot (:mod:`tablelog.commit`).
"""

from __future__ import annotations

import logging
import weakref
from collections import defaultdict
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from tablelog.commit import history
from tablelog.commit.leases import AttemptLease
from tablelog.commit.log_commit import WriteReceipt, new_token
from tablelog.formats.arrow import kind_array
from tablelog.logs.pool import LogPool, release
from tablelog.records import ProduceBatch, ProducedRange, RowKind
from tablelog.store import KIND_FIELD, PartitionDrop
from tablelog.writing import inputs
from tablelog.writing.files_lane import FilesLanes
from tablelog.writing.log_batches import encode
from tablelog.writing.merged import PendingRows
from tablelog.writing.merged_parts import merged_and_encoded

if TYPE_CHECKING:
    from tablelog.logs.client import LogClient
    from tablelog.store.bucket_routing import BucketRouting, Span
    from tablelog.table_view import TableView

log = logging.getLogger(__name__)


class WriteTask:
    """One write attempt for one commit identifier of one writer.

    With ``log_pool``, the log connection comes from the pool (open, topic ensured) and
    goes back to it only when ``finish()`` succeeds; ``abort()`` or a failing
    ``finish()`` closes it (see :mod:`tablelog.logs.pool`). ``lanes``: the most threads
    writing its data files (:mod:`tablelog.writing.files_lane`): one for the tasks of an
    engine, which runs many at once on a machine; a :class:`~tablelog.writing.writer.Writer`,
    alone in its process, takes one a core.
    """

    def __init__(
        self, table: TableView, writer: str, commit_identifier: int, task: str = "0",
        *, log_pool: LogPool | None = None, lanes: int = 1,
    ) -> None:
        self.table = table
        self.writer = writer
        self.commit_identifier = commit_identifier
        self.task = task
        self.token = new_token(table.token_prefix)
        self.rows = 0
        self._seq: dict[int, int] = defaultdict(int)
        self._projection_seq: dict[int, int] = defaultdict(int)
        self._log: LogClient | None = None
        #: The log's projection stream (:mod:`tablelog.formats.projection`), when the table has one.
        self._projection_log: LogClient | None = None
        self._log_pool = log_pool
        self._lanes = lanes
        #: How rows go to the lanes by bucket (found at the first write; None: one lane, every row).
        self._routing: BucketRouting | None = None
        #: The attempt's data files, written beside its log (opened on first use).
        self._paimon_write: FilesLanes | None = None
        #: In place of data files, the drop of a table partition (:meth:`drop_partition`).
        self._drop: PartitionDrop | None = None
        self._finished = False
        self._started = False
        #: A merged-changelog table's rows, kept until ``finish()`` (:mod:`tablelog.writing.merged`).
        self._pending: PendingRows | None = None
        #: A merged-changelog attempt's base snapshot and the keys it wrote, for its receipt.
        self._merged: tuple[int | None, pa.Table | None] = (None, None)
        #: Keeps log retention off this attempt's records until it commits (where the log deletes).
        self._lease = AttemptLease(table, self.token)

    # Paimon and the log are opened on first use: an empty task costs nothing.
    def _open(self, *, files: bool = True) -> None:
        if self._paimon_write is None and files:
            routing = self._routing
            writes = [self.table.files.new_write() for _ in range(1 if routing is None else routing.writes)]
            lanes = FilesLanes(writes, self.commit_identifier)
            weakref.finalize(self, lanes.close, wait=False)  # an attempt never finished nor aborted
            self._paimon_write = lanes
        if self._log is None and self.table.options.log_enabled:
            self._log = self._connect(projection=False)
        if self._projection_log is None and self.table.projection:
            self._projection_log = self._connect(projection=True)

    def _connect(self, *, projection: bool) -> LogClient:
        """A connection to the table topic (or its projection stream's), its topic ensured:
        from the pool when there is one."""
        table = self.table
        if self._log_pool is not None:
            return self._log_pool.checkout(table, table.projection_log_config() if projection else None)
        client = table.open_projection_log() if projection else table.open_log()
        client.ensure_topic()
        return client

    def write(self, data: Any, kind: RowKind | str | None = None) -> int:
        """Write rows (Arrow, pandas, dicts, or (kind, dict) pairs); returns how many.

        Everything is validated and encoded before anything is sent, so bad input
        leaves no trace in the log or the table.
        """
        if self._finished:
            raise RuntimeError("this write task is finished; start a new one")
        if self._drop is not None:
            raise RuntimeError("this write task drops a partition; write rows in another one")
        if not self._started:
            # An attempt writes with the table's latest schema: one altered since the table
            # was opened is read again (data without an added column writes nulls there).
            self.table.refresh_schema()
            self.table.check_log_unchanged("writer")  # before anything goes to the old log
            self._started = True
            merge = self.table.files.merge_options
            if merge is not None:
                self._pending = PendingRows(merge, self.table.identifier)
            else:
                self._routing = self.table.files.bucket_routing(self._lanes)
        table = self.table
        arrow, kinds = inputs.prepare(
            data, table.codec.schema, table.primary_key, kind, table=table.identifier
        )
        if arrow.num_rows == 0:
            return 0
        if table.options.log_enabled:
            table.codec.check_values(arrow)
        if self._pending is not None:  # its changes are known when the attempt finishes
            self._pending.add(arrow, kinds)
            self.rows += arrow.num_rows
            return arrow.num_rows
        # In the data files' bucket order (once for both): the log's partitions are the buckets.
        arrow, kinds, rows_of, spans = self._route(arrow, kinds)
        groups = None if spans is None else [group for lane in spans for group in lane]
        batches, projected = self._encode(arrow, kinds, groups, rows_of) if table.options.log_enabled else ([], [])
        self._open()
        self._write_files(arrow, kinds, spans)
        self._produce(batches, projected)
        self.rows += arrow.num_rows
        return arrow.num_rows

    def _route(
        self, arrow: pa.Table, kinds: list[RowKind],
    ) -> tuple[pa.Table, list[RowKind], np.ndarray | None, list[list[Span]] | None]:
        """The rows put in bucket order when the table's buckets are computed ahead
        (:mod:`tablelog.store.bucket_routing`): the rows, their kinds, each one's input
        row (None: as given), and each lane's spans of them (None: one lane, every row)."""
        if self._routing is None:
            return arrow, kinds, None, None
        order, spans = self._routing.route(arrow)
        if order is not None:
            arrow = arrow.take(order)
            if kinds.count(kinds[0]) != len(kinds):  # rows of one kind (every insert) need no order
                kinds = [kinds[i] for i in order.tolist()]
        return arrow, kinds, order, spans

    def _write_files(self, arrow: pa.Table, kinds: list[RowKind], spans: list[list[Span]] | None = None) -> None:
        """Hand the rows to the attempt's data file lanes (:mod:`tablelog.writing.files_lane`)."""
        table = self.table
        if table.files.has_kind_field:
            data, data_kinds = self._with_kind_column(arrow, kinds), None
        else:  # the kinds go to Paimon's own _VALUE_KIND
            data, data_kinds = arrow, (kinds if table.primary_key else None)
        assert self._paimon_write is not None
        self._paimon_write.write(data, data_kinds, spans)

    def _write_merged(self) -> None:
        """A merged-changelog attempt's records and changes (:mod:`tablelog.writing.merged`)."""
        pending, self._pending, table = self._pending, None, self.table
        if pending is None or pending.empty:
            return
        # A replay (a Spark micro-batch after its driver died) commits nothing: no changes.
        changes = table.options.log_enabled and not history.is_replay(table.files, self.writer, self.commit_identifier)
        write, batches = merged_and_encoded(table.files, table.codec.schema, pending, self._encode, changes=changes)
        self._merged = (write.base_snapshot, write.keys)
        self._open(files=write.records.num_rows > 0)
        if write.records.num_rows:
            self._write_files(write.records, write.kinds)
            self._paimon_write.prepare()  # type: ignore[union-attr]  # its last write: prepared beside the produce
        self._produce(*batches)

    def _produce(self, batches: list[ProduceBatch], projected: list[ProduceBatch]) -> None:
        assert self._log is not None or not batches
        if batches:  # the lease first: a retention that runs after a produce sees it
            self._lease.hold(self._log, self._projection_log)  # type: ignore[arg-type]
        for batch in batches:
            self._log.produce(batch)  # type: ignore[union-attr]
        for batch in projected:
            self._projection_log.produce(batch)  # type: ignore[union-attr]

    def drop_partition(self, drop: PartitionDrop, rows: pa.Table) -> int:
        """Retract ``rows`` in the log (``-D`` records): every row of the table partition
        ``drop`` names, as its snapshot holds them; committed, this task's snapshot drops
        the partition's files instead of adding any (:class:`~tablelog.store.PartitionDrop`;
        partition expiry, :mod:`tablelog.partition_expiry`). Returns the rows retracted."""
        if self._finished or self._paimon_write is not None or self._drop is not None:
            raise RuntimeError("a partition drop is a write task of its own: start a new one")
        table = self.table
        arrow, kinds = inputs.prepare(rows, table.codec.schema, table.primary_key, RowKind.DELETE,
                                      table=table.identifier)
        self._drop = drop
        return self._produce_only(arrow, kinds)

    def produce_changes(self, rows: pa.Table, kinds: list[RowKind]) -> int:
        """Send ``rows`` (whole rows, with their ``kinds``) to the log under this task's
        token, with no data files: a committer's changes of a merged-changelog table
        (:mod:`tablelog.writing.merged_repair`). Returns how many."""
        if self._finished or self._paimon_write is not None or self._pending is not None:
            raise RuntimeError("changes alone are produced by a write task of their own: start a new one")
        self._started = True
        return self._produce_only(rows, kinds)

    def _produce_only(self, arrow: pa.Table, kinds: list[RowKind]) -> int:
        self.rows += arrow.num_rows
        if arrow.num_rows and self.table.options.log_enabled:
            batches = self._encode(arrow, kinds)  # before the connection: bad rows send nothing
            self._open(files=False)
            self._produce(*batches)
        return arrow.num_rows

    @staticmethod
    def _with_kind_column(arrow: pa.Table, kinds: list[RowKind]) -> pa.Table:
        return arrow.append_column(pa.field(KIND_FIELD, pa.string()), kind_array(kinds))

    def _encode(
        self, arrow: pa.Table, kinds: list[RowKind], groups: list[Span] | None = None, rows_of: np.ndarray | None = None,
    ) -> tuple[list[ProduceBatch], list[ProduceBatch]]:
        """The batches of the table topic and of its projection stream, all encoded before
        any is produced (:func:`tablelog.writing.log_batches.encode`)."""
        return encode(self.table, arrow, kinds, self.token, self._seq, self._projection_seq,
                      groups=groups, rows_of=rows_of)

    def finish(self) -> WriteReceipt:
        """Make the log records durable and prepare the data files; returns the receipt
        the committer needs. Raises (and the caller commits nothing) when the log
        does not acknowledge every record within ``log.flush-timeout-ms``."""
        if self._finished:
            raise RuntimeError("this write task is already finished")
        self._finished = True
        ranges: list[ProducedRange] = []
        projection_ranges: list[ProducedRange] = []
        messages: list[Any] = []
        own_only = reusable = finished = False
        try:
            if self._pending is not None:
                self._write_merged()
            if self._paimon_write is not None:
                self._paimon_write.prepare()  # beside the log's flush
            if self._log is not None:
                ranges, own_only = self._flush(self._log)
            if self._projection_log is not None:
                projection_ranges, projection_own = self._flush(self._projection_log)
                own_only = own_only and projection_own
            if self._paimon_write is not None:
                messages = self._paimon_write.prepared()
            if self._drop is not None:
                messages = [self._drop]
            if ranges or projection_ranges:
                self._lease.refresh()  # live from the flush on: the commit may come a while later
            reusable = own_only  # only a task that finished cleanly hands its connection on
            finished = True
        finally:
            try:
                self._close(reuse_log=reusable)
            finally:
                if not finished or not (ranges or projection_ranges):
                    self._lease.release()  # no receipt, or one with no records: nothing to keep
        return WriteReceipt(
            token=self.token, task=self.task, rows=self.rows, ranges=tuple(ranges),
            paimon_messages=messages, projection_ranges=tuple(projection_ranges), log=self.table.log_name,
            base_snapshot=self._merged[0], written_keys=self._merged[1],
        )

    def _flush(self, client: LogClient) -> tuple[list[ProducedRange], bool]:
        """This attempt's ranges on one of its log connections, flushed; and whether the
        flush reported no other token's."""
        flushed = client.flush(self.table.options.log_flush_timeout_ms / 1000)
        # A flush reports every (token, partition) produced on the connection since
        # its last flush. Only this attempt's token may reach the receipt: records
        # of any other token (an attempt that died on a reused connection without
        # flushing) must never be committed.
        ranges = [r for r in flushed if r.token == self.token]
        if len(ranges) == len(flushed):
            return ranges, True
        foreign = sorted({r.token for r in flushed if r.token != self.token})
        log.warning(
            "table %r: the log flush of write task %s (token %s) also reported "
            "records of token(s) %s; they are left out of its receipt and the "
            "connection is closed", self.table.identifier, self.task, self.token, foreign,
        )
        return ranges, False

    def abort(self) -> None:
        """Give up this attempt: nothing it wrote is ever committed."""
        self._finished = True
        try:
            self._close()
        finally:
            self._lease.release()

    def _close(self, reuse_log: bool = False) -> None:
        """Release Paimon and the log. ``reuse_log``: the log connection holds nothing
        unflushed and may serve the next task (when it came from a pool)."""
        try:
            if self._paimon_write is not None:
                self._paimon_write.close()
                self._paimon_write = None
        finally:
            client, self._log = self._log, None
            projection, self._projection_log = self._projection_log, None
            try:
                release(client, self._log_pool, reusable=reuse_log)
            finally:
                release(projection, self._log_pool, reusable=reuse_log)
