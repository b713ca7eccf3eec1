"""PySpark data source ``tablelog``: write a table and its log, read its changelog.

::

    import tablelog.spark
    tablelog.spark.register(spark)
    (df.writeStream.format("tablelog")
       .option("warehouse", "/data/wh").option("table", "db.orders")
       .option("primary-key", "id").option("bucket", "4")          # when the sink creates it
       .option("log.system", "kafka").option("kafka.bootstrap.servers", "broker:9092")
       .option("checkpointLocation", "/data/ck/orders").start())
    changes = (spark.readStream.format("tablelog")
               .option("warehouse", "/data/wh").option("table", "db.orders").load())
    rows = tablelog.spark.normalize(eventual_changes, ["id"])     # eventual reads
    query = tablelog.spark.relay(spark, warehouse="/data/wh", table="db.orders")  # docs/relay.md
    tablelog.spark.compact(spark, "db.orders", warehouse="/data/wh")   # docs/compaction.md

See docs/spark.md for options, streaming semantics and exactly-once across failures.
"""

from __future__ import annotations

try:
    import pyspark  # noqa: F401
    from pyspark.sql.datasource import DataSource  # noqa: F401  (PySpark 4.0+)
except ImportError as err:
    raise ImportError(
        f'tablelog.spark needs PySpark 4.0 or newer ({err}): pip install "tablelog[spark]"'
    ) from err

from tablelog.spark.compaction import compact
from tablelog.spark.datasource import FORMAT, TablelogDataSource, register
from tablelog.spark.normalize import normalize
from tablelog.spark.relay_query import relay

__all__ = ["FORMAT", "TablelogDataSource", "compact", "normalize", "register", "relay"]
