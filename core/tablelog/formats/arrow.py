"""The ``arrow`` log format: one log record holds a batch of changes of one partition.

A record's value is one Arrow IPC *stream* (the schema message, one record batch, the
end-of-stream marker), so a reader without tablelog needs only pyarrow::

    table = pyarrow.ipc.open_stream(value).read_all()

Its columns are ``_kind`` (``+I``, ``-U``, ``+U``, ``-D``) and then the table's columns
in the table schema the writer wrote with; the schema's metadata holds that schema's id
(``tablelog.schema-id``, what ``_schema`` is in the JSON formats) and the version of
this layout (``tablelog.format-version``). The body is compressed as
``log.arrow.compression`` says; the stream names its codec, so readers need no setting.
Records have no key: Kafka's log compaction by key does not apply to them.

**A record is the unit of the consistency model.** Sequence numbers, the counts of a
:class:`~tablelog.records.ProducedRange` and the positions readers save count records,
not rows. A record is committed or not as a whole and a reader returns whole records
(every row of one record has the record's position), so exactly-once per record is
exactly-once per row, and a position never needs to point inside a record. A poll's
``max_records`` counts rows: it may return more, by less than one record's rows.

A writer bounds each record by ``log.max-record-bytes`` (:func:`encode_records`).
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from tablelog.errors import SchemaMismatchError
from tablelog.options import ArrowCompression
from tablelog.records import KIND_BYTES, RowKind, kind_bytes

KIND_COLUMN = "_kind"
SCHEMA_ID_KEY = b"tablelog.schema-id"
FORMAT_VERSION_KEY = b"tablelog.format-version"
FORMAT_VERSION = b"1"

#: Records are aimed a little below the limit: the next rows may take more bytes each
#: than the ones measured (longer strings, data that compresses worse).
_FILL = 0.9


def record_schema(schema: pa.Schema, schema_id: int) -> pa.Schema:
    """The schema of a record of rows of ``schema`` (the table's, id ``schema_id``)."""
    global _last_record_schema
    last = _last_record_schema
    # Every record of a write has the same schema: made once, not per record.
    if last is not None and last[1] == schema_id and last[0].equals(schema, check_metadata=True):
        return last[2]
    made = pa.schema(
        [pa.field(KIND_COLUMN, pa.string()), *schema],
        metadata={SCHEMA_ID_KEY: str(schema_id).encode(), FORMAT_VERSION_KEY: FORMAT_VERSION},
    )
    _last_record_schema = (schema, schema_id, made)
    return made


_last_record_schema: tuple[pa.Schema, int, pa.Schema] | None = None
#: A column of one row kind, per kind, that :func:`kind_array` slices.
_SAME_KINDS: dict[RowKind, pa.Array] = {}


@functools.cache
def _kind_values() -> pa.Array:
    """Each kind's value at its byte (:data:`tablelog.records.KIND_BYTES`), made at first
    use: ``pa.array`` imports pandas, which importing tablelog leaves out."""
    return pa.array(sorted(KIND_BYTES, key=KIND_BYTES.__getitem__), pa.string())


def kind_array(kinds: Sequence[RowKind]) -> pa.Array:
    """The row kinds as a string array. Rows of one kind (every row of an insert-only
    write) take a zero-copy slice of a column made once: converting a Python list costs
    a writer about as much per row as routing the row to its bucket."""
    n = len(kinds)
    if n == 0 or kinds.count(kinds[0]) != n:
        try:
            return _kind_values().take(pa.array(kind_bytes(kinds)))
        except KeyError:  # not a row kind: written as it is (the reader refuses it)
            return pa.array(kinds, pa.string())
    kind = kinds[0]
    same = _SAME_KINDS.get(kind)
    if same is None or len(same) < n:
        same = _SAME_KINDS[kind] = pa.array([kind.value] * max(n, 1 << 16), pa.string())
    return same.slice(0, n)


def encode_records(
    data: pa.Table, kinds: Sequence[RowKind], *, schema_id: int, compression: ArrowCompression, limit: int,
    primary_key: Sequence[str] = (), table: str = "",
) -> list[bytes]:
    """The rows of ``data`` (of one partition, in the table schema) as records of at
    most ``limit`` bytes each, in order. A row that alone encodes to more is a
    :class:`SchemaMismatchError` naming its key; nothing is returned then."""
    schema = record_schema(data.schema, schema_id)
    whole = pa.Table.from_arrays([kind_array(kinds), *data.columns], schema=schema)
    # One thread: a record's columns are too small for compressing them in parallel to
    # pay for handing them to Arrow's thread pool.
    options = pa.ipc.IpcWriteOptions(
        compression=None if compression is ArrowCompression.NONE else compression.value, use_threads=False
    )
    # The first guess comes from the Arrow size; each record encoded then tells how many
    # rows the next may hold at its (compressed) size per row. A chunk too large is cut
    # again to the rows its size allows. When the whole buffers the rows are slices of
    # fit (a kind takes two bytes and an offset), every row goes in one record without
    # measuring the rows' own share of them.
    fits = data.get_total_buffer_size() + 6 * data.num_rows <= limit * _FILL
    rows_per_record = whole.num_rows if fits else _rows_within(whole.num_rows, whole.nbytes, limit)
    records: list[bytes] = []
    start = 0
    while start < whole.num_rows:
        length = min(rows_per_record, whole.num_rows - start)
        value = _stream(whole.slice(start, length), schema, options)
        rows_per_record = _rows_within(length, len(value), limit)
        if len(value) > limit:
            if length == 1:
                raise _too_large(whole, start, len(value), limit, primary_key, table)
            rows_per_record = min(rows_per_record, length - 1)
            continue
        records.append(value)
        start += length
    return records


def _rows_within(rows: int, size: int, limit: int) -> int:
    """How many rows like these (``rows`` of them taking ``size`` bytes) fit in ``limit``."""
    return max(1, int(rows * limit * _FILL / max(size, 1)))


def _stream(rows: pa.Table, schema: pa.Schema, options: pa.ipc.IpcWriteOptions) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema, options=options) as writer:
        writer.write_table(rows, max_chunksize=max(rows.num_rows, 1))
    return sink.getvalue().to_pybytes()


