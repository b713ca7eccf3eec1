"""The ``tablelog`` data source through Spark Connect (``SparkSession.builder.remote``):
register and a batch write and read from a Connect-only client (no JVM half), a streaming
write on Kafka, a transactional streaming read.

The server is the ``spark_connect_url`` fixture's (its Python has tablelog installed); one
client session is shared by the tests. Tables live in a local warehouse with the
``filesystem`` log under an absolute ``filesystem.path``: client and server share this
machine's file system, as they would share a warehouse on object storage.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner

import tablelog
from tablelog.cli import cli
from tablelog.testing.spark_inputs import replay

pytestmark = pytest.mark.cluster


SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])

#: A client without the classic (JVM) half of PySpark, as ``pip install pyspark-client``
#: gives: PySpark decides it is "remote only" when ``pyspark.core`` cannot be imported,
#: and py4j is not installed at all.
_REMOTE_ONLY_CLIENT = """
import sys

class _ClientOnly:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "py4j" or name == "pyspark.core" or name.startswith("pyspark.core."):
            raise ImportError(f"No module named {name!r} (a Connect-only client)")
        return None

sys.meta_path.insert(0, _ClientOnly())
from pyspark.util import is_remote_only
assert is_remote_only()

import tablelog.spark
from pyspark.sql import SparkSession

url, warehouse, log_path, table, rows = sys.argv[1:6]
spark = SparkSession.builder.remote(url).create()
try:
    tablelog.spark.register(spark)
    (spark.range(int(rows)).selectExpr("id", "concat('row-', id) AS name").write.format("tablelog")
     .mode("append").option("warehouse", warehouse).option("table", table).option("primary-key", "id")
     .option("bucket", "2").option("log.system", "filesystem").option("filesystem.path", log_path).save())
    read = spark.read.format("tablelog").option("warehouse", warehouse).load(table).count()
finally:
    spark.stop()
