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

# Before anything loads pyarrow's S3, which reads the CAs it trusts only then (the imports
# below come after it: E402).
from tablelog.ca_bundle import adopt_aws_ca_bundle

adopt_aws_ca_bundle()

from tablelog.errors import TablelogError  # noqa: E402
from tablelog.normalize import Normalizer  # noqa: E402
from tablelog.reading import Change, ChangelogReader, ReaderPosition  # noqa: E402
from tablelog.records import RowKind  # noqa: E402
from tablelog.store import AddColumn, DropColumn, RenameColumn, SetOption, WidenColumn  # noqa: E402
from tablelog.table import Table  # noqa: E402
from tablelog.tables import create_table, open_table  # noqa: E402

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