def _too_large(
    whole: pa.Table, row: int, size: int, limit: int, primary_key: Sequence[str], table: str
) -> SchemaMismatchError:
    values = whole.slice(row, 1).to_pylist()[0]
    key = {k: values[k] for k in primary_key} if primary_key else None
    which = f"the row with key {key!r}" if key is not None else f"row {row} (the table has no primary key)"
    where = f"table {table!r}: " if table else ""
    return SchemaMismatchError(
        f"{where}{which} alone encodes to a {size}-byte arrow record, more than "
        f"log.max-record-bytes={limit}; nothing was written"
    )


def decode_record(value: bytes, columns: Collection[str] | None = None) -> tuple[pa.Table, int]:
    """The rows (``_kind`` first) and the schema id of one record; ValueError when the
    value is not a record of this format. ``columns``: decode only these (``_kind`` is
    always decoded; the others are neither read nor decompressed)."""
    try:
        if columns is None:
            reader = pa.ipc.open_stream(value, options=_WHOLE_READ)
            schema = reader.schema
        else:
            schema, options = _pruned_read(value, frozenset(columns))
            reader = pa.ipc.open_stream(value, options=options)
        rows = reader.read_all()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as err:
        raise ValueError(f"not an Arrow IPC stream ({err})") from None
    metadata = schema.metadata or {}
    if metadata.get(FORMAT_VERSION_KEY) != FORMAT_VERSION:
        raise ValueError(f"its schema has no {FORMAT_VERSION_KEY.decode()}={FORMAT_VERSION.decode()}")
    try:
        schema_id = int(metadata[SCHEMA_ID_KEY])
    except (KeyError, ValueError):
        raise ValueError(f"its schema has no integer {SCHEMA_ID_KEY.decode()}") from None
    if not rows.schema.names or rows.schema.names[0] != KIND_COLUMN or rows.schema.field(0).type != pa.string():
        raise ValueError(f"its first column is not a string {KIND_COLUMN!r}")
    if not all(_kinds_valid(chunk) for chunk in rows.column(0).chunks):
        raise ValueError(f"a {KIND_COLUMN} is not one of {[k.value for k in RowKind]}")
    return rows.replace_schema_metadata(None), schema_id


