"""What a PySpark user writes by hand instead of the tablelog sink: a ``foreachBatch``
that writes the Paimon table with pypaimon and produces Debezium JSON with confluent-kafka.

One function per micro-batch, on the driver (where Spark runs ``foreachBatch``): the
batch collected as Arrow (``DataFrame.toArrow()``), written with a pypaimon batch write
and committed, then one ``produce`` per row of ``{"before": null, "after": row, "op":
"c", "ts_ms": ...}`` keyed by the primary key, and a ``flush``. No exactly-once: a batch
replayed after a failure commits its rows again and produces them again.

The Paimon table is the one tablelog would create for the same rows (primary key, the
same buckets, pypaimon's native writer when it is installed), so the two pipelines
differ in what they do around the Paimon write, not in the Paimon write.
"""

from __future__ import annotations

import time
from typing import Any

import orjson
import pyarrow as pa

from bench.common import unique
from tablelog.store.warehouse import native_write_available


class ForeachBatchDoubleWrite:
    """A ``foreachBatch`` function (``writeStream.foreachBatch(ForeachBatchDoubleWrite(...))``)."""

    def __init__(self, warehouse: str, schema: pa.Schema, primary_key: str, buckets: int, bootstrap: str,
                 client_options: dict[str, str] | None = None) -> None:
        from confluent_kafka import Producer
        from confluent_kafka.admin import AdminClient, NewTopic
        from pypaimon import CatalogFactory, Schema

        catalog = CatalogFactory.create({"warehouse": warehouse})
        catalog.create_database("byhand", True)
        name = f"byhand.{unique('t')}"
        fields = [f.with_nullable(False) if f.name == primary_key else f for f in schema]
        options = {"bucket": str(buckets)}
        if native_write_available():
            options["write.native.enabled"] = "true"
        catalog.create_table(name, Schema.from_pyarrow_schema(pa.schema(fields), primary_keys=[primary_key],
                                                              options=options), False)
        self.table = catalog.get_table(name)
        self.key = primary_key
        self.topic = unique("byhand")
        config: dict[str, str | int | float | bool] = {"bootstrap.servers": bootstrap, **(client_options or {})}
        admin = AdminClient(config)
        for future in admin.create_topics([NewTopic(self.topic, buckets, 1)]).values():
            future.result(30)
        self.producer = Producer({"bootstrap.servers": bootstrap})
        self.rows = 0

    def __call__(self, df: Any, batch_id: int) -> None:
        data = df.toArrow()
        if data.num_rows == 0:
            return
        builder = self.table.new_batch_write_builder()
        write, commit = builder.new_write(), builder.new_commit()
        try:
            write.write_arrow(data)
            commit.commit(write.prepare_commit())
        finally:
            write.close()
            commit.close()
        dumps, produce, key = orjson.dumps, self.producer.produce, self.key
        stamp = int(time.time() * 1000)
        for row in data.to_pylist():
            value = dumps({"before": None, "after": row, "op": "c", "ts_ms": stamp})
            while True:
                try:
                    produce(self.topic, value, dumps({key: row[key]}))
                    break
                except BufferError:  # librdkafka's queue is full: let it send
                    self.producer.poll(0.05)
        if self.producer.flush(120) != 0:
            raise RuntimeError("records left unacknowledged")
        self.rows += data.num_rows

    def close(self) -> None:
        self.producer.flush(30)
