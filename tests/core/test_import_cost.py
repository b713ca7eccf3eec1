"""What importing tablelog costs a fresh process.

Spark starts a new Python process for a streaming source's planner at every query start,
and its workers import the source when they unpickle a partition: every import there is
paid per query. pandas is the heaviest of them: pyarrow imports it silently when a
module builds an array from a Python list at import time, and so does pypaimon's table
object (through ``pyarrow.dataset``), which only reads and writes of data files need."""

from __future__ import annotations

import subprocess
import sys


def test_importing_tablelog_and_its_spark_source_leaves_pandas_and_polars_unimported() -> None:
    # polars encodes debezium-json for writers; readers never need it.
    script = "import sys, tablelog, tablelog.spark.source; print('pandas' in sys.modules, 'polars' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False"]


_READ_CHANGES = """
import sys
from tablelog.table import internals
from tablelog.tables import open_table
table = open_table(sys.argv[1], "db.t")
latest = internals(table).files.latest_snapshot()
with table.reader(consistency="transactional", scan_mode="earliest", until_snapshot=latest.id) as reader:
    rows = reader.read_all()
print(len(rows), table.schema.names, "pandas" in sys.modules, "polars" in sys.modules)
"""


def test_reading_a_tables_changes_in_a_fresh_process_leaves_pandas_unimported(tmp_path) -> None:
    # What Spark's streaming planner and its tasks do: schemas, snapshots and the log,
    # no Paimon data file (pypaimon's table object, which imports pandas, is not built).
    import pyarrow as pa

    from tablelog.tables import create_table

    table = create_table(str(tmp_path), "db.t", pa.schema([("id", pa.int64()), ("v", pa.string())]),
                         primary_key=["id"], options={"log.system": "filesystem", "log.format": "arrow"})
    with table.writer() as writer:
        writer.write(pa.table({"id": [1, 2], "v": ["a", "b"]}))
        writer.commit()
    done = subprocess.run([sys.executable, "-c", _READ_CHANGES, str(tmp_path)],
                          capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["2", "['id',", "'v']", "False", "False"]
