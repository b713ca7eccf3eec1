"""Show: a Spark streaming pipeline into a Kafka-logged table whose schema changes between
micro-batches (a column added with ``tablelog alter``, a rename, then a DataFrame with an
extra column and ``mergeSchema = true``), with one transactional reader running across
all of it. Every change comes back exactly once, the records of older schemas with nulls
for the columns they lacked and under the new names; pypaimon alone reads the table
right after every change of schema."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pypaimon import CatalogFactory

import tablelog
from tablelog import AddColumn, RenameColumn
from tablelog.table import internals
from tablelog.testing.spark_inputs import collect_stream
from tablelog.testing.spark_scenarios import spark_test_session

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

ROWS_PER_ROUND = 40


@pytest.fixture(scope="module")
def spark_session() -> Iterator[Any]:
    yield spark_test_session("local[2,2]")


def rows_of_round(n: int, **columns: Any) -> list[dict[str, Any]]:
    """Round ``n``: ``ROWS_PER_ROUND`` changes, an update of a quarter of the round
    before's ids and new ids."""
    updates = [{"id": (n - 1) * 1000 + i, "qty": n, **columns} for i in range(0, ROWS_PER_ROUND, 4)] if n else []
    new = [{"id": n * 1000 + i, "qty": n, **columns} for i in range(ROWS_PER_ROUND - len(updates))]
    return new + updates


def plain_pypaimon_rows(warehouse: Path, identifier: str) -> list[dict[str, Any]]:
    paimon = CatalogFactory.create({"warehouse": str(warehouse)}).get_table(identifier)
    builder = paimon.new_read_builder()
    rows = builder.new_read().to_arrow(builder.new_scan().plan().splits()).to_pylist()
    return sorted(({k: v for k, v in r.items() if k != "_tablelog_kind"} for r in rows), key=lambda r: r["id"])


class Pipeline:
    """Rounds of a streaming query (JSON files in, the tablelog sink out), each run to its
    end with availableNow on the same checkpoint: one micro-batch per round."""

    def __init__(self, spark: Any, tmp_path: Path, kafka: str) -> None:
        self.spark, self.kafka = spark, kafka
        self.inputs, self.checkpoint = tmp_path / "in", tmp_path / "ck"
        self.warehouse = tmp_path / "wh"
        self.inputs.mkdir()
        self.round = 0

    def run(self, rows: list[dict[str, Any]], schema: str, other_query: Path | None = None, **options: str) -> None:
        """One round; ``other_query``: in another query (its own input and checkpoint there)."""
        inputs = self.inputs if other_query is None else other_query / "in"
        inputs.mkdir(parents=True, exist_ok=True)
        (inputs / f"round{self.round}.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
        if other_query is None:
            self.round += 1
        source = self.spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).json(str(inputs))
        writer = (source.writeStream.format("tablelog").option("warehouse", str(self.warehouse))
                  .option("table", "db.orders").option("primary-key", "id").option("bucket", "2")
                  .option("log.system", "kafka").option("kafka.bootstrap.servers", self.kafka)
                  .option("checkpointLocation", str(self.checkpoint if other_query is None else other_query / "ck")))
        for key, value in options.items():
            writer = writer.option(key, value)
        query = writer.trigger(availableNow=True).start()
        try:
            query.awaitTermination(300)
        except Exception as err:  # the query failed: its message, for the test to match
            raise AssertionError(str(err)) from None
        assert query.exception() is None


