"""A compaction's output: merged key-value rows, in key order, written as the data files
of one sorted run, each of about ``target-file-size`` (Paimon's option; pypaimon's
writers measure it, as here, in Arrow bytes held, so a file is smaller on disk).

Only one file's rows are held at a time. A file's Parquet row groups are of about
:data:`ROW_GROUP_BYTES` of Arrow rows: pypaimon's reader decodes a row group at once, so a
later compaction merging several of these files, or a full scan reading one, holds that
much a file, not the file (pyarrow's default, a million rows a group, is most of a file of
``target-file-size``). Each file keeps the rows' own sequence numbers
and row kinds, gets the compaction's level and ``file_source`` and the count of the
retractions it holds (``delete_row_count``: pypaimon reads a file it says has none
without merging, and so without dropping retractions), and has the columns the table's
``data-file.thin-mode`` declares.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from tablelog.store.layout import retractions, without_key_columns
from tablelog.store.pypaimon_internals import set_row_group_rows, write_one_file

#: Told of each file written: partition, bucket, its metadata, its rows.
OnFile = Callable[[tuple[Any, ...], int, Any, pa.Table], None]
#: Paimon's FileSource.COMPACT: a file written by a compaction.
_COMPACT_SOURCE = 1
#: Arrow bytes of rows in a row group of a file written here.
ROW_GROUP_BYTES = 16 << 20
#: Rows of a row group, at least: many narrow rows in a group compress and scan well.
MIN_ROW_GROUP_ROWS = 8192


class CompactionFiles:
    """The files of one bucket's rewritten run (uncommitted: deleted by :meth:`abort`)."""

    def __init__(self, paimon: Any, partition: tuple[Any, ...], bucket: int, *, level: int, target_size: int, thin: bool, on_file: OnFile | None = None) -> None:
        from pypaimon.write.writer.key_value_data_writer import KeyValueDataWriter

        self._writer = KeyValueDataWriter(paimon, partition, bucket, 0, options=paimon.options)
        self._partition = tuple(partition)
        self._bucket = bucket
        self._level = level
        self._target_size = target_size
        self._thin = thin
        self._on_file = on_file
        self._held: list[pa.Table] = []
        self._held_bytes = 0
        self.files: list[Any] = []  # pypaimon DataFileMeta, in key order

    def add(self, rows: pa.Table) -> None:
        """Rows after those added before (keys ascending across calls, each key once);
        a file is written each time the rows held reach the target size, rows cut to fit."""
        while rows.num_rows:
            room = self._target_size - self._held_bytes
            fits = max(1, room * rows.num_rows // max(rows.nbytes, 1))  # rows of about the average size
            part = rows if fits >= rows.num_rows else rows.slice(0, fits)
            self._held.append(part)
            self._held_bytes += part.nbytes
            rows = rows.slice(part.num_rows)
            if self._held_bytes >= self._target_size or rows.num_rows:
                self._write()

    def finish(self) -> list[Any]:
        """The files written, the last one with the rows still held."""
        self._write()
        return self.files

    def abort(self) -> None:
        """Delete every file written."""
        self._held.clear()
        self._writer.abort()

    def _write(self) -> None:
        if not self._held:
            return
        data = pa.concat_tables(self._held)
        for name in self._writer.trimmed_primary_keys:  # pypaimon takes a file's key range from its first batch
            index = data.schema.get_field_index(name)
            data = data.set_column(index, data.schema.field(index), data.column(index).combine_chunks())
        self._held.clear()
        self._held_bytes = 0
        deletes = int(retractions(data).sum())
        set_row_group_rows(self._writer, max(MIN_ROW_GROUP_ROWS, ROW_GROUP_BYTES * data.num_rows // max(data.nbytes, 1)))
        write_one_file(self._writer, without_key_columns(data) if self._thin else data)
        meta = dataclasses.replace(self._writer.committed_files[-1], level=self._level, file_source=_COMPACT_SOURCE,
                                   delete_row_count=deletes)
        self._writer.committed_files[-1] = meta
        self.files.append(meta)
        if self._on_file is not None:
            self._on_file(self._partition, self._bucket, meta, data)
