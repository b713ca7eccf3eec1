"""A Python streaming source that does no work, for what any Python source's query costs
Spark whatever the source does (``bench.spark_arrow`` times it beside the tablelog
reads): :class:`NoWorkSource` returns ``rows`` rows (none by default) shaped as a
tablelog read of ``bench.common.SCHEMA`` returns them (``_kind``, ``id``, ``seq``,
``payload``), in ``partitions`` Spark partitions, as the same prebuilt Arrow batch again
and again. It imports pyspark and pyarrow alone, so that Spark's planner process loads
nothing else; Spark's workers find it by the module path (run the benchmark from the
repository's root)."""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

FORMAT = "tablelog-bench-no-work"
_BATCH_ROWS = 10_000


class _OnceReader(DataSourceStreamReader):
    """One micro-batch: ``partitions`` partitions of ``rows`` rows in all."""

    def __init__(self, rows: int, partitions: int) -> None:
        self.rows, self.count = rows, partitions

    def initialOffset(self) -> dict[str, int]:  # noqa: N802 (Spark's names)
        return {"at": 0}

    def latestOffset(self) -> dict[str, int]:  # noqa: N802
        return {"at": 1}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        return [InputPartition(self.rows // self.count + (i < self.rows % self.count)) for i in range(self.count)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        rows: int = partition.value
        while rows > 0:
            batch = _batch()
            yield batch if rows >= batch.num_rows else batch.slice(0, rows)
            rows -= batch.num_rows


@cache
def _batch() -> Any:
    import pyarrow as pa

    n = _BATCH_ROWS
    return pa.RecordBatch.from_arrays(
        [pa.array(["+I"] * n, pa.string()), pa.array(range(n), pa.int64()), pa.array(range(n), pa.int64()),
         pa.array(["x" * 10] * n, pa.string())],
        names=["_kind", "id", "seq", "payload"])


class NoWorkSource(DataSource):
    """One micro-batch of options ``rows`` rows (default 0) in ``partitions`` partitions
    (default 1)."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return "_kind string, id long, seq long, payload string"

    def streamReader(self, schema: Any) -> DataSourceStreamReader:  # noqa: N802
        return _OnceReader(int(self.options.get("rows", 0)), int(self.options.get("partitions", 1)))
