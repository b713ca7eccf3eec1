"""Writing a Paimon table's data files: a :class:`TableWrite` prepares them, the
committer commits them as one snapshot (:func:`commit_files`) or drops them
(:func:`abort_files`)."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from tablelog.records import KIND_BYTES, kind_bytes
from tablelog.store.bucket_routing import Span
from tablelog.store.layout import VALUE_KIND, writes_thin
from tablelog.store.merged_reads import merges_with_tablelog
from tablelog.store.partitions import PartitionDrop, check_unchanged_since
from tablelog.store.pypaimon_internals import (
    use_tablelog_key_value_writer,
    with_commit_user,
    write_native_with_kinds,
    writes_natively,
)

log = logging.getLogger("tablelog.writing.writer")

_TORN_LATEST_HINT = re.compile(r"Snapshot \d+ does not exist\.?")


class TableWrite:
    """The data files of one write attempt, prepared for one commit identifier.

    The Paimon writer is opened on the first write: an attempt that writes nothing costs
    nothing. A primary-key table's files have the layout it declares
    (:mod:`tablelog.store.layout`): a thin table is written by pypaimon-rust's writer
    when pypaimon offers it (by its Python writer leaving the key columns out
    otherwise), a table with key columns by pypaimon's Python writer (the native one
    cannot write them). A primary-key table without tablelog's row-kind column has its
    rows' kinds written to Paimon's ``_VALUE_KIND`` directly. A merge-engine table's
    rows must be key-unique and already folded with its engine (written as they are).
    ``merged_changelog``: the table's log carries its changelog rather than the writes
    (:attr:`tablelog.store.files.TableFiles.merge_options` is set). ``on_file(partition,
    bucket, file meta, rows)``: told of each key-value file pypaimon's Python writer writes.
    ``timeout_s`` and ``location``: how long writing the files may take, and where they go
    (the caller, :mod:`tablelog.writing.files_lane`, gives the attempt up after that).
    """

    def __init__(
        self, identifier: str, paimon: Any, *, merged_changelog: bool = False,
        on_file: Callable[[tuple[Any, ...], int, Any, Any], None] | None = None,
        timeout_s: float | None = None, location: str = "",
    ) -> None:
        #: How long the writing of these files may take (``s3.write-timeout``; None: no limit).
        self.timeout_s = timeout_s
        #: Where the files go (the table's directory), for the error when that time passes.
        self.location = location
        self._identifier = identifier
        self._paimon = paimon  # pypaimon FileStoreTable
        self._merged_changelog = merged_changelog
        self._on_file = on_file
        options = paimon.table_schema.options or {}
        key_value = bool(paimon.table_schema.primary_keys)
        self._thin = key_value and writes_thin(options)
        self._value_kinds = key_value and options.get("rowkind.field") is None
        self._write: Any = None
        self._native = False
        self._wrote = False

    def _open(self) -> None:
        paimon = self._paimon
        key_value = bool(paimon.is_primary_key_table)
        sequence_floor = None
        if merges_with_tablelog(paimon):
            # tablelog's writer gives each key's records already folded with the table's
            # engine: a deduplicate fold of key-unique rows is the identity, and pypaimon
            # then neither refuses the engine's options nor folds the rows again.
            paimon = paimon.copy({"merge-engine": "deduplicate"})
        if key_value and self._merged_changelog:
            # Several writers may write a key between commits (Spark tasks, processes),
            # each from the sequence numbers of the snapshot it started at: their records
            # are ordered by when they were written (the clock, in microseconds), never
            # tied, and the changes they make are computed in that order. pypaimon-rust's
            # writer takes no such start, so pypaimon's Python writer writes.
            paimon = paimon.copy({"write.native.enabled": "false"})
            sequence_floor = time.time_ns() // 1000
        if key_value and not self._thin and paimon.options.native_write_enabled():
            # pypaimon-rust writes thin files only; pypaimon's Python writer writes the keys.
            paimon = paimon.copy({"write.native.enabled": "false"})
        self._write = paimon.new_stream_write_builder().new_write()
        self._native = writes_natively(self._write)
        if key_value and not self._native:
            use_tablelog_key_value_writer(
                self._write, thin=self._thin, value_kinds=self._value_kinds, sequence_floor=sequence_floor,
                on_file=self._on_file)

    def write_arrow(self, data: Any, kinds: Sequence[str] | None = None, spans: Sequence[Span] | None = None) -> None:
        """Write ``data``; ``kinds``: each row's kind (``+I``, ``-U``, ``+U``, ``-D``) for
        a primary-key table without tablelog's row-kind column (None: every row an insert).
        ``spans``: write only these rows of ``data``, each span of one bucket
        (:mod:`tablelog.store.bucket_routing`; None: every row)."""
        if self._write is None:
            self._open()
        try:
            self._write_spans(data, kinds, spans)
        except ValueError as err:
            if self._wrote or not _TORN_LATEST_HINT.fullmatch(str(err).strip()):
                raise
            # pypaimon-rust's writer starts from the snapshot the table's LATEST hint names,
            # and that file is rewritten in place by every commit: read while another
            # process commits, it can name a snapshot that never existed. Nothing is
            # written yet: start over once.
            log.warning("table %r: %s; opening the Paimon writer again", self._identifier, err)
            self._write.close()
            self._open()
            self._write_spans(data, kinds, spans)
        self._wrote = True

    def _write_spans(self, data: Any, kinds: Sequence[str] | None, spans: Sequence[Span] | None) -> None:
        # Every batch carries the kind column: pypaimon-rust's writer takes the kinds of all
        # its batches from it only when its first batch has it.
        if spans is None:
            self._write_rows(data, _kind_codes(data.num_rows, kinds) if self._value_kinds else None, None)
            return
        # pypaimon-rust's writer takes the rows of one table partition with their bucket given;
        # otherwise the writer computes the buckets, of the rows of all the spans at once.
        if not self._native or self._paimon.partition_keys:
            spans = [(-1, spans[0][1], spans[-1][2])] if spans else []
        for bucket, start, stop in spans:
            codes = _kind_codes(stop - start, kinds and kinds[start:stop]) if self._value_kinds else None
            self._write_rows(data.slice(start, stop - start), codes, None if bucket < 0 else bucket)

    def _write_rows(self, data: Any, codes: pa.Array | None, bucket: int | None) -> None:
        if codes is None:
            self._write.write_arrow(data, bucket)
            return
        with_kinds = data.append_column(pa.field(VALUE_KIND, pa.int8(), nullable=False), codes)
        if self._native:
            write_native_with_kinds(self._write, with_kinds, bucket)
        else:
            self._write.write_arrow(with_kinds, bucket)

    def prepare_commit(self, commit_identifier: int) -> list[Any]:
        """The commit messages of the files written (picklable: they travel to the committer)."""
        return [] if self._write is None else list(self._write.prepare_commit(commit_identifier))

    def abort(self, messages: Sequence[Any]) -> None:
        """Delete the files of ``messages``, prepared by this write and never committed."""
        abort_files(self._paimon, messages)

    def close(self) -> None:
        """Release the writer (it deletes files it wrote and has not prepared)."""
        write, self._write = self._write, None
        if write is not None:
            write.close()


def _kind_codes(rows: int, kinds: Sequence[str] | None) -> pa.Array:
    """Paimon's row-kind bytes of ``kinds`` (None: inserts); rows of one kind (every
    insert-only write) without a Python object per row."""
    if not kinds or kinds.count(kinds[0]) == len(kinds):
        return pa.array(np.full(rows, KIND_BYTES[kinds[0]] if kinds else 0, np.int8))
    return pa.array(kind_bytes(kinds))


def commit_files(
    paimon: Any, messages: Sequence[Any], commit_user: str, commit_identifier: int, properties: Mapping[str, str],
    snapshot_commit: Any = None,
) -> None:
    """Commit ``messages`` as one snapshot. With ``snapshot_commit`` (an object-store
    warehouse's conditional commit), that creates the snapshot file, in one attempt:
    a lost race raises, and the caller re-reads the table before trying again.
    A :class:`~tablelog.store.partitions.PartitionDrop` among ``messages`` (then alone)
    commits the drop of its partition instead.

    No ``messages`` still commits a snapshot (pypaimon skips an empty commit unless
    ``snapshot.ignore-empty-commit`` is false): the committer asks for one only to record
    log records without data files, such as a relay's (:mod:`tablelog.relay`) or a log
    attached to the table (:mod:`tablelog.log_change`)."""
    drops = [m for m in messages if isinstance(m, PartitionDrop)]
    if drops:
        if len(drops) != len(messages) or len(drops) != 1:
            raise ValueError("a partition drop is committed alone: one PartitionDrop and no data files")
        _drop_partition(paimon, drops[0], commit_user, commit_identifier, properties, snapshot_commit)
        return
    if not messages:
        paimon = paimon.copy({"snapshot.ignore-empty-commit": "false"})
    builder = with_commit_user(paimon.new_stream_write_builder(), commit_user)
    commit = builder.new_commit()
    if snapshot_commit is not None:
        # Only the snapshot commit is swapped, not the table's CatalogEnvironment: the
        # native (pypaimon-rust) write path keeps its own.
        commit.file_store_commit.snapshot_commit = snapshot_commit
        commit.file_store_commit.commit_max_retries = 0
    try:
        commit.commit(list(messages), commit_identifier, snapshot_properties=dict(properties))
    finally:
        commit.close()


def _drop_partition(
    paimon: Any, drop: PartitionDrop, commit_user: str, commit_identifier: int, properties: Mapping[str, str],
    snapshot_commit: Any,
) -> None:
    """Commit Paimon's overwrite of ``drop``'s partition with no files: an ``OVERWRITE``
    snapshot removing every file of it, as Paimon's own partition expiry does."""
    check_unchanged_since(paimon, drop)  # under the commit lock, or before a conditional commit
    # Static: with dynamic-partition-overwrite (Paimon's default) an overwrite without files changes nothing.
    table = paimon.copy({"dynamic-partition-overwrite": "false"})
    commit = with_commit_user(table.new_batch_write_builder().overwrite(drop.partition), commit_user).new_commit()
    if snapshot_commit is not None:
        commit.file_store_commit.snapshot_commit = snapshot_commit
        commit.file_store_commit.commit_max_retries = 0
    try:
        # The file-store commit, not the batch commit: that one commits under Paimon's batch
        # identifier, and tablelog finds a commit again by its writer's identifier.
        commit.file_store_commit.overwrite(
            overwrite_partition=drop.partition, commit_messages=[], commit_identifier=commit_identifier,
            snapshot_properties=dict(properties),
        )
    finally:
        commit.close()


def abort_files(paimon: Any, messages: Sequence[Any]) -> None:
    messages = [m for m in messages if not isinstance(m, PartitionDrop)]  # no files of its own
    if not messages:
        return
    commit = paimon.new_stream_write_builder().new_commit()
    try:
        commit.abort(list(messages))
    finally:
        commit.close()
