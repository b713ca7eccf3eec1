"""Probe (issue #15, fact c): a Python data source through Spark Connect.

A Connect server from the pyspark wheel (``local[2]``, Python workers on this venv's
python) and a client session register the ``probe`` data source of
``dsmodule/probe_datasource.py`` (not tablelog) in four ways, then try a batch write, a
streaming write and a streaming read:

1. by reference, the module importable only on the client;
2. by reference, the module shipped with ``spark.addArtifacts(file, pyfile=True)``;
3. by value (``cloudpickle.register_pickle_by_value(module)``), not installed on the server;
4. by reference, on a second server whose environment has the module (``PYTHONPATH``).

    python tests/cluster/probes/connect_datasources.py
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tablelog.testing.spark_cluster import spark_connect_server

MODULE_DIR = Path(__file__).parent / "dsmodule"


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def batch_write(spark: Any, out: Path) -> str:
    spark.range(20).selectExpr("id", "'x' as python").repartition(2).write.format("probe") \
        .mode("append").option("path", str(out)).save()
    tasks, commits = lines(out / "tasks.jsonl"), lines(out / "commits.jsonl")
    return (f"{len(tasks)} tasks, commits {[(c['tasks'], c['rows']) for c in commits]}, "
            f"python {sorted({t['python'] for t in tasks})}")


def stream_write(spark: Any, out: Path) -> str:
    source = spark.readStream.format("rate").option("rowsPerSecond", 20).load() \
        .selectExpr("value as id", "'x' as python")
    query = source.writeStream.format("probe").option("path", str(out)) \
        .option("checkpointLocation", str(out / "checkpoint")).trigger(processingTime="1 second").start()
    try:
        deadline = time.monotonic() + 90
        while len(lines(out / "commits.jsonl")) < 2 and time.monotonic() < deadline:
            if query.exception() is not None:
                raise RuntimeError(str(query.exception())[:400])
            time.sleep(0.5)
    finally:
        query.stop()
    commits = lines(out / "commits.jsonl")
    tasks = lines(out / "tasks.jsonl")
    return (f"{len(commits)} commits, batch ids {[c['batch'] for c in commits]}, task batch ids "
            f"{sorted({t['batch'] for t in tasks})}, python {sorted({c['python'] for c in commits})}")


def stream_read(spark: Any, out: Path) -> str:
    name = f"probe_read_{uuid.uuid4().hex[:6]}"
    query = spark.readStream.format("probe").option("rows", "5").load().writeStream.format("memory") \
        .queryName(name).trigger(processingTime="1 second").start()
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if query.exception() is not None:
                raise RuntimeError(str(query.exception())[:400])
            rows = spark.table(name).collect()
            if len(rows) >= 10:
                break
            time.sleep(0.5)
    finally:
        query.stop()
    return f"{len(rows)} rows, ids {sorted(r.id for r in rows)[:10]}, python {sorted({r.python for r in rows})}"


def attempt(label: str, spark: Any, register: Callable[[Any], None], workdir: Path) -> None:
    try:
        register(spark)
    except Exception as exc:
        print(f"{label}: register FAILED {type(exc).__name__}: {str(exc)[:300]}", flush=True)
        return
    for op in (batch_write, stream_write, stream_read):
        out = workdir / f"{label.split(':')[0]}-{op.__name__}"
        try:
            print(f"{label}: {op.__name__}: {op(spark, out)}", flush=True)
        except Exception as exc:
            text = " ".join(str(exc).split())
            causes = [line.strip() for line in str(exc).splitlines()
                      if ("Error" in line or "Exception" in line) and "Traceback" not in line]
            cause = causes[-1] if causes else ""
            print(f"{label}: {op.__name__} FAILED {type(exc).__name__}: {text[:250]} | {cause.strip()[:200]}",
                  flush=True)


def main() -> None:
    from importlib.metadata import version

    from pyspark.sql import SparkSession

    print("pyspark", version("pyspark"), "client python", sys.executable)
    sys.path.insert(0, str(MODULE_DIR))
    import probe_datasource
    from pyspark import cloudpickle

    def by_reference(spark: Any) -> None:
        spark.dataSource.register(probe_datasource.ProbeDataSource)

    def by_artifact(spark: Any) -> None:
        spark.addArtifacts(str(MODULE_DIR / "probe_datasource.py"), pyfile=True)
        spark.dataSource.register(probe_datasource.ProbeDataSource)

    def by_value(spark: Any) -> None:
        cloudpickle.register_pickle_by_value(probe_datasource)
        try:
            spark.dataSource.register(probe_datasource.ProbeDataSource)
        finally:
            cloudpickle.unregister_pickle_by_value(probe_datasource)

    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        work = Path(tmp)
        started = time.monotonic()
        with spark_connect_server(work / "server-plain") as url:
            print(f"server without the module: {url} (port open after {time.monotonic() - started:.1f}s)")
            for label, register in (("1:by-reference", by_reference), ("2:addArtifacts", by_artifact),
                                    ("3:by-value", by_value)):
                spark = SparkSession.builder.remote(url).create()  # a session of its own per way
                try:
                    attempt(label, spark, register, work)
                finally:
                    spark.stop()
        with spark_connect_server(work / "server-pythonpath", environment={"PYTHONPATH": str(MODULE_DIR)}) as url:
            spark = SparkSession.builder.remote(url).create()
            try:
                attempt("4:server-PYTHONPATH", spark, by_reference, work)
            finally:
                spark.stop()


if __name__ == "__main__":
    main()
