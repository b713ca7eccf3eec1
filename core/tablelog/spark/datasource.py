"""The Python data source named ``tablelog`` and :func:`register`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSource

from tablelog.spark.options import SourceOptions
from tablelog.spark.pushdown import FILTER_PUSHDOWN_CONF

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

FORMAT = "tablelog"


class TablelogDataSource(DataSource):
    """``format("tablelog")``: options ``warehouse``, ``table`` (or the load/save path),
    table options for creation, read options ``log.consistency``, ``scan.mode``,
    ``scan.timestamp-millis``, ``columns``; ``writer.id`` for writes. See docs/spark.md."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def _options(self) -> SourceOptions:
        return SourceOptions.parse(dict(self.options))

    def schema(self) -> StructType:
        import pyarrow as pa

        from tablelog.reading.reader import selected_columns
        from tablelog.spark.schema import output_schema
        from tablelog.table import internals
        from tablelog.tables import open_table

        options = self._options()
        table = open_table(options.warehouse, options.table, options.runtime)
        # An unknown name: an error naming the table's columns.
        columns = selected_columns(internals(table), options.columns,
                                   of_some_partitions=options.table_partitions is not None)
        if columns is None:
            return output_schema(table.schema)
        return output_schema(pa.schema([f for f in table.schema if f.name in columns]))

    def reader(self, schema: StructType) -> Any:
        from tablelog.spark.source import TablelogBatchReader

        return TablelogBatchReader(self._options())

    def streamReader(self, schema: StructType) -> Any:  # noqa: N802 (Spark's name)
        from tablelog.spark.source import TablelogStreamReader

        return TablelogStreamReader(self._options())

    def writer(self, schema: StructType, overwrite: bool) -> Any:
        from tablelog.spark.sink import batch_writer

        return batch_writer(dict(self.options), schema, overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool) -> Any:  # noqa: N802
        from tablelog.spark.sink import stream_writer

        return stream_writer(dict(self.options), schema, overwrite)


def register(spark: SparkSession) -> None:
    """Register the ``tablelog`` data source in ``spark`` (once per session is enough).

    ``spark`` is a classic session or a Spark Connect one: the class goes to the server by
    reference to this module, so the server's Python must have tablelog (docs/spark.md)."""
    spark.dataSource.register(TablelogDataSource)
    # Lets a batch read of a partitioned table prune by its partition columns (spark.pushdown).
    spark.conf.set(FILTER_PUSHDOWN_CONF, "true")
