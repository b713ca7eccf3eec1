"""The table files as the layers above the store see them: one interface.

Everything outside :mod:`tablelog.store` (the table facade, the writer, the readers, the
committer, expiry, the dashboard, Spark) reaches a table's Paimon files through
:class:`TableFiles` alone, never :class:`~tablelog.store.table.PaimonTable` (its one
implementation), so what they depend on is this list, and a test keeps it that way.
"""

from __future__ import annotations

import datetime
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import pyarrow as pa

    from tablelog.merging import KeyValue, MergeOptions
    from tablelog.store.bucket_routing import BucketRouting
    from tablelog.store.compaction import TableCompactions
    from tablelog.store.consumers import Consumers
    from tablelog.store.data_files import DataFiles
    from tablelog.store.evolution import SchemaMapping, SchemaVersion
    from tablelog.store.expiry import SnapshotDeletion
    from tablelog.store.leases import Leases
    from tablelog.store.schema_changes import SchemaChange
    from tablelog.store.snapshots import SnapshotInfo
    from tablelog.store.split_reads import ScanSplit
    from tablelog.store.writes import TableWrite


class TableFiles(Protocol):
    """One Paimon table's files: what it is, its schema versions, its snapshots (whose
    properties carry the log-commit records), its rows and deltas, the commits of data
    files, and the handles of its maintenance (compaction, expiry, consumers, leases)."""

    # -- what the table is -----------------------------------------------------

    @property
    def identifier(self) -> str: ...

    @property
    def path(self) -> str:
        """The table's directory (a local path or an ``s3://`` URL)."""

    @property
    def primary_key(self) -> tuple[str, ...]: ...

    @property
    def partition_keys(self) -> tuple[str, ...]: ...

    @property
    def bucket(self) -> int:
        """The number of buckets; ``-1``: dynamic buckets."""

    @property
    def bucket_keys(self) -> tuple[str, ...]: ...

    @property
    def log_key(self) -> tuple[str, ...]: ...

    @property
    def properties(self) -> dict[str, str]: ...

    @property
    def has_kind_field(self) -> bool: ...

    @property
    def merge_options(self) -> MergeOptions | None:
        """The table's merge when its log carries the merged changelog (every merge engine
        but deduplicate, or ``changelog-producer = lookup``); None otherwise."""

    def data_files(self) -> DataFiles: ...

    @property
    def on_object_store(self) -> bool: ...

    def first_schema_text(self) -> str: ...

    # -- schema versions -------------------------------------------------------

    @property
    def schema(self) -> pa.Schema: ...

    @property
    def schema_id(self) -> int: ...

    def schema_version(self, schema_id: int) -> SchemaVersion: ...

    def mapping(self, source_id: int, target_id: int) -> SchemaMapping: ...

    def latest_schema_id(self) -> int: ...

    def has_newer_schema(self) -> bool: ...

    def alter(self, changes: list[SchemaChange]) -> int: ...

    # -- snapshots -------------------------------------------------------------

    def latest_snapshot(self) -> SnapshotInfo | None: ...

    def snapshot(self, snapshot_id: int) -> SnapshotInfo | None: ...

    def earliest_snapshot_id(self, *, latest_known: bool = False) -> int | None: ...

    def snapshot_at_or_before(self, millis: int) -> SnapshotInfo | None: ...

    def snapshots(
        self, newest_first: bool = False, *, after: int = 0, upto: int | None = None,
        latest: SnapshotInfo | None = None,
    ) -> Iterator[SnapshotInfo]: ...

    # -- rows and deltas -------------------------------------------------------

    def read_rows(
        self, snapshot_id: int | None = None, buckets: Iterable[int] | None = None, schema_id: int | None = None,
        *, partitions: Sequence[Mapping[str, Any]] | None = None,
    ) -> pa.Table: ...

    def read_delta(
        self, snapshot_id: int, buckets: Iterable[int] | None, schema_id: int | None = None
    ) -> pa.Table | None: ...

    def scan_splits(
        self, snapshot_id: int, target_size: int, partitions: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[ScanSplit]:
        """A full scan of ``snapshot_id`` in splits (per table partition and bucket, of
        about ``target_size`` bytes of data files each), every row in exactly one; only
        the files of ``partitions`` (None: all). Plans from the table's metadata alone."""

    def read_split(self, split: ScanSplit, schema_id: int | None = None) -> Iterator[pa.Table]:
        """The rows of ``split`` batch by batch (the memory of a batch and of the files
        merged at once, whatever the bucket's size), without the kind column, in schema
        ``schema_id``."""

    def count_rows(self, snapshot: SnapshotInfo) -> int: ...

    def key_records(
        self, snapshot_id: int | None, keys: pa.Table, extra_files: Sequence[Any] = (),
    ) -> dict[tuple[Any, ...], list[KeyValue]]:
        """Every record, unmerged, of each key of ``keys`` (primary-key columns) at
        ``snapshot_id`` (None: none) in every file, level 0 included, plus those of
        ``extra_files`` (prepared, uncommitted commit messages), in the current schema,
        each key's in merge order; keys without a record are absent."""

    def key_record_table(
        self, snapshot_id: int | None, keys: pa.Table, buckets: Collection[int] | None = None,
    ) -> pa.Table:
        """The records :meth:`key_records` finds at ``snapshot_id``, as one Arrow table:
        the table's columns, ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND`` (Paimon's row-kind
        byte), in no particular order (:func:`tablelog.store.key_records.records_by_key`
        makes them :meth:`key_records`' dict). ``buckets``: the keys all hash to these
        buckets (fixed buckets): only their files are read."""

    def use_lookup_cache(self, max_disk_size: int | None, retention: datetime.timedelta) -> None:
        """Keep the data files lookups decode in the machine's lookup cache, bounded by
        ``lookup.cache-max-disk-size`` (bytes; None: unbounded) and ``lookup.cache-file-retention``."""

    def key_hash_rows(self, data: pa.Table, modulus: int) -> list[tuple[int, list[int]]]: ...

    # -- commits of data files -------------------------------------------------

    def new_write(self) -> TableWrite: ...

    def bucket_routing(self, most: int) -> BucketRouting | None: ...

    def commit_lock(self) -> AbstractContextManager[None]: ...

    def commit(
        self, messages: Sequence[Any], *, commit_user: str, commit_identifier: int, properties: Mapping[str, str]
    ) -> None: ...

    def try_commit(
        self, messages: Sequence[Any], *, commit_user: str, commit_identifier: int,
        properties: Mapping[str, str], snapshot_id: int,
    ) -> bool: ...

    def written_pairs(self, messages: Sequence[Any]) -> dict[tuple[tuple[Any, ...], int], int]:
        """The (partition values, bucket) pairs ``messages`` add files to, and how many each."""

    def partitions(self, snapshot_id: int) -> list[dict[str, Any]]: ...

    def abort(self, messages: Sequence[Any]) -> None: ...

    # -- maintenance -----------------------------------------------------------

    def compactions(self) -> TableCompactions: ...

    def expire_lock(self) -> AbstractContextManager[bool]: ...

    def relay_lock(self) -> AbstractContextManager[bool]: ...

    def snapshot_deletion(self) -> SnapshotDeletion: ...

    def consumers(self) -> Consumers: ...

    def leases(self) -> Leases: ...