loaded = sorted(m for m in sys.modules if m.split(".")[0] == "py4j" or m.startswith("pyspark.core"))
print(f"read={read} classic_modules={loaded}")
"""


@pytest.fixture
def places(tmp_path: Path) -> dict[str, str]:
    """A fresh table name in a local warehouse, with its filesystem log at an absolute path."""
    return {"warehouse": str(tmp_path / "wh"), "table": f"db.t_{uuid.uuid4().hex[:8]}",
            "log": str(tmp_path / "log")}


def log_options(places: dict[str, str]) -> dict[str, str]:
    return {"log.system": "filesystem", "filesystem.path": places["log"]}


def sink_options(places: dict[str, str], logs: dict[str, str] | None = None) -> dict[str, str]:
    """The options of a write that creates the table when it is missing."""
    return {"warehouse": places["warehouse"], "table": places["table"], "primary-key": "id", "bucket": "2",
            **(log_options(places) if logs is None else logs)}


def test_a_connect_only_client_without_py4j_registers_tablelog_and_a_batch_write_reads_back_every_row(
    spark_connect_url: str, places: dict[str, str]
) -> None:
    # pip install pyspark-client: no JVM half; register, one batch write, one batch read.
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_REMOTE_ONLY_CLIENT), spark_connect_url, places["warehouse"],
         places["log"], places["table"], "120"],
        capture_output=True, text=True, timeout=180,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "read=120 classic_modules=[]" in result.stdout
    table = tablelog.open_table(places["warehouse"], places["table"], log_options(places))
    assert table.rows().num_rows == 120
    assert len(list(table.snapshots())) == 1  # one job, one commit


def test_a_streaming_write_over_connect_commits_each_micro_batch_once_and_verifies(
    connect: Any, places: dict[str, str], tmp_path: Path, kafka_bootstrap: str,
) -> None:
    # On Kafka: the batch write above and the stream read below use the filesystem log.
    logs = {"log.system": "kafka", "kafka.bootstrap.servers": kafka_bootstrap}
    files, per_file = 4, 30
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    for f in range(files):
        (incoming / f"part-{f}.json").write_text("".join(
            json.dumps({"id": f * per_file + i, "name": f"row-{f * per_file + i}"}) + "\n"
            for i in range(per_file)))
    source = connect.readStream.schema("id BIGINT, name STRING").option("maxFilesPerTrigger", 1).json(str(incoming))
    query = (source.writeStream.format("tablelog").options(**sink_options(places, logs))
             .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start())
    assert query.awaitTermination(120), "the availableNow query did not finish"
    assert query.exception() is None
    batches = {p["batchId"] for p in query.recentProgress}
    assert batches == set(range(files))  # one micro-batch per file

    runtime = {k: v for k, v in logs.items() if k != "log.system"}
    table = tablelog.open_table(places["warehouse"], places["table"], runtime)
    ids = table.rows().column("id").to_pylist()
    assert sorted(ids) == list(range(files * per_file))  # every row, once
    assert len(list(table.snapshots())) == files  # one commit per micro-batch
    result = CliRunner().invoke(
        cli, ["verify", "--warehouse", places["warehouse"], places["table"],
              *[arg for k, v in runtime.items() for arg in ("-o", f"{k}={v}")]], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert f"{files * per_file} rows, the log replays {files * per_file} changes" in result.output


def test_a_transactional_stream_read_over_connect_returns_every_committed_change_once(
    connect: Any, places: dict[str, str], tmp_path: Path
) -> None:
    table = tablelog.create_table(places["warehouse"], places["table"], SCHEMA, primary_key=["id"], bucket=2,
                                  options=log_options(places))
    with table.writer("python-api") as writer:
        writer.write([{"id": i, "name": f"v1-{i}"} for i in range(60)])
        writer.commit()
    sink = f"tablelog_connect_{uuid.uuid4().hex[:8]}"
    query = (connect.readStream.format("tablelog").option("warehouse", places["warehouse"])
             .option("table", places["table"]).load()
             .writeStream.format("memory").queryName(sink).outputMode("append")
             .option("checkpointLocation", str(tmp_path / "checkpoint"))
             .trigger(processingTime="300 milliseconds").start())
    try:
        query.processAllAvailable()
        first = [r.asDict() for r in connect.table(sink).collect()]
        assert len(first) == 60 and {c["_kind"] for c in first} == {"+I"}
        with table.writer("python-api") as writer:
            writer.write([("+U", {"id": i, "name": f"v2-{i}"}) for i in range(15)]
                         + [("-D", {"id": i, "name": f"v1-{i}"}) for i in range(50, 60)]
                         + [{"id": i, "name": f"v1-{i}"} for i in range(60, 85)])
            writer.commit()
        doomed = table.write_task("doomed", 1)  # produced and durable, never committed
        doomed.write([{"id": 999, "name": "never"}])
        doomed.finish()
        query.processAllAvailable()
        everything = [r.asDict() for r in connect.table(sink).collect()]
    finally:
        query.stop()
    assert query.exception() is None
    # The first micro-batch's 60 inserts, then the committed changes, each once.
    assert Counter(c["_kind"] for c in everything) == Counter({"+I": 60 + 25, "+U": 15, "-D": 10})
    assert not any(c["id"] == 999 for c in everything)
    assert replay(everything) == {r["id"]: r for r in table.rows().to_pylist()}  # no gap, no overlap


def test_a_relative_warehouse_over_connect_is_refused_before_anything_is_written(
    connect: Any, tmp_path: Path
) -> None:
    # The server's Python workers run in the session's own artifact directory, which
    # Spark deletes with the session: a table written there would vanish without a word.
    name = f"db.t_{uuid.uuid4().hex[:8]}"
    with pytest.raises(Exception, match="relative warehouse 'relative-wh'") as refused:
        (connect.range(3).selectExpr("id", "concat('row-', id) AS name").write.format("tablelog")
         .mode("append").option("warehouse", "relative-wh").option("table", name).option("primary-key", "id")
         .option("log.system", "filesystem").option("filesystem.path", str(tmp_path / "log")).save())
    assert "Spark Connect" in str(refused.value) and "absolute" in str(refused.value)
    assert not (tmp_path / "log").exists()


def test_a_relative_warehouse_outside_connect_still_resolves_against_the_working_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from tablelog.spark.options import ARTIFACT_SESSION_ENV, SourceOptions

    monkeypatch.chdir(tmp_path)
    for classic in (None, "default"):  # a plain Python process; a classic session's worker
        if classic is None:
            monkeypatch.delenv(ARTIFACT_SESSION_ENV, raising=False)
        else:
            monkeypatch.setenv(ARTIFACT_SESSION_ENV, classic)
        parsed = SourceOptions.parse({"warehouse": "wh", "table": "db.t"})
        assert parsed.warehouse == str(tmp_path / "wh")


def test_a_compaction_over_connect_rewrites_each_pair_in_a_task_and_commits_one_snapshot(
        connect: Any, places: dict[str, str]) -> None:
    import tablelog.spark
    from tablelog.testing import NO_COMPACTION
    from tablelog.verify import verify

    table = tablelog.create_table(places["warehouse"], places["table"], SCHEMA, primary_key=["id"], bucket=2,
                                  options={**NO_COMPACTION, **log_options(places)})
    for commit in range(3):
        with table.writer() as writer:
            writer.write([{"id": i, "name": f"c{commit}"} for i in range(commit * 10, commit * 10 + 30)])
            writer.commit()
    before = {r["id"]: r["name"] for r in table.rows().to_pylist()}

    result = tablelog.spark.compact(connect, places["table"], warehouse=places["warehouse"],
                                    options=log_options(places))

    assert result.snapshot_id is not None and len(result.pairs) == 2
    assert {r["id"]: r["name"] for r in table.rows().to_pylist()} == before
    assert verify(table).consistent
