"""What importing tablelog costs a fresh process.

Spark starts a new Python process for a streaming source's planner at every query start,
and its workers import the source when they unpickle a partition: every import there is
paid per query. pandas is the heaviest of them, and pyarrow imports it silently when a
module builds an array from a Python list at import time."""

from __future__ import annotations

import subprocess
import sys


def test_importing_tablelog_and_its_spark_source_leaves_pandas_unimported() -> None:
    script = "import sys, tablelog, tablelog.spark.source; print('pandas' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