def _pruned_read(value: bytes, columns: frozenset[str]) -> tuple[pa.Schema, pa.ipc.IpcReadOptions]:
    """A record's schema, and the read options that decode only ``columns`` and ``_kind``
    of it. Remembered by the bytes of the record's schema message (every record of a
    writer's schema has the same): else each record is opened twice, once to learn
    which fields to read."""
    message = _schema_message(value)
    key = None if message is None else (message, columns)
    found = _PRUNED_READS.get(key) if key is not None else None
    if found is None:
        schema = pa.ipc.open_stream(value).schema
        wanted = {KIND_COLUMN, *columns}
        included = [i for i, name in enumerate(schema.names) if name in wanted]
        found = (schema, pa.ipc.IpcReadOptions(included_fields=included, use_threads=False))
        if key is not None:
            if len(_PRUNED_READS) >= 64:  # schemas and column sets a process reads: a few
                _PRUNED_READS.clear()
            _PRUNED_READS[key] = found
    return found


#: A record's columns are small: decompressing them on Arrow's thread pool costs more
#: in hand-offs than it saves (as on the writer's side).
_WHOLE_READ = pa.ipc.IpcReadOptions(use_threads=False)
_PRUNED_READS: dict[tuple[bytes, frozenset[str]], tuple[pa.Schema, pa.ipc.IpcReadOptions]] = {}
_CONTINUATION = b"\xff\xff\xff\xff"


def _schema_message(value: bytes) -> bytes | None:
    """The bytes of an IPC stream's first message (its schema), or None when the stream
    does not start with one in the current framing (then nothing is remembered)."""
    if value[:4] != _CONTINUATION or len(value) < 8:
        return None
    end = 8 + int.from_bytes(value[4:8], "little")
    return value[:end] if 8 < end <= len(value) else None


#: The row kinds' two bytes each as one little-endian 16-bit code: True where valid.
_VALID_KIND_CODES = np.zeros(1 << 16, np.bool_)
for _kind in RowKind:
    _VALID_KIND_CODES[int.from_bytes(_kind.value.encode(), "little")] = True


def _kinds_valid(kinds: pa.Array) -> bool:
    """Whether every value of a ``_kind`` array is a row kind. Read from its buffers: a
    hash look-up per row (``pyarrow.compute.is_in``) costs a reader more than decoding a
    pruned record's other columns. Every kind is two bytes, so the offsets step by 2 and
    the data is one 16-bit code per row."""
    n = len(kinds)
    if n == 0:
        return True
    if kinds.null_count:
        return False
    _, offsets_buffer, data = kinds.buffers()
    offsets = np.frombuffer(offsets_buffer, np.int32, n + 1, kinds.offset * 4)
    first = int(offsets[0])
    if int(offsets[-1]) - first != 2 * n or data is None or not (np.diff(offsets) == 2).all():
        return False
    return bool(_VALID_KIND_CODES[np.frombuffer(data, "<u2", n, first)].all())


def layout(schema: pa.Schema, columns: Collection[str] | None) -> pa.Schema:
    """What :func:`conform` makes rows of: ``_kind``, then the columns of ``schema`` (only
    those in ``columns`` when it is given), in its order."""
    fields = [f for f in schema if columns is None or f.name in columns]
    return pa.schema([pa.field(KIND_COLUMN, pa.string()), *fields])


def conform(rows: pa.Table, expected: pa.Schema) -> pa.Table:
    """Decoded rows as rows of ``expected`` (a :func:`layout`), or ValueError when they
    are not: its columns, in its order and types. Columns left out of the layout are
    not made (no null columns to drop again)."""
    if rows.schema.equals(expected, check_metadata=True):
        return rows
    names, wanted = rows.column_names[1:], expected.names[1:]
    if names != wanted:
        raise ValueError(f"its columns {names} are not the table's {wanted}")
    for field in list(expected)[1:]:
        column = rows.column(field.name)
        if column.type != field.type:
            raise ValueError(f"column {field.name!r} is {column.type}, the table's is {field.type}")
    return pa.Table.from_arrays(rows.columns, schema=expected)  # only nullability differs


def changes_of(rows: pa.Table) -> tuple[list[Any], list[dict[str, Any]]]:
    """The row kinds and the Python rows of decoded records."""
    kinds = [_KIND_BY_VALUE[k] for k in rows.column(0).to_pylist()]
    return kinds, rows.drop_columns([KIND_COLUMN]).to_pylist()


_KIND_BY_VALUE = {k.value: k for k in RowKind}
