"""A tablelog table: Paimon table files plus the log, behind one object.

Start here: :func:`tablelog.create_table`, :func:`tablelog.open_table` (in
:mod:`tablelog.tables`); then ``table.writer()``, ``table.reader()``, ``table.rows()``.
Distributed engines use ``table.write_task(...)`` on workers and ``table.commit(...)``
on the driver.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import pyarrow as pa

from tablelog import definition, expiry, log_change, merge_rules
from tablelog.commit import committer, compaction, history
from tablelog.commit.compaction import CompactionResult
from tablelog.commit.log_commit import CommitResult, WriteReceipt
from tablelog.errors import OptionError, SchemaChangeError
from tablelog.logs import discovery
from tablelog.options import (
    ChangelogMode,
    GivenOptions,
    TableOptions,
    is_secret,
)
from tablelog.store import (
    SchemaChange,
    SetOption,
    SnapshotInfo,
    TableFiles,
    Warehouse,
    paimon_option_default,
    paimon_option_keys,
)
from tablelog.table_internals import TableInternals

if TYPE_CHECKING:
    from tablelog.expiry import ExpireResult
    from tablelog.logs.pool import LogPool
    from tablelog.options import Consistency, ScanMode
    from tablelog.partition_expiry import PartitionExpiryResult
    from tablelog.positions import ReaderPosition
    from tablelog.reading import ChangelogReader
    from tablelog.writing.write_task import WriteTask
    from tablelog.writing.writer import Writer


def _check(
    given: GivenOptions, systems: Sequence[str] | None = None
) -> tuple[TableOptions, dict[str, str], dict[str, str]]:
    """Validate parsed options; ``systems``: the log systems whose keys are accepted
    (default: :func:`tablelog.logs.discovery.known_names`), e.g. with the table's own, whose
    absence is reported when its log is opened."""
    discovery.learn_declared_secrets(given.keys)
    return given.check(
        log_systems=discovery.known_names() if systems is None else systems,
        passthrough=(*paimon_option_keys(), *merge_rules.PASSTHROUGH),
    )


def internals(table: Table) -> TableInternals:
    """What ``table`` is below its facade (:mod:`tablelog.table_internals`): for the tools
    built on tables (the dashboard, ``describe``, ``verify``, Spark), not for users."""
    return table._internals


@attrs.define
class Table:
    """A table: its user's operations. What the layers below are given is its
    :class:`~tablelog.table_internals.TableInternals` (see :func:`internals`)."""

    _internals: TableInternals

    def __repr__(self) -> str:
        return f"Table({self.identifier!r}, log.system={self.options.log_system!r}, warehouse={self.warehouse.path!r})"

    @property
    def warehouse(self) -> Warehouse:
        return self._internals.warehouse

    @property
    def options(self) -> TableOptions:
        return self._internals.options

    @property
    def identifier(self) -> str:
        return self._internals.identifier

    @property
    def schema(self) -> pa.Schema:
        return self._internals.schema

    @property
    def primary_key(self) -> tuple[str, ...]:
        return self._internals.primary_key

    @property
    def changelog_mode(self) -> ChangelogMode:
        return self._internals.changelog_mode

    @property
    def table_id(self) -> str:
        """The table's stable id (see :mod:`tablelog.identity`)."""
        return self._internals.table_id

    @property
    def schema_id(self) -> int:
        """The id of the schema this object reads and writes with (the latest when it
        was opened, or when it last wrote or altered the table)."""
        return self._internals.schema_id

    # -- schema evolution ------------------------------------------------------

    def alter(self, *changes: SchemaChange) -> int:
        """Change the table's schema: ``AddColumn``, ``RenameColumn``, ``DropColumn``,
        ``WidenColumn``, ``SetOption`` (from :mod:`tablelog`), applied in order as one new
        schema; returns its id. What is allowed is :mod:`tablelog.schema_rules`'s; a refused
        change raises :class:`~tablelog.errors.SchemaChangeError` and changes nothing.
        Records and files written before keep their schema; every reader returns them in
        its own (see docs/schema-evolution.md).

        ``SetOption("log.system", ...)`` (or the topic's option) with another value than the
        table's attaches a log to it, moves it to another one, or detaches it (``none``):
        the options of the new log are those this object was opened with and those set
        (:mod:`tablelog.log_change`, docs/attaching.md). This object then writes to the new log."""
        from tablelog.schema_rules import check_changes

        set_options: dict[str, str] = {}
        sets: dict[str, str] = {}
        for change in changes:
            if isinstance(change, SetOption):
                if is_secret(change.key):
                    raise SchemaChangeError(f"table {self.identifier!r}: option {change.key!r} is a secret; "
                                            "secrets are never stored in a table; nothing was changed")
                _, _, paimon_options = _check(GivenOptions.read({change.key: change.value}))  # unknown keys, bad values
                set_options.update(paimon_options)
                sets[change.key.strip().lower()] = change.value
        # together: one alter may set file.format and a file.compression only it allows
        files = self._internals.files
        merge_rules.check_merge_options_kept(self.identifier, set_options, files.properties,
                                             {k: paimon_option_default(k) for k in set_options})
        definition.check_paimon_options(set_options, self.schema, self.primary_key, files.properties,
                                        partition_keys=files.partition_keys)
        stored = {c.key: c.value for c in changes if isinstance(c, SetOption) and c.key.startswith("partition.")}
        if stored:  # partition expiry where it cannot run is refused as at create
            try:
                definition.check_partition_expiry(self.options.with_overrides(stored))
            except OptionError as err:
                raise SchemaChangeError(f"table {self.identifier!r}: {err}; nothing was changed") from err
        log = log_change.planned_change(self._internals, sets)
        if log is not None:
            changes = (*(c for c in changes if not isinstance(c, SetOption) or c.key.strip().lower() not in log.stored),
                       *(SetOption(k, v) for k, v in log.stored.items()))
        projected = self.options.log_arrow_projection

        def check(latest: TableFiles) -> None:
            check_changes(self.identifier, latest.schema, latest.primary_key, latest.bucket_keys, changes,
                          projected=projected, log_change=log is not None, table_options=latest.properties)

        ends: dict[int, int] = {}
        if log is not None:
            check(self.warehouse.open(self.identifier))  # before a topic is created for an alter that is refused
            ends = log_change.prepare(self._internals, log)
        with files.commit_lock():
            latest = self.warehouse.open(self.identifier)
            check(latest)
            try:
                schema_id = latest.alter(list(changes))
            except Exception as err:  # pypaimon's own refusal (its RuntimeError wraps a ValueError)
                raise SchemaChangeError(
                    f"table {self.identifier!r}: Paimon refused the alter: {err}; nothing was changed"
                ) from err
            if log is not None:
                log_change.commit_attaching_snapshot(self.warehouse.open(self.identifier), log, ends)
        if log is not None:
            self._internals = log_change.reopened(self._internals, log)
        else:
            self._internals.refresh_schema()
        return schema_id

    # -- the log ---------------------------------------------------------------

    @property
    def topic(self) -> str:
        return self._internals.topic

    @property
    def log_partitions(self) -> int:
        return self._internals.log_partitions

    @property
    def projection(self) -> tuple[str, ...]:
        """The columns of the log's projection stream, the key's among them, in schema
        order; empty when the table has none (:mod:`tablelog.formats.projection`)."""
        return self._internals.projection

    # -- writing ---------------------------------------------------------------

    def writer(self, writer_id: str | None = None) -> Writer:
        from tablelog import partition_expiry
        from tablelog.writing.writer import Writer

        def after_commit(result: CommitResult) -> None:
            if result.committed:
                partition_expiry.expire_partitions_after_commit(self._internals)

        return Writer(self._internals, writer_id, after_commit=after_commit)

    def write_task(
        self, writer_id: str, commit_identifier: int, task: str = "0", *, log_pool: LogPool | None = None
    ) -> WriteTask:
        """One write attempt; ``log_pool`` lends it an open log connection (see
        :mod:`tablelog.logs.pool`), for processes that run many short tasks."""
        from tablelog.writing.write_task import WriteTask

        return WriteTask(self._internals, writer_id, commit_identifier, task, log_pool=log_pool)

    def commit(
        self, writer_id: str, commit_identifier: int, receipts: Sequence[WriteReceipt],
        *, log_pool: LogPool | None = None,
    ) -> CommitResult:
        """Commit receipts as one snapshot, once per (writer_id, commit_identifier).

        A replay of an identifier that is already committed commits nothing and
        returns ``committed=False`` with the earlier snapshot. After the
        snapshot, the log system's ``commit`` hook runs (idempotent), on a replay
        too: a hook that failed runs again when the commit is retried. A durable
        snapshot is a successful commit: a hook that raises does not make this
        raise; its error is logged and returned in ``CommitResult.hook_error``. With
        ``log_pool``, the log connection (end positions, ``commit`` hook) comes from
        the pool and goes back to it: a committer of many snapshots opens it once.
        """
        from tablelog import partition_expiry
        from tablelog.writing.writer import repair_changes

        result = committer.commit(
            self._internals, writer_id, commit_identifier, receipts, log_pool, repair=repair_changes)
        if result.committed:
            partition_expiry.expire_partitions_after_commit(self._internals)
        return result

    def find_commit(self, writer_id: str, commit_identifier: int) -> SnapshotInfo | None:
        """The snapshot in which ``writer_id`` committed ``commit_identifier``, if any."""
        return history.find_commit(self._internals.files, writer_id, commit_identifier)

    def last_commit_identifier(self, writer_id: str) -> int | None:
        """The newest commit identifier ``writer_id`` committed (None: none)."""
        return history.last_commit_identifier(self._internals.files, writer_id)

    def compact(
        self, buckets: Sequence[int] | None = None, *, partitions: Sequence[Mapping[str, Any]] | None = None,
        threads: int = compaction.DEFAULT_THREADS) -> CompactionResult:
        """Rewrite each (partition, bucket) of ``buckets`` and ``partitions`` (``[{"dt":
        "2026-11-24"}]``; default all) that has more than one sorted run into one, in one
        ``COMPACT`` snapshot, ``threads`` pairs at a time (default: the cores, at most 4);
        the rows do not change and log readers pass over it. Writers do this in the
        background past ``num-sorted-run.compaction-trigger`` (not with ``write-only``)."""
        return compaction.compact(self._internals, buckets, partitions=partitions, threads=threads)

    def expire_snapshots(self, *, dry_run: bool = False, now_millis: int | None = None) -> ExpireResult:
        """Expire old snapshots and the files only they reference, as the table's options
        say (``snapshot.num-retained.*``, ``snapshot.time-retained``, consumers); commits
        run it too. ``dry_run``: report what would go, remove nothing (:mod:`tablelog.expiry`)."""
        return expiry.expire_snapshots(self._internals, dry_run=dry_run, now_millis=now_millis)

    # -- reading ---------------------------------------------------------------

    def expire_partitions(self, *, dry_run: bool = False, now_millis: int | None = None) -> PartitionExpiryResult:
        """Drop the partitions older than ``partition.expiration-time``, each in a snapshot
        whose log records are the ``-D`` of its rows; commits run it too, once per
        ``partition.expiration-check-interval``. ``dry_run``: report what would go
        (:mod:`tablelog.partition_expiry`)."""
        from tablelog import partition_expiry

        return partition_expiry.expire_partitions(self._internals, dry_run=dry_run, now_millis=now_millis)

    def snapshots(self, newest_first: bool = False) -> Iterator[SnapshotInfo]:
        return self._internals.files.snapshots(newest_first)

    def rows(
        self, snapshot_id: int | None = None, buckets: Sequence[int] | None = None,
        *, partitions: Sequence[Mapping[str, Any]] | None = None,
    ) -> pa.Table:
        """The table's rows at a snapshot (default: the latest); ``buckets``: only those
        buckets'; ``partitions`` (``[{"dt": "2026-11-24"}]``): only those table partitions'
        (their files alone are read)."""
        return self._internals.rows(snapshot_id, buckets, partitions)

    def reader(
        self,
        position: ReaderPosition | str | Mapping[str, Any] | None = None,
        *,
        consistency: str | Consistency | None = None,
        scan_mode: str | ScanMode | None = None,
        timestamp_millis: int | None = None,
        consumer_id: str | None = None,
        columns: Sequence[str] | None = None,
        partitions: Iterable[int] | Iterable[Mapping[str, Any]] | None = None,
        table_partitions: Iterable[Mapping[str, Any]] | None = None,
        options: Mapping[str, Any] | None = None,
        until_snapshot: int | None = None,
        until_positions: Mapping[int, int] | None = None,
        schema_id: int | None = None,
        changes_from_table: bool = True,
        split_partitions: bool = False,
    ) -> ChangelogReader:
        """A reader of the table's changelog (see :mod:`tablelog.reading`).

        - ``position``: a saved :attr:`ChangelogReader.position` (its JSON, dict or object)
          to resume from; it carries its consistency.
        - ``consistency``: ``transactional`` or ``eventual`` (default: the table's
          ``log.consistency``).
        - ``scan_mode``: ``latest-full`` (default: the current rows, then the log),
          ``latest``, ``earliest``, ``from-timestamp`` with ``timestamp_millis``.
        - ``consumer_id``: record progress as a Paimon consumer (``consumer-id``): a new
          reader with the same id resumes there, and expiry keeps what it still needs.
        - ``columns``: return only these columns (the primary key's and ``_kind`` always).
        - ``partitions``: read only these log partitions (and, in the full scan, the rows of
          the buckets with those numbers); or, given as mappings of partition column to value
          (``[{"dt": "2026-11-24"}]``), only these partitions of a partitioned table: the full
          scan reads their files alone, the changes of other table partitions are dropped
          (with ``columns``, the partition columns are returned too).
        - ``table_partitions``: the table partitions, as mappings, when ``partitions`` names
          log partitions (a Spark task reads one log partition of some table partitions).
        - ``options``: any other read option by its key (``log.foreign-records``,
          ``log.reader.pause-gc``, …; the keyword arguments above win).
        - ``until_snapshot``: a transactional reader stops after this snapshot;
          ``until_positions``: an eventual reader stops before these log positions
          (partition → exclusive end): bounded reads, such as one Spark micro-batch. An
          eventual reader with both returns the changes of other writers' snapshots up to
          ``until_snapshot`` too (with ``until_positions`` alone, none).
        - ``schema_id``: every change in this schema of the table (default: the latest,
          then the newest the reader meets).
        - ``changes_from_table``: False reports a snapshot whose log records are gone as
          lost instead of reading its changes from the table files (``verify``).
        - ``split_partitions``: a transactional poll may stop inside any snapshot's
          partition at its ``max_records`` (``tail --limit``).
        """
        from tablelog.reading import ChangelogReader

        return ChangelogReader(
            self._internals, position, consistency=consistency, scan_mode=scan_mode, timestamp_millis=timestamp_millis,
            consumer_id=consumer_id, columns=columns, partitions=partitions, table_partitions=table_partitions,
            options=options,
            until_snapshot=until_snapshot, until_positions=until_positions, schema_id=schema_id,
            changes_from_table=changes_from_table, split_partitions=split_partitions,
        )
