"""Log record encodings: rows with their row kinds as log record keys and values, and back.

A table's log format is one :class:`~tablelog.formats.codec.RecordCodec` (the interface
the writer and the readers use), chosen once by :func:`record_codec` from
``log.format``: :mod:`~tablelog.formats.json_codec` (``debezium-json`` and ``json``,
a row a record; the envelope is :mod:`~tablelog.formats.debezium`) or
:mod:`~tablelog.formats.arrow_codec` (``arrow``, a batch of rows a record, whose
records are :mod:`~tablelog.formats.arrow`). :mod:`~tablelog.formats.json_values`,
:mod:`~tablelog.formats.json_rows` and :mod:`~tablelog.formats.json_times` say how each
column type is written in JSON, as Flink's JSON formats write it;
:mod:`~tablelog.formats.projection` is the narrow second stream of an ``arrow`` log.
"""

from __future__ import annotations

import pyarrow as pa

from tablelog.formats.arrow_codec import ArrowCodec
from tablelog.formats.codec import RecordCodec
from tablelog.formats.json_codec import JsonCodec
from tablelog.options import ArrowCompression, LogFormat


def record_codec(
    schema: pa.Schema, primary_key: tuple[str, ...], log_format: LogFormat, table: str = "", schema_id: int = 0,
    compression: ArrowCompression = ArrowCompression.LZ4,
) -> RecordCodec:
    """The codec of a table's rows of ``schema`` (id ``schema_id``) in ``log_format``;
    ``compression``: of the records an ``arrow`` log writes. Raises
    :class:`~tablelog.errors.SchemaMismatchError` for a column the log cannot carry."""
    if log_format is LogFormat.ARROW:
        return ArrowCodec(schema, primary_key, table, schema_id, compression)
    return JsonCodec(schema, primary_key, table, schema_id, log_format)


__all__ = ["RecordCodec", "record_codec"]
