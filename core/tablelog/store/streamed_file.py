"""One key-value data file written as its rows come, a row group at a time, with the
metadata pypaimon's ``DataWriter._write_data_to_file`` gives a file it writes whole: the
key range, the statistics of the same columns (combined group by group, as pypaimon's
``SingleFileWriter`` combines them), the sequence numbers' range. A compaction writing its
output this way holds one row group, not one file of ``target-file-size``.

It calls the writer's internals through :mod:`tablelog.store.pypaimon_internals` (the
pypaimon range the project pins). :func:`streams` says when a writer's files can be
written so (Parquet, without the features that write more than the data file).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from tablelog.store.layout import SEQUENCE_NUMBER
from tablelog.store.pypaimon_internals import (
    column_stats_function,
    finished_data_file,
    new_data_file,
    writes_data_file_only,
)


def streams(writer: Any) -> bool:
    """Whether ``writer`` (a pypaimon ``KeyValueDataWriter``) writes plain Parquet data files,
    nothing beside them: what :class:`StreamedFile` writes the same way."""
    from pypaimon.common.options.core_options import ChangelogProducer, CoreOptions

    return (writer.file_format == CoreOptions.FILE_FORMAT_PARQUET and writes_data_file_only(writer)
            and writer.external_path_provider is None and writer.changelog_producer != ChangelogProducer.INPUT)


class StreamedFile:
    """A data file of ``writer``'s (partition, bucket) whose rows are given in key order by
    :meth:`write`, written in row groups of about ``row_group_bytes`` Arrow bytes (rows
    are held until they make one); :meth:`close` returns its metadata (and adds it to the
    writer's files), :meth:`abort` deletes it."""

    def __init__(self, writer: Any, schema: pa.Schema, row_group_bytes: int) -> None:
        from pypaimon.write.writer.single_file_writer import SingleFileWriter

        self._writer = writer
        self._name, self._path = new_data_file(writer)
        self._key_names = list(writer.trimmed_primary_keys)
        table = writer.table
        stats_enabled = writer.options.metadata_stats_enabled()
        self._value_fields = list(table.fields) if stats_enabled else []
        self._key_fields = list(writer.trimmed_primary_keys_fields)
        fields = {f.name: f for f in self._key_fields}
        fields.update({f.name: f for f in self._value_fields})
        self._file = SingleFileWriter(
            writer.file_io, self._path, schema, writer.file_format, writer.compression, writer.zstd_level,
            list(fields.values()), column_stats_function(writer), parquet_options=writer.parquet_writer_options)
        self._min_key: list[Any] | None = None
        self._max_key: list[Any] | None = None
        self._sequences: tuple[int, int] | None = None
        self._row_group_bytes = row_group_bytes
        self._pending: list[pa.Table] = []
        self._pending_bytes = 0
        self.rows = 0

    def write(self, rows: pa.Table) -> None:
        """Rows after those given before (keys ascending)."""
        if not rows.num_rows:
            return
        keys = rows.select(self._key_names)
        if self._min_key is None:
            self._min_key = [keys.column(i)[0].as_py() for i in range(keys.num_columns)]
        self._max_key = [keys.column(i)[-1].as_py() for i in range(keys.num_columns)]
        if SEQUENCE_NUMBER in rows.schema.names:
            sequences = rows.column(SEQUENCE_NUMBER)
            low, high = pc.min(sequences).as_py(), pc.max(sequences).as_py()
            self._sequences = (low, high) if self._sequences is None else (
                min(self._sequences[0], low), max(self._sequences[1], high))
        self._pending.append(rows)
        self._pending_bytes += rows.nbytes
        self.rows += rows.num_rows
        if self._pending_bytes >= self._row_group_bytes:
            self._write_pending(whole_groups_only=True)

    def _write_pending(self, *, whole_groups_only: bool = False) -> None:
        """The rows held, as row groups of about ``row_group_bytes``; with
        ``whole_groups_only``, the rows short of a whole group stay held."""
        if not self._pending:
            return
        held = pa.concat_tables(self._pending)
        per_group = max(1, self._row_group_bytes * held.num_rows // max(held.nbytes, 1))
        start = 0
        while held.num_rows - start >= per_group or (not whole_groups_only and start < held.num_rows):
            group = held.slice(start, per_group).combine_chunks()
            self._file.write(group, row_group_size=group.num_rows)
            start += group.num_rows
        rest = held.slice(start)
        self._pending, self._pending_bytes = ([rest], rest.nbytes) if rest.num_rows else ([], 0)

    def close(self) -> Any:
        """Finish the file: its ``DataFileMeta``, also added to the writer's files."""
        from pypaimon.table.row.generic_row import GenericRow

        writer = self._writer
        self._write_pending()
        self._file.close()
        if self._sequences is None:
            sequences = (writer.sequence_generator.start, writer.sequence_generator.current)
        else:
            sequences = self._sequences
        key_fields = self._key_fields
        try:
            return finished_data_file(
                writer, name=self._name, path=self._path, rows=self.rows,
                min_key=GenericRow(self._min_key or [], key_fields), max_key=GenericRow(self._max_key or [], key_fields),
                key_fields=key_fields, value_fields=self._value_fields, column_stats=self._file.column_stats,
                sequences=sequences)
        except BaseException:
            writer.file_io.delete_quietly(self._path)
            raise

    def abort(self) -> None:
        self._file.abort()
