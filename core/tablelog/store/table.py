"""One Paimon table: its schema, properties, snapshots, rows, bucket routing, and the
writes and commits of its data files (:mod:`tablelog.store.writes`).

The schema, properties and snapshots are read with pypaimon's file IO, schema manager
and snapshot manager alone; pypaimon's table object (:attr:`PaimonTable.paimon`) is
built on the first read or write of rows. Importing it imports ``pyarrow.dataset`` and
pandas, seconds in a fresh process: a process that only follows snapshots and the log
(Spark's planner of a streaming read, its tasks, ``describe``) never pays them.

Long because: :class:`PaimonTable` implements the whole of
:class:`~tablelog.store.files.TableFiles`, the one interface the layers above use; each
method is a short delegation to the store module that does the work."""

from __future__ import annotations

import contextlib
import datetime
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

import attrs
import pyarrow as pa

from tablelog.errors import CommitOutcomeUnknown
from tablelog.store import snapshots
from tablelog.store.bucket_routing import BucketRouting, bucket_routing
from tablelog.store.compaction import TableCompactions
from tablelog.store.consumers import Consumers
from tablelog.store.data_files import DataFiles
from tablelog.store.deltas import overwrite_delta, read_delta
from tablelog.store.dynamic_index import reconcile_hash_indexes
from tablelog.store.evolution import SchemaMapping, SchemaVersion
from tablelog.store.expiry import SnapshotDeletion
from tablelog.store.key_hash import key_hash_rows
from tablelog.store.key_records import key_record_table, key_records
from tablelog.store.leases import Leases
from tablelog.store.locks import hold_lock, try_lock
from tablelog.store.lookup_cache import LookupCache, cache_directory
from tablelog.store.merged_reads import parsed_merge_options
from tablelog.store.metadata import MainBranchSchemas, MainBranchSnapshots
from tablelog.store.partitions import list_partitions
from tablelog.store.pypaimon_internals import schema_ids, schema_path
from tablelog.store.row_count import count_rows, read_snapshot_rows
from tablelog.store.schema import KIND_FIELD
from tablelog.store.schema_changes import SchemaChange, commit_changes
from tablelog.store.schema_files import schema_files
from tablelog.store.snapshots import SnapshotInfo
from tablelog.store.split_reads import ScanSplit, plan_splits, read_split
from tablelog.store.writes import TableWrite, abort_files, commit_files

if TYPE_CHECKING:
    from tablelog.merging import KeyValue, MergeOptions


def _version(table_schema: Any) -> SchemaVersion:
    from pypaimon.schema.data_types import PyarrowFieldParser

    fields = [f for f in table_schema.fields if f.name != KIND_FIELD]
    schema = pa.schema([PyarrowFieldParser.from_paimon_field(f) for f in fields])
    return SchemaVersion(int(table_schema.id), tuple(int(f.id) for f in fields), schema)


