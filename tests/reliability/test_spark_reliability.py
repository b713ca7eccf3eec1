"""Spark: two streaming queries writing to one table at the same time both land,
each committed change is read once; a secret given as an option of a real Kafka
table never shows in a query plan, its string forms or Spark's logs."""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import tablelog
from tablelog.testing.scenarios import SCHEMA
from tablelog.testing.spark_inputs import collect_stream
from tablelog.testing.spark_scenarios import spark_test_session
from tablelog.verify import verify

pytestmark = pytest.mark.spark
SENTINEL = "SENTINEL-spark-7e1"


@pytest.fixture(scope="module")
def spark() -> Any:
    session = spark_test_session("local[2,2]")
    yield session
    session.stop()


def _inputs(directory: Path, start: int, count: int, tag: str) -> Path:
    import json

    directory.mkdir(parents=True)
    for f in range(2):
        (directory / f"part{f}.json").write_text("".join(
            json.dumps({"id": i, "name": f"{tag}-{i}", "score": 0.5, "_kind": "+I"}) + "\n"
            for i in range(start + f, start + count, 2)))
    return directory


def test_two_streaming_queries_writing_one_table_at_once_both_land_and_each_change_is_read_once(
    spark: Any, tmp_path: Path
) -> None:
    warehouse = tmp_path / "wh"
    tablelog.create_table(str(warehouse), "db.shared", SCHEMA,
                          primary_key=["id"], bucket=2, options={"log.system": "filesystem"})
    queries = []
    for name, start in (("a", 0), ("b", 10_000)):
        source = (spark.readStream.schema("id long, name string, score double, _kind string")
                  .option("maxFilesPerTrigger", 1).json(str(_inputs(tmp_path / f"in-{name}", start, 200, name))))
        queries.append(source.writeStream.format("tablelog").option("warehouse", str(warehouse))
                       .option("table", "db.shared").option("checkpointLocation", str(tmp_path / f"ck-{name}"))
                       .trigger(availableNow=True).start())
    errors: list[Any] = []
    waiters = [threading.Thread(target=lambda q=q: (q.awaitTermination(240), errors.append(q.exception())))
               for q in queries]
    for waiter in waiters:
        waiter.start()
    for waiter in waiters:
        waiter.join(260)
    assert errors == [None, None]
    table = tablelog.open_table(str(warehouse), "db.shared")
    expected = Counter([*range(200), *range(10_000, 10_200)])
    assert Counter(r["id"] for r in table.rows().to_pylist()) == expected
    writers = Counter(s.properties.get("tablelog.writing.writer") for s in table.snapshots())
    assert len(writers) == 2 and sorted(writers.values()) == [2, 2]  # two micro-batches per query
    changes = collect_stream(spark.readStream.format("tablelog").option("warehouse", str(warehouse))
                             .option("table", "db.shared").option("scan.mode", "earliest").load(),
                             tmp_path / "ck-read")
    assert Counter(c["id"] for c in changes) == expected
    assert verify(table).consistent


def test_a_secret_option_never_shows_in_the_spark_plan_or_its_logs(
    spark: Any, tmp_path: Path, tansu: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    warehouse = tmp_path / "wh"
    options = {"log.system": "kafka", "kafka.bootstrap.servers": tansu.bootstrap}
    table = tablelog.create_table(str(warehouse), "db.spark_secret", SCHEMA,
                                  primary_key=["id"], bucket=2, options=options)
    with table.writer() as writer:
        writer.write([{"id": i, "name": "x", "score": 1.0} for i in range(10)])
        writer.commit()
    reader = (spark.read.format("tablelog").option("warehouse", str(warehouse))
              .option("table", "db.spark_secret").option("kafka.sasl.password", SENTINEL)
              .option("kafka.ssl.key.password", SENTINEL))
    df = reader.load()
    assert df.count() == 10
    stream = (spark.readStream.format("tablelog").option("warehouse", str(warehouse))
              .option("table", "db.spark_secret").option("kafka.sasl.password", SENTINEL).load())
    texts = [
        df._jdf.queryExecution().toString(),
        df._jdf.queryExecution().simpleString(),
        stream._jdf.queryExecution().toString(),
        str(df.schema), repr(df),
    ]
    for mode in ("simple", "extended", "formatted", "cost"):
        df.explain(mode=mode)
        stream.explain(mode=mode)
    out, err = capfd.readouterr()
    texts += [out, err]
    assert "tablelog" in texts[0].lower() or "python" in texts[0].lower(), texts[0]  # the source is in the plan
    for text in texts:
        assert SENTINEL not in text, text[:2000]
