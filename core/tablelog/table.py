"""A tablelog table: Paimon table files plus the log, behind one object.

Start here: :func:`create_table`, :func:`open_table`; then ``table.writer()``,
``table.reader()``, ``table.rows()``. Distributed engines use
``table.write_task(...)`` on workers and ``table.commit(...)`` on the driver.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

import attrs
import pyarrow as pa

from tablelog import definition, registry
from tablelog.commit_hook import rerun_commit_hook, run_commit_hook
from tablelog.errors import CommitError, OptionError
from tablelog.formats import RecordCodec
from tablelog.identity import TABLE_ID_PROPERTY, new_table_id, table_id, token_prefix
from tablelog.log_pool import release
from tablelog.options import (
    ChangelogMode,
    TableOptions,
    is_secret,
    same_value,
    split_system_options,
)
from tablelog.protocol import CommitResult, LogCommitRecord, WriteReceipt
from tablelog.records import CommittedLog, LogConfig
from tablelog.store import (
    PaimonTable,
    SnapshotInfo,
    Warehouse,
    paimon_option_keys,
    parse_identifier,
)
from tablelog.topic_owners import refuse_shared_topic

if TYPE_CHECKING:
    from tablelog.log_pool import LogPool
    from tablelog.reading import ChangelogReader
    from tablelog.registry import LogClient
    from tablelog.writer import Writer, WriteTask


def _parse(
    options: Mapping[str, Any], systems: Sequence[str] | None = None
) -> tuple[TableOptions, dict[str, str], dict[str, str]]:
    """Validate options; ``systems``: the log systems whose keys are accepted (default:
    the installed ones), e.g. with the table's own, whose absence is reported when its
    log is opened."""
    registry.learn_declared_secrets(options)
    return TableOptions.parse(
        {k: v for k, v in options.items()},
        log_systems=registry.available_names() if systems is None else systems,
        passthrough=paimon_option_keys(),
    )


def _merge_argument(raw: dict[str, Any], key: str, argument: str, value: str) -> None:
    """Put the ``argument`` (``primary_key=``, ``bucket=``) into the options as ``key``,
    refusing a different value given for it in the options too."""
    given = {k.strip().lower(): (k, v) for k, v in raw.items()}.get(key)
    if given is not None and not same_value(key, given[1], value):
        raise OptionError(
            f"{key!r} is given twice with different values: {argument}={value!r} and "
            f"options[{given[0]!r}]={given[1]!r}; give it once"
        )
    if given is not None:
        del raw[given[0]]
    raw[key] = value


def create_table(
    warehouse: str,
    identifier: str,
    schema: pa.Schema,
    *,
    primary_key: Sequence[str] = (),
    bucket: int | None = None,
    options: Mapping[str, Any] | None = None,
    exist_ok: bool = False,
) -> Table:
    """Create a Paimon table in ``warehouse`` with tablelog options.

    Options are the keys of the option table (``log.system``, ``kafka.*``...) and
    Paimon table options. Secrets among them are used but never stored: give
    them again to :func:`open_table`.
    """
    raw = dict(options or {})
    if primary_key:
        _merge_argument(raw, "primary-key", "primary_key", ",".join(primary_key))
    if bucket is not None:
        _merge_argument(raw, "bucket", "bucket", str(bucket))
    parsed, system_options, paimon_options = _parse(raw)
    wh = Warehouse(warehouse)
    if wh.exists(identifier):
        if not exist_ok:
            raise OptionError(f"table {identifier!r} already exists in warehouse {wh.path!r}")
        existing = open_table(warehouse, identifier, raw)
        definition.check_same_schema(identifier, existing.schema, schema)
        return existing
    definition.check_columns(schema)
    definition.check_paimon_options(paimon_options, schema, parsed.primary_key)
    if parsed.log_system_partitions is not None and parsed.log_system_partitions < parsed.bucket:
        raise OptionError(
            f"log.system.partitions={parsed.log_system_partitions} is fewer than bucket={parsed.bucket}; "
            "bucket b is written to partition b, so the topic needs at least one partition per bucket"
        )
    # Check the log system and the data types now, before a table exists.
    if parsed.log_enabled:
        _check_system_options(parsed, system_options)
    RecordCodec(schema, tuple(parsed.primary_key), parsed.log_format)
    stored = {
        **parsed.to_properties(),
        **{k: v for k, v in system_options.items() if not is_secret(k)},
        **paimon_options,
        TABLE_ID_PROPERTY: new_table_id(),
    }
    if parsed.log_enabled:
        refuse_shared_topic(wh, identifier, parsed.log_system, system_options)
        _register_topic(wh, identifier, parsed, system_options, create=parsed.log_system_auto_register)
    store = wh.create(identifier, schema, tuple(parsed.primary_key), parsed.bucket, stored)
    return Table(wh, store, parsed, system_options)


def _register_topic(
    wh: Warehouse, identifier: str, options: TableOptions, system_options: dict[str, str], *, create: bool
) -> None:
    """Open the log, which validates its options (topic name...), and with ``create``
    create the table's topic now: a wrong option or address fails before the table
    exists, and readers can start before the first write."""
    system = options.log_system
    config = LogConfig(
        system=system,
        table=identifier,
        topic=default_topic(identifier, system, system_options),
        partitions=options.log_system_partitions or options.bucket,
        auto_register=True,
        options=split_system_options(system, system_options),
        warehouse=wh.path,
    )
    with registry.load_log_system(system).open(config) as log:
        if create:
            log.ensure_topic()


def open_table(warehouse: str, identifier: str, options: Mapping[str, Any] | None = None) -> Table:
    """Open an existing table. ``options`` add runtime options (secrets, client settings,
    time-outs, reader defaults); options that define the table (``log.format``, the
    topic, ``bucket``, Paimon's file options, ...) may be repeated but not changed
    (:mod:`tablelog.definition`): a different value is an ``OptionError``."""
    wh = Warehouse(warehouse)
    store = wh.open(identifier)
    table_keys = {"primary-key", "bucket"}
    stored = _tablelog_keys({k: v for k, v in store.properties.items() if k not in table_keys})
    systems = registry.available_names()
    table_options, table_system_options, _ = _parse(stored, systems)
    table_options = attrs.evolve(table_options, primary_key=store.primary_key, bucket=store.bucket)
    given = dict(options or {})
    given_options, given_system_options, given_paimon_options = _parse(given, [*systems, table_options.log_system])
    definition.check_same_definition(
        store, table_options, default_topic(identifier, table_options.log_system, table_system_options),
        [k.strip().lower() for k in given],
        given_options, given_system_options, given_paimon_options,
    )
    # Normalized keys: a given "Log.Consistency" overrides the stored "log.consistency".
    extra = {k.strip().lower(): v for k, v in given.items() if k.strip().lower() not in table_keys}
    parsed, system_options, _ = _parse({**stored, **extra}, systems)
    parsed = attrs.evolve(parsed, primary_key=store.primary_key, bucket=store.bucket)
    return Table(wh, store, parsed, system_options)


def default_topic(identifier: str, system: str, system_options: Mapping[str, str]) -> str:
    """The `<system>.topic` option, else ``db.name``."""
    db, name = parse_identifier(identifier)
    return system_options.get(f"{system}.topic") or f"{db}.{name}"


def _tablelog_keys(properties: Mapping[str, str]) -> dict[str, str]:
    """The stored properties that are tablelog's (not Paimon's own)."""
    ours = {f.metadata["key"] for f in attrs.fields(TableOptions)}
    prefixes = ("filesystem.", "kafka.", "pulsar.", *(n + "." for n in registry.available_names()))
    return {k: v for k, v in properties.items() if k in ours or k.startswith(prefixes)}


def _check_system_options(options: TableOptions, system_options: Mapping[str, str]) -> None:
    system = registry.load_log_system(options.log_system)
    for spec in system.option_specs():
        if spec.required and spec.key not in system_options:
            raise OptionError(
                f"log.system={options.log_system!r} needs option {spec.key!r}: {spec.doc}"
            )


@attrs.define
class Table:
    warehouse: Warehouse
    store: PaimonTable
    options: TableOptions
    system_options: dict[str, str] = attrs.field(repr=False)

    def __repr__(self) -> str:
        return f"Table({self.identifier!r}, log.system={self.options.log_system!r}, warehouse={self.warehouse.path!r})"

    @property
    def identifier(self) -> str:
        return self.store.identifier

    @property
    def schema(self) -> pa.Schema:
        return self.store.schema

    @property
    def primary_key(self) -> tuple[str, ...]:
        return self.store.primary_key

    @property
    def changelog_mode(self) -> ChangelogMode:
        mode = self.options.log_changelog_mode
        if mode is ChangelogMode.AUTO:
            return ChangelogMode.UPSERT if self.primary_key else ChangelogMode.ALL
        return mode

    @cached_property
    def table_id(self) -> str:
        """The table's stable id (see :mod:`tablelog.identity`)."""
        return table_id(self.store)

    @cached_property
    def token_prefix(self) -> str:
        """What the writer tokens of this table start with (see :mod:`tablelog.identity`)."""
        return token_prefix(self.table_id)

    @cached_property
    def codec(self) -> RecordCodec:
        return RecordCodec(self.schema, self.primary_key, self.options.log_format, self.identifier)

    # -- the log ---------------------------------------------------------------

    @property
    def topic(self) -> str:
        return default_topic(self.identifier, self.options.log_system, self.system_options)

    @property
    def log_partitions(self) -> int:
        return self.options.log_system_partitions or self.store.bucket

    def log_config(self) -> LogConfig:
        system = self.options.log_system
        return LogConfig(
            system=system,
            table=self.identifier,
            topic=self.topic,
            partitions=self.log_partitions,
            auto_register=self.options.log_system_auto_register,
            options=split_system_options(system, self.system_options),
            warehouse=self.warehouse.path,
        )

    def open_log(self) -> LogClient:
        if not self.options.log_enabled:
            raise OptionError(f"table {self.identifier!r} has log.system=none: it has no log")
        system = registry.load_log_system(self.options.log_system)
        return system.open(self.log_config())

    def route(self, data: pa.Table) -> list[tuple[int, list[int]]]:
        """Which log partition each row goes to: its Paimon bucket, as row indices per partition."""
        from tablelog.routing import route_rows

        return route_rows(self.store, data)

    def partition_order(self, data: pa.Table) -> tuple[Any, list[tuple[int, int, int]]]:
        """The rows grouped by log partition (see :func:`tablelog.routing.partition_order`)."""
        from tablelog.routing import partition_order

        return partition_order(self.store, data)

    # -- writing ---------------------------------------------------------------

    def writer(self, writer_id: str | None = None) -> Writer:
        from tablelog.writer import Writer

        return Writer(self, writer_id)

    def write_task(
        self, writer_id: str, commit_identifier: int, task: str = "0", *, log_pool: LogPool | None = None
    ) -> WriteTask:
        """One write attempt; ``log_pool`` lends it an open log connection (see
        :mod:`tablelog.log_pool`), for processes that run many short tasks."""
        from tablelog.writer import WriteTask

        return WriteTask(self, writer_id, commit_identifier, task, log_pool=log_pool)

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
        # The check and the commit hold the table's commit lock: two committers of
        # the same identifier (a replay racing the original) cannot both commit.
        with self.store.commit_lock():
            return self._commit_once(writer_id, commit_identifier, receipts, log_pool)

    def _commit_once(
        self, writer_id: str, commit_identifier: int, receipts: Sequence[WriteReceipt],
        log_pool: LogPool | None,
    ) -> CommitResult:
        rows = sum(r.rows for r in receipts)
        ranges = tuple(rng for r in receipts for rng in r.ranges)
        records = sum(r.count for r in ranges)
        existing = self.find_commit(writer_id, commit_identifier)
        if existing is not None:
            hook_error = rerun_commit_hook(self, existing, log_pool)
            return CommitResult(existing.id, committed=False, rows=rows, records=records, hook_error=hook_error)
        messages = [m for r in receipts for m in r.paimon_messages]
        if not messages and not ranges:
            return CommitResult(None, committed=True, rows=0, records=0)
        log: LogClient | None = None
        if self.options.log_enabled:
            log = log_pool.checkout(self) if log_pool is not None else self.open_log()
        try:
            record = LogCommitRecord(
                writer=writer_id,
                commit_identifier=commit_identifier,
                system=self.options.log_system,
                topic=self.topic if log is not None else "",
                ranges=ranges,
                end_positions=self._end_positions(log),
            )
            snapshot = self._commit_snapshot(writer_id, commit_identifier, messages, record)
        except BaseException:
            release(log, log_pool, reusable=False)
            raise
        hook_error = None
        if log is not None:  # the snapshot is durable: from here on the commit has happened
            committed = CommittedLog(snapshot.id, writer_id, commit_identifier, ranges, record.end_positions)
            hook_error = run_commit_hook(self, log, log_pool, committed)
        return CommitResult(snapshot.id, committed=True, rows=rows, records=records, hook_error=hook_error)

    def _commit_snapshot(
        self, writer_id: str, commit_identifier: int, messages: list[Any], record: LogCommitRecord
    ) -> SnapshotInfo:
        builder = self.store.paimon.new_stream_write_builder()._with_commit_user(writer_id)
        commit = builder.new_commit()
        try:
            commit.commit(messages, commit_identifier, snapshot_properties=record.to_properties())
        except Exception as err:
            raise CommitError(
                f"table {self.identifier!r}: commit {commit_identifier} of writer {writer_id!r} failed: {err}"
            ) from err
        finally:
            commit.close()
        snapshot = self.find_commit(writer_id, commit_identifier)
        if snapshot is None:
            raise CommitError(
                f"table {self.identifier!r}: commit {commit_identifier} of writer {writer_id!r} "
                "produced no snapshot"
            )
        return snapshot

    def _end_positions(self, log: LogClient | None) -> dict[int, int]:
        """The log's end per partition now, after every committed record: where an
        eventual hybrid read of this snapshot continues. Records of other writers'
        attempts may lie before it; readers catch those up when they commit."""
        previous: dict[int, int] = {}
        for snapshot in self.snapshots(newest_first=True):
            record = LogCommitRecord.from_properties(snapshot.properties)
            if record is not None:
                previous = dict(record.end_positions)
                break
        if log is None:
            return previous
        ends = log.end_positions(list(range(self.log_partitions)))
        return {p: max(previous.get(p, 0), ends.get(p, 0)) for p in sorted({*previous, *ends})}

    def find_commit(self, writer_id: str, commit_identifier: int) -> SnapshotInfo | None:
        """The snapshot in which ``writer_id`` committed ``commit_identifier``, if any."""
        for snapshot in self.snapshots(newest_first=True):
            record = LogCommitRecord.from_properties(snapshot.properties)
            if record is None or record.writer != writer_id:
                continue
            if record.commit_identifier == commit_identifier:
                return snapshot
            if record.commit_identifier < commit_identifier:
                return None  # a writer's identifiers only grow
        return None

    def last_commit_identifier(self, writer_id: str) -> int | None:
        for snapshot in self.snapshots(newest_first=True):
            record = LogCommitRecord.from_properties(snapshot.properties)
            if record is not None and record.writer == writer_id:
                return record.commit_identifier
        return None

    # -- reading ---------------------------------------------------------------

    def snapshots(self, newest_first: bool = False) -> Iterator[SnapshotInfo]:
        latest = self.store.latest_snapshot()
        if latest is None:
            return
        earliest = self.store.earliest_snapshot_id() or 1
        ids = range(latest.id, earliest - 1, -1) if newest_first else range(earliest, latest.id + 1)
        for snapshot_id in ids:
            snapshot = latest if snapshot_id == latest.id else self.store.snapshot(snapshot_id)
            if snapshot is not None:
                yield snapshot

    def rows(self, snapshot_id: int | None = None, buckets: Sequence[int] | None = None) -> pa.Table:
        """The table's rows at a snapshot (default: the latest); ``buckets``: only those buckets'."""
        return self.store.read_rows(snapshot_id, buckets)

    def reader(self, position: Any = None, **options: Any) -> ChangelogReader:
        """A changelog reader. ``options``: ``consistency``, ``scan_mode``,
        ``timestamp_millis`` or option keys (``log.consistency``, ``scan.mode``...).
        ``position``: a saved :attr:`ChangelogReader.position` to resume from."""
        from tablelog.reading import ChangelogReader

        return ChangelogReader(self, position=position, **options)