@attrs.define
class PaimonTable:
    """One Paimon table: schema, snapshots, rows at a snapshot."""

    identifier: str
    #: pypaimon's file IO of the warehouse.
    file_io: Any
    #: The table's directory (a local path or an ``s3://`` URL).
    path: str
    #: The pypaimon ``TableSchema`` this object reads and writes with.
    table_schema: Any
    #: Builds pypaimon's ``FileStoreTable`` of ``table_schema`` (called once, when needed).
    _data_table: Callable[[Any], Any] = attrs.field(repr=False)
    #: The boto3 client of an object-store warehouse (None: a local one, committing under a lock).
    s3_client: Any = None
    #: How long a write attempt's data files may take (``s3.write-timeout``; None: no limit, a local warehouse).
    write_timeout_s: float | None = None
    _paimon: Any = attrs.field(default=None, init=False, repr=False, eq=False)
    _schemas: Any = attrs.field(init=False, repr=False, eq=False)
    _snapshots: Any = attrs.field(init=False, repr=False, eq=False)
    _versions: dict[int, SchemaVersion] = attrs.field(factory=dict, init=False, repr=False, eq=False)
    #: Where lookups keep decoded data files (None: not told yet; each lookup decodes them).
    _lookup_cache: LookupCache | None = attrs.field(default=None, init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        self._schemas = MainBranchSchemas(self.file_io, self.path)
        self._snapshots = MainBranchSnapshots(self.file_io, self.path)

    @property
    def paimon(self) -> Any:
        """pypaimon's ``FileStoreTable``, for reads and writes of rows and data files."""
        if self._paimon is None:
            self._paimon = self._data_table(self.table_schema)
        return self._paimon

    @property
    def primary_key(self) -> tuple[str, ...]:
        return tuple(self.table_schema.primary_keys or ())

    @property
    def partition_keys(self) -> tuple[str, ...]:
        """The table's partition columns (none: an unpartitioned table)."""
        return tuple(self.table_schema.partition_keys or ())

    @property
    def properties(self) -> dict[str, str]:
        return {str(k): str(v) for k, v in (self.table_schema.options or {}).items()}

    @property
    def bucket(self) -> int:
        """The number of buckets; ``-1``: dynamic buckets (Paimon's default, so a table
        created without the option, by pypaimon or an engine, has them)."""
        return int(self.properties.get("bucket", "-1"))

    @property
    def schema(self) -> pa.Schema:
        """The user-visible schema (without the row-kind column)."""
        return self.version.schema

    @property
    def schema_id(self) -> int:
        """The id of the schema this object reads and writes with (Paimon's ``schema-<id>``)."""
        return int(self.table_schema.id)

    @property
    def version(self) -> SchemaVersion:
        """This object's schema with its field ids."""
        return self.schema_version(self.schema_id)

    def schema_version(self, schema_id: int) -> SchemaVersion:
        """The table's schema ``schema_id`` (a schema is never rewritten: cached for good)."""
        cached = self._versions.get(schema_id)
        if cached is None:
            stored = self.table_schema if schema_id == self.schema_id else self._schemas.get_schema(schema_id)
            if stored is None:
                raise LookupError(f"table {self.identifier!r} has no schema {schema_id}")
            cached = self._versions[schema_id] = _version(stored)
        return cached

    def mapping(self, source_id: int, target_id: int) -> SchemaMapping:
        """From rows of schema ``source_id`` to rows of schema ``target_id``."""
        return SchemaMapping(self.schema_version(source_id), self.schema_version(target_id))

    def latest_schema_id(self) -> int:
        """The id of the table's latest schema (a listing of its schema files)."""
        return max(schema_ids(self._schemas), default=self.schema_id)

    def has_newer_schema(self) -> bool:
        """Whether the table was altered since this object was opened. Schema ids are
        consecutive, so this is one look-up of the next schema file, not a listing."""
        return bool(self.file_io.exists(schema_path(self._schemas, self.schema_id + 1)))

    def alter(self, changes: list[SchemaChange]) -> int:
        """Commit ``changes`` as the table's next schema (checked by the caller); returns
        its id. This object keeps its schema: open the table again to use the new one."""
        return commit_changes(self.paimon, schema_files(self.file_io, self.path, self.s3_client), changes)

    @property
    def merge_options(self) -> MergeOptions | None:
        """The table's merge when its log carries the merged changelog (every merge engine
        but deduplicate, or ``changelog-producer = lookup``); None otherwise."""
        parsed = self._merge()
        return parsed if parsed is not None and parsed.merged_changelog else None

    def _merge(self) -> MergeOptions | None:
        """The table's parsed merge options (None: no primary key); per schema, for good."""
        return parsed_merge_options(self.properties, self.schema, self.primary_key, self.partition_keys)

    def key_records(
        self, snapshot_id: int | None, keys: pa.Table, extra_files: Sequence[Any] = (),
    ) -> dict[tuple[Any, ...], list[KeyValue]]:
        """Every record of each key of ``keys`` (the primary-key columns) in the files of
        ``snapshot_id`` (None: none), level 0 included, and in ``extra_files`` (prepared,
        uncommitted commit messages), in this object's schema, each key's sorted in
        Paimon's merge order; keys without a record are absent (:mod:`.key_records`)."""
        options = self._merge()
        if options is None:
            raise ValueError(f"table {self.identifier!r} has no primary key: it has no records of keys")
        return key_records(self.paimon, options, snapshot_id, keys, extra_files, self._lookup_cache)

    def key_record_table(
        self, snapshot_id: int | None, keys: pa.Table, buckets: Collection[int] | None = None,
    ) -> pa.Table:
        """:meth:`key_records`' records as one Arrow table (:func:`.key_records.key_record_table`)."""
        options = self._merge()
        if options is None:
            raise ValueError(f"table {self.identifier!r} has no primary key: it has no records of keys")
        return key_record_table(self.paimon, options, snapshot_id, keys, cache=self._lookup_cache, buckets=buckets)

    def use_lookup_cache(self, max_disk_size: int | None, retention: datetime.timedelta) -> None:
        """Keep the data files that lookups decode in the machine's lookup cache
        (:mod:`.lookup_cache`), bounded by ``lookup.cache-max-disk-size`` (None: unbounded)
        and ``lookup.cache-file-retention``."""
        self._lookup_cache = LookupCache(cache_directory(), max_disk_size, retention.total_seconds())

    @property
    def has_kind_field(self) -> bool:
        return self.properties.get("rowkind.field") == KIND_FIELD

    def data_files(self) -> DataFiles:
        """The table's data files, with the schemas they were written with."""
        return DataFiles(self.paimon, self._schemas)

    def first_schema_text(self) -> str:
        """The text of the table's oldest schema file (``schema-0`` unless expired):
        written once when the table was created, never rewritten."""
        first = min(schema_ids(self._schemas))
        return str(self.file_io.read_file_utf8(schema_path(self._schemas, first)))

    @property
    def on_object_store(self) -> bool:
        """Whether commits race without a lock (conditional snapshot creation, see
        :meth:`try_commit`) rather than under :meth:`commit_lock`."""
        return self.s3_client is not None

    @contextlib.contextmanager
    def commit_lock(self) -> Iterator[None]:
        """An exclusive lock on this table's commits, across processes (local warehouse;
        on an object store, nothing: the snapshot file is created conditionally)."""
        if self.on_object_store:
            yield
            return
        with hold_lock(self.path, ".tablelog-commit.lock"):
            yield

    def expire_lock(self) -> AbstractContextManager[bool]:
        """Whether this process may expire snapshots now: True unless another process
        holds the table's expiry lock (local warehouse; on an object store always True:
        two expiries of one range delete the same files, which Paimon allows too)."""
        return contextlib.nullcontext(True) if self.on_object_store else try_lock(self.path, ".tablelog-expire.lock")

    def relay_lock(self) -> AbstractContextManager[bool]:
        """Whether this process may relay the table's foreign snapshots (:mod:`tablelog.relay`):
        True unless another process holds the table's relay lock (local warehouse; on an
        object store always True: there one relay per table is the operator's to ensure)."""
        return contextlib.nullcontext(True) if self.on_object_store else try_lock(self.path, ".tablelog-relay.lock")

    def snapshot_deletion(self) -> SnapshotDeletion:
        """Removes expired snapshots and the files only they reference (:mod:`tablelog.store.expiry`)."""
        return SnapshotDeletion(self.paimon, local=not self.on_object_store, s3_client=self.s3_client)

    def consumers(self) -> Consumers:
        """The table's Paimon consumers (:mod:`tablelog.store.consumers`)."""
        return Consumers(self.file_io, self.path)

    def leases(self) -> Leases:
        """The table's writer leases on the log (:mod:`tablelog.store.leases`)."""
        return Leases(self.file_io, self.path, local=not self.on_object_store)

    # -- snapshots -----------------------------------------------------------

    def latest_snapshot(self) -> SnapshotInfo | None:
        return snapshots.latest_snapshot(self._snapshots, self.snapshot)

    def snapshot(self, snapshot_id: int) -> SnapshotInfo | None:
        return snapshots.snapshot(self._snapshots, snapshot_id)

    def earliest_snapshot_id(self, *, latest_known: bool = False) -> int | None:
        """The earliest snapshot's id (None: no snapshot). ``latest_known``: the caller has
        seen a snapshot, so the latest is not read to learn the table is not empty."""
        if not latest_known and self.latest_snapshot() is None:
            return None  # pypaimon raises rather than answer "none" for an empty table
        return self._earliest_id_of_non_empty()

    def _earliest_id_of_non_empty(self) -> int | None:
        """The earliest snapshot's id, for a caller that has seen a latest snapshot
        (:func:`tablelog.store.snapshots.earliest_id_of_non_empty`)."""
        return snapshots.earliest_id_of_non_empty(self._snapshots, self.latest_snapshot)

    def snapshot_at_or_before(self, millis: int) -> SnapshotInfo | None:
        return snapshots.snapshot_at_or_before(self._snapshots, millis)

    def snapshots(
        self, newest_first: bool = False, *, after: int = 0, upto: int | None = None,
        latest: SnapshotInfo | None = None,
    ) -> Iterator[SnapshotInfo]:
        """The snapshots the table keeps, oldest first (or newest first); with ``after`` and
        ``upto``, only those with ``after < id <= upto``; up to ``latest`` when the caller
        read the latest snapshot already (None: it is read here)."""
        return snapshots.snapshot_range(self._snapshots, latest or self.latest_snapshot(), newest_first, after, upto)

    # -- writes and commits of data files ------------------------------------

    def new_write(self) -> TableWrite:
        """A write of data files, to commit later (:meth:`commit`) or abort."""
        merged = self.merge_options
        return TableWrite(self.identifier, self.paimon, merged_changelog=merged is not None,
                          on_file=self._kept_for_lookups(), timeout_s=self.write_timeout_s, location=self.path)

    def _kept_for_lookups(self) -> Callable[[tuple[Any, ...], int, Any, Any], None] | None:
        """What tells the lookup cache of each data file this process writes (a merge-engine
        table's, with the cache on): the next lookup decodes none of it."""
        merged = self.merge_options
        cache = self._lookup_cache
        if merged is None or cache is None:
            return None
        paimon = self.paimon

        def keep(partition: tuple[Any, ...], bucket: int, file: Any, rows: Any) -> None:
            cache.put(paimon, merged, partition, bucket, file, rows)

        return keep

    def bucket_routing(self, most: int) -> BucketRouting | None:
        """How an attempt's rows go to up to ``most`` writes by bucket
        (:mod:`tablelog.store.bucket_routing`); None: to one write, which computes each
        row's bucket (as for a merged-changelog table's, written at once)."""
        if self.merge_options is not None:
            return None
        return bucket_routing(self.table_schema, self.schema, self.bucket, most)

    def commit(
        self, messages: Sequence[Any], *, commit_user: str, commit_identifier: int, properties: Mapping[str, str]
    ) -> None:
        """Commit the prepared data files ``messages`` as one snapshot of ``commit_user``'s
        ``commit_identifier``, with ``properties`` in the snapshot."""
        reconcile_hash_indexes(self.paimon, messages, self.paimon.snapshot_manager().get_latest_snapshot)
        commit_files(self.paimon, messages, commit_user, commit_identifier, properties)

    def try_commit(
        self, messages: Sequence[Any], *, commit_user: str, commit_identifier: int,
        properties: Mapping[str, str], snapshot_id: int,
    ) -> bool:
        """Object-store warehouse: commit ``messages`` as snapshot ``snapshot_id`` if no
        other committer created it first. False: another did (or pypaimon found a newer
        snapshot than ``snapshot_id - 1``); :class:`~tablelog.errors.CommitOutcomeUnknown`:
        the snapshot was offered and no answer came back. Either way the caller decides by
        reading the snapshots again."""
        from tablelog.store.s3 import ConditionalSnapshotCommit

        conditional = ConditionalSnapshotCommit(self._snapshots, self.s3_client, snapshot_id)
        reconcile_hash_indexes(
            self.paimon, messages, lambda: self.paimon.snapshot_manager().get_snapshot_by_id(snapshot_id - 1)
        )
        try:
            commit_files(self.paimon, messages, commit_user, commit_identifier, properties, conditional)
        except Exception as err:
            if not conditional.attempted:
                raise  # the snapshot was never offered to the store: a plain failure
            if conditional.created:
                return True  # what failed after the snapshot was created is not the commit
            # Offered and no answer: created or not, the snapshots will tell.
            raise CommitOutcomeUnknown(f"snapshot {snapshot_id} was sent and no answer came back: {err}") from err
        return conditional.created

    @staticmethod
    def written_pairs(messages: Sequence[Any]) -> dict[tuple[tuple[Any, ...], int], int]:
        """The (partition values, bucket) pairs the prepared data files ``messages`` add
        files to, each with how many files (each one a new sorted run)."""
        pairs: dict[tuple[tuple[Any, ...], int], int] = {}
        for m in messages:
            if getattr(m, "new_files", None):
                pair = (tuple(m.partition), int(m.bucket))
                pairs[pair] = pairs.get(pair, 0) + len(m.new_files)
        return pairs

    # -- table partitions ----------------------------------------------------

    def partitions(self, snapshot_id: int) -> list[dict[str, Any]]:
        """The table partitions with files at ``snapshot_id`` (values by partition column)."""
        return list_partitions(self.paimon, snapshot_id)

    def abort(self, messages: Sequence[Any]) -> None:
        """Delete the prepared data files ``messages``, which no snapshot will reference."""
        abort_files(self.paimon, messages)

    def read_delta(
        self, snapshot_id: int, buckets: Iterable[int] | None, schema_id: int | None = None
    ) -> pa.Table | None:
        """The rows snapshot ``snapshot_id`` added to ``buckets`` (None: to every bucket), with
        their row kinds, in schema ``schema_id`` (default this object's;
        :mod:`tablelog.store.deltas`); None when the snapshot has expired. An overwrite's rows
        are those it removed (``-D``) and added (``+I``)."""
        target = self.schema_id if schema_id is None else schema_id
        snapshot = self.snapshot(snapshot_id)
        if snapshot is not None and snapshot.commit_kind == "OVERWRITE":
            if self.snapshot(snapshot_id - 1) is None:
                return None
            wanted = None if buckets is None else list(buckets)
            return overwrite_delta(self.read_rows(snapshot_id - 1, wanted, target),
                                   self.read_rows(snapshot_id, wanted, target))
        return read_delta(self.paimon, snapshot_id, buckets, lambda source: self.mapping(source, target))

    # -- compaction (tablelog.commit.compaction decides when) ------------------

    def compactions(self) -> TableCompactions:
        """This table's compaction operations (:mod:`tablelog.store.compaction`)."""
        return TableCompactions(self.paimon, self.s3_client, on_file=self._kept_for_lookups())

    # -- bucket routing ------------------------------------------------------

    @property
    def bucket_keys(self) -> tuple[str, ...]:
        """The columns whose hash chooses a row's bucket (fixed buckets)."""
        return tuple(self.table_schema.bucket_keys)

    @property
    def log_key(self) -> tuple[str, ...]:
        """The columns whose hash chooses a row's log partition: the bucket key; with
        dynamic buckets and no primary key (Paimon allows no bucket key then), every column."""
        return self.bucket_keys or (tuple(self.schema.names) if self.bucket < 1 else ())

    def key_hash_rows(self, data: pa.Table, modulus: int) -> list[tuple[int, list[int]]]:
        """Row indices per value of Paimon's bucket hash of :attr:`log_key` modulo ``modulus``
        (:func:`tablelog.store.key_hash.key_hash_rows`)."""
        return key_hash_rows(self.table_schema, self.log_key, data, modulus)

    # -- rows ----------------------------------------------------------------

    def count_rows(self, snapshot: SnapshotInfo) -> int:
        """The table's rows at ``snapshot``: its record count without a primary key (each
        record is a row), else a merge read of its files (:mod:`tablelog.store.row_count`)."""
        if not self.primary_key:
            return snapshot.total_record_count
        return count_rows(self.paimon, snapshot.id)

    def read_rows(
        self, snapshot_id: int | None = None, buckets: Iterable[int] | None = None, schema_id: int | None = None,
        *, partitions: Sequence[Mapping[str, Any]] | None = None,
    ) -> pa.Table:
        """Every row of the table at ``snapshot_id`` (default latest), without the kind column,
        in schema ``schema_id`` (default this object's; rows of a snapshot taken under
        another schema are mapped); with ``buckets``, only the rows of those buckets (in
        every table partition); with ``partitions`` (mappings of partition column to
        value), only the files of those table partitions are read."""
        target = self.schema_id if schema_id is None else schema_id
        if snapshot_id is None:
            latest = self.latest_snapshot()
            if latest is None:
                return self.schema_version(target).schema.empty_table()
            snapshot_id = latest.id
        result, snapshot_schema = read_snapshot_rows(self.paimon, snapshot_id, buckets, partitions)
        if result is None:
            return self.schema_version(target).schema.empty_table()
        return self._in_schema(result, snapshot_schema, target)

    def _in_schema(self, rows: pa.Table, source_id: int, target_id: int) -> pa.Table:
        """``rows`` of schema ``source_id`` in schema ``target_id``."""
        if source_id != target_id:
            return self.mapping(source_id, target_id).arrow(rows)
        return rows.cast(self.schema_version(target_id).schema)

    def scan_splits(
        self, snapshot_id: int, target_size: int, partitions: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[ScanSplit]:
        """A full scan of ``snapshot_id`` in splits of about ``target_size`` bytes of data
        files, each read by one task in bounded memory (:mod:`tablelog.store.split_reads`);
        only the files of ``partitions`` (as :meth:`read_rows`'). Reads metadata alone."""
        return plan_splits(self.paimon, snapshot_id, target_size, partitions)

    def read_split(self, split: ScanSplit, schema_id: int | None = None) -> Iterator[pa.Table]:
        """The rows of ``split`` (from :meth:`scan_splits`, of any process) batch by batch,
        without the kind column, in schema ``schema_id`` (default this object's)."""
        target = self.schema_id if schema_id is None else schema_id
        snapshot_schema, batches = read_split(self.paimon, split)
        for rows in batches:
            yield self._in_schema(rows, snapshot_schema, target)
