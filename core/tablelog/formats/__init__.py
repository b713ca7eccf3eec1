"""Log record encodings: rows with their row kinds as log record keys and values, and back.

:mod:`~tablelog.formats.codec` (the record codec of a table: ``debezium-json``,
``json``, ``arrow``), :mod:`~tablelog.formats.json_values`,
:mod:`~tablelog.formats.json_rows` and :mod:`~tablelog.formats.json_times` (how each
column type is written in JSON, as Flink's JSON formats write it),
:mod:`~tablelog.formats.arrow` (Arrow IPC record batches, many rows a record) and
:mod:`~tablelog.formats.projection` (the narrow second stream of an ``arrow`` log).
"""
