"""A Python streaming source that reads nothing: what any Python source's query costs
Spark before the source does any work (``bench.spark_arrow`` measures it beside the
tablelog reads). It imports pyspark alone, so that Spark's planner process loads nothing
else; Spark's workers find it by the module path (run the benchmark from the
repository's root)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

FORMAT = "tablelog-bench-floor"


class _NothingReader(DataSourceStreamReader):
    def initialOffset(self) -> dict[str, int]:  # noqa: N802 (Spark's names)
        return {"at": 0}

    def latestOffset(self) -> dict[str, int]:  # noqa: N802
        return {"at": 1}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        return [InputPartition(0)]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        return iter(())


class NothingSource(DataSource):
    """One micro-batch of one empty partition."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return "id long"

    def streamReader(self, schema: Any) -> DataSourceStreamReader:  # noqa: N802
        return _NothingReader()
