"""``normalize``: an at-least-once changelog (eventual reads) -> a correct changelog, on
Spark keyed state.

Same semantics as :class:`tablelog.normalize.Normalizer`: per primary key the state
holds the last row; a change that repeats it is a duplicate and is dropped; an
upsert of a known key becomes ``-U`` (old row) + ``+U`` (new row); a delete becomes
``-D`` with the full old row (and is dropped when the key is unknown); ``-U`` input
rows add nothing (the ``+U`` that follows carries the new row).

Built on ``transformWithStateInPandas`` (Spark 4), which needs the RocksDB state
store: :func:`normalize` sets ``spark.sql.streaming.stateStore.providerClass`` to it
when the session still has Spark's default provider.

Order: the changes of one key are applied in the order they reach the operator.
The tablelog source returns each log partition in order in one Spark partition, and
every key lives in one log partition, so a key's changes arrive in log order (Spark's
shuffle and sort keep the order of one upstream partition's rows for a key).
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from tablelog.formats.codec import KIND_COLUMN
from tablelog.records import RowKind

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame, SparkSession

STATE_STORE_PROVIDER = "spark.sql.streaming.stateStore.providerClass"
ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
_DEFAULT_PROVIDERS = {"", "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"}


def normalize(df: DataFrame, primary_key: str | Sequence[str], kind_column: str = KIND_COLUMN) -> DataFrame:
    """Normalize a changelog DataFrame (``_kind`` + the table's columns; streaming or not).

    Returns a DataFrame of the same schema holding the normalized changes; with a
    streaming input, run it in output mode ``update`` (or ``foreachBatch``). Replaying
    its output (``+I``/``+U`` set the row, ``-U``/``-D`` remove it) gives the table's rows.
    """
    keys = [primary_key] if isinstance(primary_key, str) else list(primary_key)
    if not keys:
        raise ValueError("normalize needs a primary key: without one, duplicates cannot be told apart")
    missing = [c for c in [*keys, kind_column] if c not in df.columns]
    if missing:
        raise ValueError(f"normalize: columns {missing} are not in the DataFrame (columns: {df.columns})")
    use_rocksdb(df.sparkSession)
    from pyspark.sql.types import StructType

    value_schema = StructType([f for f in df.schema.fields if f.name != kind_column])
    processor = NormalizeProcessor(value_schema, df.columns, kind_column)
    return df.groupBy(*keys).transformWithStateInPandas(
        statefulProcessor=processor, outputStructType=df.schema, outputMode="Update", timeMode="None",
    )


def use_rocksdb(spark: SparkSession) -> None:
    """Make new stateful queries of ``spark`` use the RocksDB state store (transformWithState needs it)."""
    current = spark.conf.get(STATE_STORE_PROVIDER, "") or ""
    if current in _DEFAULT_PROVIDERS:
        spark.conf.set(STATE_STORE_PROVIDER, ROCKSDB_PROVIDER)


def _plain(value: Any) -> Any:
    """A value as plain Python, so rows from pandas and from the state compare equal."""
    if value is None:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    type_name = type(value).__name__
    if type_name in ("NaTType",):
        return None
    if type_name == "Timestamp":
        return value.to_pydatetime()
    if isinstance(value, datetime.datetime | datetime.date | str | bytes | bool | int):
        return value
    item = getattr(value, "item", None)  # numpy scalars
    return _plain(item()) if callable(item) else value


try:
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor as _Base
except ImportError:  # PySpark without transformWithState
    _Base = object  # type: ignore[assignment,misc]


class NormalizeProcessor(_Base):  # type: ignore[misc,valid-type]
    """The keyed state of :func:`normalize`: one value per primary key, the last row."""

    def __init__(self, value_schema: Any, columns: Sequence[str], kind_column: str) -> None:
        self.value_schema = value_schema
        self.columns = list(columns)
        self.kind_column = kind_column
        self.value_columns = [f.name for f in value_schema.fields]

    def init(self, handle: Any) -> None:
        self.state = handle.getValueState("last_row", self.value_schema)

    def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame], timerValues: Any) -> Iterator[pd.DataFrame]:  # noqa: N802,N803
        import pandas as pd

        old: dict[str, Any] | None = None
        if self.state.exists():
            old = {c: _plain(v) for c, v in zip(self.value_columns, self.state.get(), strict=True)}
        start = old
        out: list[tuple[str, dict[str, Any]]] = []
        for frame in rows:
            # By position: PySpark 4.3 renames some columns on the way in (`_kind` arrives as `_0`).
            frame.columns = self.columns
            for record in frame.to_dict("records"):
                kind = record[self.kind_column]
                row = {c: _plain(record[c]) for c in self.value_columns}
                if kind == RowKind.UPDATE_BEFORE.value:
                    continue
                if kind == RowKind.DELETE.value:
                    if old is not None:
                        out.append((RowKind.DELETE.value, old))
                        old = None
                    continue
                if old is None:
                    out.append((RowKind.INSERT.value, row))
                elif old != row:
                    out.append((RowKind.UPDATE_BEFORE.value, old))
                    out.append((RowKind.UPDATE_AFTER.value, row))
                else:
                    continue
                old = row
        if old is None:
            if start is not None:
                self.state.clear()
        elif old != start:
            self.state.update(tuple(old[c] for c in self.value_columns))
        if out:
            data = {
                c: pd.Series([kind if c == self.kind_column else row[c] for kind, row in out], dtype=object)
                for c in self.columns
            }
            yield pd.DataFrame(data)

    def close(self) -> None:
        pass