def test_a_streaming_pipeline_across_an_added_and_a_renamed_column_delivers_every_change_once(
    spark_session: Any, tmp_path: Path, kafka_bootstrap: str
) -> None:
    pipeline = Pipeline(spark_session, tmp_path, kafka_bootstrap)
    runtime = {"kafka.bootstrap.servers": kafka_bootstrap}
    # Round 0 creates the table: id, name, qty.
    pipeline.run(rows_of_round(0, name="n0"), "id long, name string, qty long")
    table = tablelog.open_table(str(pipeline.warehouse), "db.orders", runtime)
    reader = table.reader(scan_mode="earliest")  # transactional; runs across every round
    seen = [c for c in reader.read_all(idle_timeout_s=0.3)]
    assert len(seen) == ROWS_PER_ROUND and reader.schema.names == ["id", "name", "qty"]

    # Between micro-batches: add a column. The same query (without it) writes null there.
    table.alter(AddColumn("note", pa.string()))
    assert plain_pypaimon_rows(pipeline.warehouse, "db.orders")[0]["note"] is None
    pipeline.run(rows_of_round(1, name="n1"), "id long, name string, qty long")
    seen += reader.read_all(idle_timeout_s=0.3)
    assert reader.schema.names == ["id", "name", "qty", "note"]

    # Rename. The old query's DataFrame now names a column the table no longer has.
    table.alter(RenameColumn("name", "label"))
    assert "label" in plain_pypaimon_rows(pipeline.warehouse, "db.orders")[0]
    before = [s.id for s in table.snapshots()]
    with pytest.raises(AssertionError, match=r"unknown columns \['name'\]"):
        pipeline.run(rows_of_round(2, name="n2"), "id long, name string, qty long", other_query=tmp_path / "old")
    assert [s.id for s in table.snapshots()] == before  # refused before any task: nothing written
    pipeline.run(rows_of_round(2, label="l2", note="x2"), "id long, label string, qty long, note string")
    # A DataFrame with an extra column: added by mergeSchema = true before the write.
    pipeline.run(rows_of_round(3, label="l3", note="x3", tag="t3"),
                 "id long, label string, qty long, note string, tag string", mergeSchema="true")
    seen += reader.read_all(idle_timeout_s=0.3)
    reader.close()
    assert reader.schema.names == ["id", "label", "qty", "note", "tag"]

    # Every change exactly once, the older ones mapped into the reader's schema of when it
    # returned them; a reader started now returns them all in the latest schema.
    written = [r for n in range(4) for r in rows_of_round(n)]
    assert len(seen) == len(written) == 4 * ROWS_PER_ROUND
    assert Counter((c.row["id"], c.row["qty"]) for c in seen) == Counter((r["id"], r["qty"]) for r in written)
    with tablelog.open_table(str(pipeline.warehouse), "db.orders", runtime).reader(scan_mode="earliest") as fresh:
        replayed = fresh.read_all(idle_timeout_s=0.3)
    assert len(replayed) == 4 * ROWS_PER_ROUND
    by_round = Counter((c.row["qty"], c.row["label"], c.row["note"], c.row["tag"]) for c in replayed)
    assert by_round == Counter({
        (0, "n0", None, None): ROWS_PER_ROUND, (1, "n1", None, None): ROWS_PER_ROUND,
        (2, "l2", "x2", None): ROWS_PER_ROUND, (3, "l3", "x3", "t3"): ROWS_PER_ROUND,
    })
    final = plain_pypaimon_rows(pipeline.warehouse, "db.orders")
    assert internals(table).refresh_schema()  # mergeSchema altered the table in Spark: this object takes it now
    assert final == sorted((dict(r) for r in table.rows().to_pylist()), key=lambda r: r["id"])
    assert {r["qty"] for r in final} == {0, 1, 2, 3} and all(set(r) == {"id", "label", "qty", "note", "tag"} for r in final)

    # The Spark source, started now, returns the latest columns for every row, and every
    # change of every schema once in them.
    batch = (spark_session.read.format("tablelog").option("warehouse", str(pipeline.warehouse))
             .option("table", "db.orders").option("kafka.bootstrap.servers", kafka_bootstrap).load())
    assert batch.columns == ["_kind", "id", "label", "qty", "note", "tag"] and batch.count() == len(final)
    stream = (spark_session.readStream.format("tablelog").option("warehouse", str(pipeline.warehouse))
              .option("table", "db.orders").option("kafka.bootstrap.servers", kafka_bootstrap)
              .option("scan.mode", "earliest").load())
    streamed = collect_stream(stream, tmp_path / "read-ck")
    assert Counter((r["qty"], r["label"], r["note"], r["tag"]) for r in streamed) == by_round
