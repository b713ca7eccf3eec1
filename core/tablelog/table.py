"""A tablelog table: Paimon table files plus the log, behind one object.

Start here: :func:`create_table`, :func:`open_table`; then ``table.writer()``,
``table.reader()``, ``table.rows()``. Distributed engines use
``table.write_task(...)`` on workers and ``table.commit(...)`` on the driver.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import pyarrow as pa

from tablelog import definition, expiry
from tablelog.commit import committer, compaction, history
from tablelog.commit.compaction import CompactionResult
from tablelog.commit.log_commit import CommitResult, WriteReceipt
from tablelog.errors import OptionError, SchemaChangeError, TableExistsError
from tablelog.formats import record_codec
from tablelog.formats.projection import TOPIC_SUFFIX, check_projection
from tablelog.identity import TABLE_ID_PROPERTY, new_table_id
from tablelog.logs import discovery
from tablelog.options import (
    ChangelogMode,
    GivenOptions,
    TableOptions,
    is_secret,
    split_system_options,
)
from tablelog.records import LogConfig
from tablelog.store import (
    SchemaChange,
    SetOption,
    SnapshotInfo,
    Warehouse,
    paimon_option_keys,
)
from tablelog.table_internals import TableInternals
from tablelog.topic_owners import default_topic, refuse_shared_topic, stream_config

if TYPE_CHECKING:
    from tablelog.expiry import ExpireResult
    from tablelog.logs.pool import LogPool
    from tablelog.options import Consistency, ScanMode
    from tablelog.positions import ReaderPosition
    from tablelog.reading import ChangelogReader
    from tablelog.writing.writer import Writer, WriteTask


def _check(
    given: GivenOptions, systems: Sequence[str] | None = None
) -> tuple[TableOptions, dict[str, str], dict[str, str]]:
    """Validate parsed options; ``systems``: the log systems whose keys are accepted
    (default: :func:`tablelog.logs.discovery.known_names`), e.g. with the table's own, whose
    absence is reported when its log is opened."""
    discovery.learn_declared_secrets(given.keys)
    return given.check(
        log_systems=discovery.known_names() if systems is None else systems,
        passthrough=paimon_option_keys(),
    )


def _given(options: Mapping[str, Any] | GivenOptions | None) -> GivenOptions:
    """The options as parsed by the entry point, or parsed now (this is the entry point)."""
    return options if isinstance(options, GivenOptions) else GivenOptions.parse(options or {})


def create_table(
    warehouse: str,
    identifier: str,
    schema: pa.Schema,
    *,
    primary_key: Sequence[str] = (),
    bucket: int | None = None,
    options: Mapping[str, Any] | GivenOptions | None = None,
    exist_ok: bool = False,
) -> Table:
    """Create a Paimon table in ``warehouse`` with tablelog options.

    Options are the keys of the option table (``log.system``, ``kafka.*``...) and
    Paimon table options (or those already parsed: :class:`~tablelog.options.GivenOptions`).
    Secrets among them are used but never stored: give them again to :func:`open_table`. A
    table that exists (created before, or by another process at the same time) is a
    :class:`~tablelog.errors.TableExistsError`; with ``exist_ok`` it is returned instead, if
    ``schema`` is its schema.
    """
    given = _given(options)
    storage = given.warehouse
    if primary_key:
        given = given.with_argument("primary-key", "primary_key", ",".join(primary_key))
    if bucket is not None:
        given = given.with_argument("bucket", "bucket", str(bucket))
    parsed, system_options, paimon_options = _check(given)
    wh = Warehouse(warehouse, storage)
    if wh.exists(identifier):
        if not exist_ok:
            raise TableExistsError(f"table {identifier!r} already exists in warehouse {wh.path!r}")
        return _existing_table(wh, identifier, schema, given)
    definition.check_columns(schema)
    definition.check_column_types(schema)
    definition.check_paimon_options(paimon_options, schema, parsed.primary_key)
    check_projection(parsed, schema, parsed.primary_key)
    if parsed.log_system_partitions is not None and parsed.log_system_partitions < parsed.bucket:
        raise OptionError(
            f"log.system.partitions={parsed.log_system_partitions} is fewer than bucket={parsed.bucket}; "
            "bucket b is written to partition b, so the topic needs at least one partition per bucket"
        )
    # Check the log system and the data types now, before a table exists.
    if parsed.log_enabled:
        _check_system_options(parsed, system_options)
    record_codec(schema, tuple(parsed.primary_key), parsed.log_format)
    if parsed.log_enabled:
        system_options = {**definition.defining_defaults(parsed.log_system, system_options), **system_options}
    stored = {
        **parsed.to_properties(),
        **{k: v for k, v in system_options.items() if not is_secret(k)},
        **paimon_options,
        TABLE_ID_PROPERTY: new_table_id(),
    }
    if parsed.log_enabled:
        topic = default_topic(identifier, parsed.log_system, system_options)
        refuse_shared_topic(wh, identifier, parsed.log_system, system_options, topic)
        _register_topic(wh, identifier, parsed, system_options, topic, create=parsed.log_system_auto_register)
    try:
        files = wh.create(identifier, schema, tuple(parsed.primary_key), parsed.bucket, stored)
    except TableExistsError:  # another process created it since the check above
        if not exist_ok:
            raise
        return _existing_table(wh, identifier, schema, given)
    return Table(TableInternals(wh, files, parsed, system_options))


def _existing_table(wh: Warehouse, identifier: str, schema: pa.Schema, given: GivenOptions) -> Table:
    """The table ``create_table(..., exist_ok=True)`` found, if ``schema`` is its schema."""
    existing = _open(wh, identifier, given)
    definition.check_same_schema(identifier, existing.schema, schema)
    return existing


def _register_topic(
    wh: Warehouse, identifier: str, options: TableOptions, system_options: dict[str, str], topic: str,
    *, create: bool,
) -> None:
    """Open the log, which validates its options (topic name...), and with ``create``
    create the table's topic now: a wrong option or address fails before the table
    exists, and readers can start before the first write."""
    system = options.log_system
    config = LogConfig(
        system=system,
        table=identifier,
        topic=topic,
        partitions=options.log_system_partitions or options.bucket,
        auto_register=True,
        options=split_system_options(system, system_options),
        warehouse=wh.path,
    )
    system_plugin = discovery.load_log_system(system)
    with system_plugin.open(config) as log:
        if create:
            log.ensure_topic()
    if create and options.log_arrow_projection:
        with system_plugin.open(stream_config(config, TOPIC_SUFFIX)) as log:
            log.ensure_topic()


def open_table(
    warehouse: str, identifier: str, options: Mapping[str, Any] | GivenOptions | None = None
) -> Table:
    """Open an existing table. ``options`` add runtime options (secrets, client settings,
    time-outs, reader defaults); options that define the table (``log.format``, the
    topic, ``bucket``, Paimon's file options, ...) may be repeated but not changed
    (:mod:`tablelog.definition`): a different value is an ``OptionError``. An engine
    that opens the table again and again passes them parsed once:
    :class:`~tablelog.options.GivenOptions`."""
    given = _given(options)
    return _open(Warehouse(warehouse, given.warehouse), identifier, given)


def _open(wh: Warehouse, identifier: str, given: GivenOptions) -> Table:
    store = wh.open(identifier)
    table_keys = {"primary-key", "bucket"}
    stored = GivenOptions.read(_tablelog_keys({k: v for k, v in store.properties.items() if k not in table_keys}))
    systems = discovery.known_names()
    table_options, table_system_options, _ = _check(stored, systems)
    table_options = attrs.evolve(table_options, primary_key=store.primary_key, bucket=store.bucket)
    given_options, given_system_options, given_paimon_options = _check(given, [*systems, table_options.log_system])
    definition.check_same_definition(
        store, table_options, definition.system_definition(identifier, table_options.log_system, table_system_options),
        given.keys, given_options, given_system_options, given_paimon_options,
    )
    # The given runtime options over the stored ones ("Log.Consistency" overrides "log.consistency").
    parsed, system_options, _ = _check(given.without(table_keys).over(stored), systems)
    parsed = attrs.evolve(parsed, primary_key=store.primary_key, bucket=store.bucket)
    return Table(TableInternals(wh, store, parsed, system_options))


def _tablelog_keys(properties: Mapping[str, str]) -> dict[str, str]:
    """The stored properties that are tablelog's (not Paimon's own)."""
    ours = {f.metadata["key"] for f in attrs.fields(TableOptions)}
    prefixes = tuple(n + "." for n in discovery.known_names())
    return {k: v for k, v in properties.items() if k in ours or k.startswith(prefixes)}


def _check_system_options(options: TableOptions, system_options: Mapping[str, str]) -> None:
    system = discovery.load_log_system(options.log_system)
    for spec in system.option_specs():
        if spec.required and spec.key not in system_options:
            raise OptionError(
                f"log.system={options.log_system!r} needs option {spec.key!r}: {spec.doc}"
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
        its own (see docs/schema-evolution.md)."""
        from tablelog.schema_rules import check_changes

        set_options: dict[str, str] = {}
        for change in changes:
            if isinstance(change, SetOption):
                if is_secret(change.key):
                    raise SchemaChangeError(f"table {self.identifier!r}: option {change.key!r} is a secret; "
                                            "secrets are never stored in a table; nothing was changed")
                _, _, paimon_options = _check(GivenOptions.read({change.key: change.value}))  # unknown keys, bad values
                set_options.update(paimon_options)
        # together: one alter may set file.format and a file.compression only it allows
        files = self._internals.files
        definition.check_paimon_options(set_options, self.schema, self.primary_key, files.properties)
        with files.commit_lock():
            latest = self.warehouse.open(self.identifier)
            check_changes(self.identifier, latest.schema, latest.primary_key, latest.bucket_keys, changes,
                          projected=self.options.log_arrow_projection)
            try:
                schema_id = latest.alter(list(changes))
            except Exception as err:  # pypaimon's own refusal (its RuntimeError wraps a ValueError)
                raise SchemaChangeError(
                    f"table {self.identifier!r}: Paimon refused the alter: {err}; nothing was changed"
                ) from err
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
        from tablelog.writing.writer import Writer

        return Writer(self._internals, writer_id)

    def write_task(
        self, writer_id: str, commit_identifier: int, task: str = "0", *, log_pool: LogPool | None = None
    ) -> WriteTask:
        """One write attempt; ``log_pool`` lends it an open log connection (see
        :mod:`tablelog.logs.pool`), for processes that run many short tasks."""
        from tablelog.writing.writer import WriteTask

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
        return committer.commit(self._internals, writer_id, commit_identifier, receipts, log_pool)

    def find_commit(self, writer_id: str, commit_identifier: int) -> SnapshotInfo | None:
        """The snapshot in which ``writer_id`` committed ``commit_identifier``, if any."""
        return history.find_commit(self._internals.files, writer_id, commit_identifier)

    def last_commit_identifier(self, writer_id: str) -> int | None:
        """The newest commit identifier ``writer_id`` committed (None: none)."""
        return history.last_commit_identifier(self._internals.files, writer_id)

    def compact(self, buckets: Sequence[int] | None = None) -> CompactionResult:
        """Rewrite each bucket (of ``buckets``, default all) that has more than one sorted
        run into one, in one ``COMPACT`` snapshot; the rows do not change and log readers
        pass over it. Commits do this on their own past ``num-sorted-run.compaction-trigger``."""
        return compaction.compact(self._internals, buckets)

    def expire_snapshots(self, *, dry_run: bool = False, now_millis: int | None = None) -> ExpireResult:
        """Expire old snapshots and the files only they reference, as the table's options
        say (``snapshot.num-retained.*``, ``snapshot.time-retained``, consumers); commits
        run it too. ``dry_run``: report what would go, remove nothing (:mod:`tablelog.expiry`)."""
        return expiry.expire_snapshots(self._internals, dry_run=dry_run, now_millis=now_millis)

    # -- reading ---------------------------------------------------------------

    def snapshots(self, newest_first: bool = False) -> Iterator[SnapshotInfo]:
        return self._internals.files.snapshots(newest_first)

    def rows(self, snapshot_id: int | None = None, buckets: Sequence[int] | None = None) -> pa.Table:
        """The table's rows at a snapshot (default: the latest); ``buckets``: only those buckets'."""
        return self._internals.rows(snapshot_id, buckets)

    def reader(
        self,
        position: ReaderPosition | str | Mapping[str, Any] | None = None,
        *,
        consistency: str | Consistency | None = None,
        scan_mode: str | ScanMode | None = None,
        timestamp_millis: int | None = None,
        consumer_id: str | None = None,
        columns: Sequence[str] | None = None,
        partitions: Iterable[int] | None = None,
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
          the buckets with those numbers).
        - ``options``: any other read option by its key (``log.foreign-records``,
          ``log.reader.pause-gc``, …; the keyword arguments above win).
        - ``until_snapshot``: a transactional reader stops after this snapshot;
          ``until_positions``: an eventual reader stops before these log positions
          (partition → exclusive end): bounded reads, such as one Spark micro-batch.
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
            consumer_id=consumer_id, columns=columns, partitions=partitions, options=options,
            until_snapshot=until_snapshot, until_positions=until_positions, schema_id=schema_id,
            changes_from_table=changes_from_table, split_partitions=split_partitions,
        )
