"""One Paimon table: its schema, properties, snapshots, rows, bucket routing, and the
writes and commits of its data files (:mod:`tablelog.store.writes`)."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import attrs
import pyarrow as pa

from tablelog.store.compaction import TableCompactions
from tablelog.store.schema import KIND_FIELD
from tablelog.store.writes import TableWrite, abort_files, commit_files


@attrs.frozen
class SnapshotInfo:
    id: int
    time_millis: int
    commit_user: str
    commit_identifier: int
    commit_kind: str
    total_record_count: int
    properties: Mapping[str, str]


def _info(snapshot: Any) -> SnapshotInfo:
    return SnapshotInfo(
        id=snapshot.id,
        time_millis=snapshot.time_millis,
        commit_user=snapshot.commit_user,
        commit_identifier=snapshot.commit_identifier,
        commit_kind=str(snapshot.commit_kind),
        total_record_count=snapshot.total_record_count or 0,
        properties=dict(snapshot.properties or {}),
    )


@attrs.define
class PaimonTable:
    """One Paimon table: schema, snapshots, rows at a snapshot."""

    identifier: str
    paimon: Any  # pypaimon FileStoreTable
    #: The boto3 client of an object-store warehouse (None: a local one, committing under a lock).
    s3_client: Any = None

    @property
    def primary_key(self) -> tuple[str, ...]:
        return tuple(self.paimon.table_schema.primary_keys or ())

    @property
    def properties(self) -> dict[str, str]:
        return dict(self.paimon.options.options.to_map())

    @property
    def bucket(self) -> int:
        return int(self.properties.get("bucket", "1"))

    @property
    def schema(self) -> pa.Schema:
        """The user-visible schema (without the row-kind column)."""
        from pypaimon.schema.data_types import PyarrowFieldParser

        full = PyarrowFieldParser.from_paimon_schema(self.paimon.table_schema.fields)
        return pa.schema([f for f in full if f.name != KIND_FIELD])

    @property
    def has_kind_field(self) -> bool:
        return self.properties.get("rowkind.field") == KIND_FIELD

    @property
    def path(self) -> str:
        return str(self.paimon.table_path)

    def first_schema_text(self) -> str:
        """The text of the table's oldest schema file (``schema-0`` unless expired):
        written once when the table was created, never rewritten."""
        manager = self.paimon.schema_manager
        first = min(manager._list_versioned_files())
        return str(self.paimon.file_io.read_file_utf8(manager._to_schema_path(first)))

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
        fd = os.open(os.path.join(self.path, ".tablelog-commit.lock"), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    # -- snapshots -----------------------------------------------------------

    def latest_snapshot(self) -> SnapshotInfo | None:
        snapshot = self.paimon.snapshot_manager().get_latest_snapshot()
        return None if snapshot is None else _info(snapshot)

    def snapshot(self, snapshot_id: int) -> SnapshotInfo | None:
        try:
            snapshot = self.paimon.snapshot_manager().get_snapshot_by_id(snapshot_id)
        except FileNotFoundError:
            return None
        return None if snapshot is None else _info(snapshot)

    def earliest_snapshot_id(self) -> int | None:
        if self.paimon.snapshot_manager().get_latest_snapshot() is None:
            return None  # pypaimon raises rather than answer "none" for an empty table
        return self._earliest_id_of_non_empty()

    def _earliest_id_of_non_empty(self) -> int | None:
        """The earliest snapshot's id, for a caller that has seen a latest snapshot."""
        snapshot = self.paimon.snapshot_manager().try_get_earliest_snapshot()
        return None if snapshot is None else int(snapshot.id)

    def snapshot_at_or_before(self, millis: int) -> SnapshotInfo | None:
        snapshot = self.paimon.snapshot_manager().earlier_or_equal_time_mills(millis)
        return None if snapshot is None else _info(snapshot)

    def snapshots(
        self, newest_first: bool = False, *, after: int = 0, upto: int | None = None
    ) -> Iterator[SnapshotInfo]:
        """The snapshots the table keeps, oldest first (or newest first); with ``after`` and
        ``upto``, only those with ``after < id <= upto``."""
        latest = self.latest_snapshot()
        if latest is None:
            return
        first = max(self._earliest_id_of_non_empty() or 1, after + 1)
        last = latest.id if upto is None else min(upto, latest.id)
        ids = range(last, first - 1, -1) if newest_first else range(first, last + 1)
        for snapshot_id in ids:
            snapshot = latest if snapshot_id == latest.id else self.snapshot(snapshot_id)
            if snapshot is not None:
                yield snapshot

    # -- writes and commits of data files ------------------------------------

    def new_write(self) -> TableWrite:
        """A write of data files, to commit later (:meth:`commit`) or abort."""
        return TableWrite(self.identifier, self.paimon)

    def commit(
        self, messages: Sequence[Any], *, commit_user: str, commit_identifier: int, properties: Mapping[str, str]
    ) -> None:
        """Commit the prepared data files ``messages`` as one snapshot of ``commit_user``'s
        ``commit_identifier``, with ``properties`` in the snapshot."""
        commit_files(self.paimon, messages, commit_user, commit_identifier, properties)

    def try_commit(
        self, messages: Sequence[Any], *, commit_user: str, commit_identifier: int,
        properties: Mapping[str, str], snapshot_id: int,
    ) -> bool:
        """Object-store warehouse: commit ``messages`` as snapshot ``snapshot_id`` if no
        other committer created it first. False: another did (or pypaimon found a newer
        snapshot than ``snapshot_id - 1``); an exception: the outcome is unknown. Either
        way the caller decides by reading the snapshots again."""
        from tablelog.store.s3 import ConditionalSnapshotCommit

        conditional = ConditionalSnapshotCommit(self.paimon.snapshot_manager(), self.s3_client, snapshot_id)
        try:
            commit_files(self.paimon, messages, commit_user, commit_identifier, properties, conditional)
        except Exception:
            if not conditional.attempted:
                raise  # the snapshot was never offered to the store: a plain failure
            # Offered: created or not, an error around it leaves the answer to the snapshots.
            return conditional.created
        return conditional.created

    @staticmethod
    def written_buckets(messages: Sequence[Any]) -> list[int]:
        """The buckets the prepared data files ``messages`` add files to."""
        return sorted({int(m.bucket) for m in messages if m.new_files})

    def abort(self, messages: Sequence[Any]) -> None:
        """Delete the prepared data files ``messages``, which no snapshot will reference."""
        abort_files(self.paimon, messages)

    # -- compaction (tablelog.commit.compaction decides when) ------------------

    def compactions(self) -> TableCompactions:
        """This table's compaction operations (:mod:`tablelog.store.compaction`)."""
        return TableCompactions(self.paimon, self.s3_client)

    @property
    def schema_id(self) -> int:
        """The id of the schema this table object reads and writes with."""
        return int(self.paimon.table_schema.id)

    # -- bucket routing ------------------------------------------------------

    @property
    def bucket_keys(self) -> tuple[str, ...]:
        """The columns whose hash chooses a row's bucket."""
        return tuple(self.paimon.table_schema.bucket_keys)

    def bucket_rows(self, data: pa.Table) -> list[tuple[int, list[int]]]:
        """Row indices per bucket (buckets ascending, rows in input order), as Paimon's own
        row-key extractor assigns them: right for every bucket-key type."""
        extractor = self.paimon.create_row_key_extractor()
        groups: dict[int, list[int]] = {}
        offset = 0
        for batch in data.to_batches():
            for _partition, bucket, indices in extractor.extract_partition_bucket_groups(batch):
                rows = range(batch.num_rows) if indices is None else indices.to_pylist()
                groups.setdefault(int(bucket), []).extend(offset + i for i in rows)
            offset += batch.num_rows
        for rows in groups.values():
            rows.sort()
        return sorted(groups.items())

    # -- rows ----------------------------------------------------------------

    def read_rows(self, snapshot_id: int | None = None, buckets: Iterable[int] | None = None) -> pa.Table:
        """Every row of the table at ``snapshot_id`` (default latest), without the kind column;
        with ``buckets``, only the rows of those buckets."""
        if snapshot_id is None:
            latest = self.latest_snapshot()
            if latest is None:
                return self.schema.empty_table()
            snapshot_id = latest.id
        table = self.paimon.copy({"scan.snapshot-id": str(snapshot_id)})
        builder = table.new_read_builder()
        splits = builder.new_scan().plan().splits()
        if buckets is not None:
            wanted = set(buckets)
            splits = [s for s in splits if s.bucket in wanted]
        result = builder.new_read().to_arrow(splits)
        if result is None:
            return self.schema.empty_table()
        if KIND_FIELD in result.schema.names:
            result = result.drop_columns([KIND_FIELD])
        return result.cast(self.schema)
