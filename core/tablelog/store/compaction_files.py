"""A compaction's output: merged key-value rows, in key order, written as the data files
of one sorted run, each of about ``target-file-size`` (Paimon's option; pypaimon's
writers measure it, as here, in Arrow bytes held, so a file is smaller on disk).

Only a row group's rows are held at a time (a file's, when it cannot be streamed), and a
file's Parquet row groups are of :data:`tablelog.store.layout.ROW_GROUP_BYTES`. Each file
keeps the rows' own sequence numbers and row kinds, gets the compaction's level and
``file_source`` and the count of the retractions it holds (``delete_row_count``: pypaimon
reads a file it says has none without merging, and so without dropping retractions), and
has the columns the table's ``data-file.thin-mode`` declares.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from tablelog.store import layout
from tablelog.store.layout import retractions, row_group_rows, without_key_columns
from tablelog.store.pypaimon_internals import set_row_group_rows, write_one_file
from tablelog.store.streamed_file import StreamedFile, streams

#: Told of each file written: partition, bucket, its metadata, its rows.
OnFile = Callable[[tuple[Any, ...], int, Any, pa.Table], None]
#: Paimon's FileSource.COMPACT: a file written by a compaction.
_COMPACT_SOURCE = 1


class CompactionFiles:
    """The files of one bucket's rewritten run (uncommitted: deleted by :meth:`abort`).

    A Parquet file is written as its rows come (:class:`~tablelog.store.streamed_file.StreamedFile`),
    a row group at a time, rolled once it took ``target_size`` Arrow bytes: only a row
    group's rows are held. Told of each file's rows (``on_file``, the lookup cache), or in
    another format, the rows of one file are held and written whole."""

    def __init__(self, paimon: Any, partition: tuple[Any, ...], bucket: int, *, level: int, target_size: int, thin: bool, on_file: OnFile | None = None) -> None:
        from pypaimon.write.writer.key_value_data_writer import KeyValueDataWriter

        self._writer = KeyValueDataWriter(paimon, partition, bucket, 0, options=paimon.options)
        self._partition = tuple(partition)
        self._bucket = bucket
        self._level = level
        self._target_size = target_size
        self._thin = thin
        self._on_file = on_file
        self._streams = on_file is None and streams(self._writer)
        self._streamed: StreamedFile | None = None
        self._deletes = 0
        self._held: list[pa.Table] = []
        self._file_bytes = 0
        self.files: list[Any] = []  # pypaimon DataFileMeta, in key order

    def add(self, rows: pa.Table) -> None:
        """Rows after those added before (keys ascending across calls, each key once);
        a file is finished each time it reaches the target size, rows cut to fit."""
        while rows.num_rows:
            room = self._target_size - self._file_bytes
            fits = max(1, room * rows.num_rows // max(rows.nbytes, 1))  # rows of about the average size
            part = rows if fits >= rows.num_rows else rows.slice(0, fits)
            rows = rows.slice(part.num_rows)
            self._file_bytes += part.nbytes  # the current file's rows, held or streamed
            if self._streams:
                self._stream(part)
                if self._file_bytes >= self._target_size or rows.num_rows:
                    self._finish_streamed()
                continue
            self._held.append(part)
            if self._file_bytes >= self._target_size or rows.num_rows:
                self._write()

    def finish(self) -> list[Any]:
        """The files written, the last one finished."""
        self._finish_streamed()
        self._write()
        return self.files

    def abort(self) -> None:
        """Delete every file written."""
        self._held.clear()
        if self._streamed is not None:
            self._streamed.abort()
            self._streamed = None
        self._writer.abort()

    def _stream(self, rows: pa.Table) -> None:
        data = without_key_columns(rows) if self._thin else rows
        if self._streamed is None:
            self._streamed = StreamedFile(self._writer, data.schema, layout.ROW_GROUP_BYTES)
            self._deletes = 0
        self._deletes += int(retractions(rows).sum())
        self._streamed.write(data)

    def _finish_streamed(self) -> None:
        streamed, self._streamed = self._streamed, None
        self._file_bytes = 0
        if streamed is not None:
            self._add_file(streamed.close(), self._deletes, None)

    def _write(self) -> None:
        if not self._held:
            return
        data = pa.concat_tables(self._held)
        for name in self._writer.trimmed_primary_keys:  # pypaimon takes a file's key range from its first batch
            index = data.schema.get_field_index(name)
            data = data.set_column(index, data.schema.field(index), data.column(index).combine_chunks())
        self._held.clear()
        self._file_bytes = 0
        set_row_group_rows(self._writer, row_group_rows(data))
        write_one_file(self._writer, without_key_columns(data) if self._thin else data)
        self._add_file(self._writer.committed_files[-1], int(retractions(data).sum()), data)

    def _add_file(self, written: Any, deletes: int, data: pa.Table | None) -> None:
        meta = dataclasses.replace(written, level=self._level, file_source=_COMPACT_SOURCE, delete_row_count=deletes)
        self._writer.committed_files[-1] = meta
        self.files.append(meta)
        if self._on_file is not None and data is not None:
            self._on_file(self._partition, self._bucket, meta, data)
