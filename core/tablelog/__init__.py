"""tablelog: double-write a Paimon table's changelog into Kafka, Pulsar or any log system.

The Python API starts here::

    import tablelog
    table = tablelog.create_table("/tmp/wh", "db.orders", schema, primary_key=["id"],
                                  options={"log.system": "filesystem", "bucket": "2"})
    with table.writer() as writer:
        writer.write(arrow_table)          # or a pandas frame, or rows
        writer.commit()
    for change in table.reader().changes():
        print(change.kind, change.row)
    table.alter(tablelog.AddColumn("note", pyarrow.string()))   # schema evolution
"""

from __future__ import annotations

__version__ = "0.1.0"

from tablelog.errors import TablelogError
from tablelog.normalize import Normalizer
from tablelog.reading import Change, ChangelogReader, ReaderPosition
from tablelog.records import RowKind
from tablelog.store import AddColumn, DropColumn, RenameColumn, SetOption, WidenColumn
from tablelog.table import Table
from tablelog.tables import create_table, open_table

__all__ = [
    "AddColumn",
    "Change",
    "ChangelogReader",
    "DropColumn",
    "Normalizer",
    "ReaderPosition",
    "RenameColumn",
    "RowKind",
    "SetOption",
    "Table",
    "TablelogError",
    "WidenColumn",
    "create_table",
    "open_table",
]
