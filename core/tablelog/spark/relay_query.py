"""``tablelog relay`` as a Spark streaming query: :func:`relay` (``tablelog.spark.relay``).

The relay is the driver's work: each micro-batch is one catch-up of :class:`tablelog.relay.Relay`
(produce the foreign snapshots' changes, commit the relay's snapshot) run by
``foreachBatch``, which Spark runs on the driver. Executors do nothing: a relay step
is a sequence (its records are produced in commit order and then committed once), and
task attempts that Spark retries or runs speculatively would produce them twice.

What Spark adds is the host: its trigger, the query's lifecycle (``stop()``,
``awaitTermination()``, a failed step fails the query) and its monitoring. The source
``tablelog-relay`` has the table's latest snapshot id as its offset, so a micro-batch
runs when the table has a new snapshot and its progress shows the snapshot ids; its rows
are the foreign snapshots the micro-batch covers (``snapshot_id``, ``commit_user``,
``commit_kind``; the relay itself does not read them). Where the relay stands is read
from the table, never from Spark's checkpoint: a query started again, with the same or
a new checkpoint, goes on where the last relay commit stopped.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSource, SimpleDataSourceStreamReader

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery
    from pyspark.sql.types import StructType

FORMAT = "tablelog-relay"
#: The source's option naming where a table never relayed starts (not a table option).
_FROM_SNAPSHOT = "relay.from-snapshot"
_SCHEMA = "snapshot_id BIGINT, commit_user STRING, commit_kind STRING"


class RelaySource(DataSource):
    """``format("tablelog-relay")``: the foreign snapshots of ``table`` in ``warehouse``,
    as a stream whose offset is the table's latest snapshot id."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return _SCHEMA

    def simpleStreamReader(self, schema: StructType) -> SimpleDataSourceStreamReader:  # noqa: N802 (Spark's name)
        return _ForeignSnapshots(dict(self.options))


class _ForeignSnapshots(SimpleDataSourceStreamReader):
    """Runs on the driver: reads the table's snapshot list only."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self._options = dict(options)

    def _files(self) -> Any:
        from tablelog.table import internals
        from tablelog.tables import open_table

        options = dict(self._options)
        warehouse, table = options.pop("warehouse"), options.pop("table")
        options.pop(_FROM_SNAPSHOT, None)
        return internals(open_table(warehouse, table, options)).files

    def initialOffset(self) -> dict[str, int]:  # noqa: N802
        from tablelog.relay.relay import first_unrelayed

        given = self._options.get(_FROM_SNAPSHOT)
        return {"snapshot": first_unrelayed(self._files(), int(given) if given else None) - 1}

    def read(self, start: dict[str, int]) -> tuple[Iterator[tuple[Any, ...]], dict[str, int]]:
        files = self._files()
        latest = files.latest_snapshot()
        end = {"snapshot": latest.id if latest is not None else start["snapshot"]}
        return self.readBetweenOffsets(start, end), end

    def readBetweenOffsets(self, start: dict[str, int], end: dict[str, int]) -> Iterator[tuple[Any, ...]]:  # noqa: N802
        from tablelog.commit.history import snapshot_commits
        from tablelog.relay.relay import is_foreign

        rows = [(s.id, s.commit_user, s.commit_kind)
                for s, record in snapshot_commits(self._files(), after=start["snapshot"], upto=end["snapshot"])
                if is_foreign(s, record is not None)]
        return iter(rows)


def relay(
    spark: SparkSession, *, warehouse: str, table: str, options: Mapping[str, str] | None = None,
    trigger_interval: str = "1 second", checkpoint_location: str | None = None, query_name: str | None = None,
    from_snapshot: int | None = None, max_snapshots: int = 100, consumer_id: str | None = None,
) -> StreamingQuery:
    """Start ``tablelog relay`` for ``table`` as a streaming query (see the module doc).

    ``options``: table options for opening it (credentials, client settings);
    ``trigger_interval``: how often a micro-batch looks for new snapshots;
    ``checkpoint_location``: Spark's (default: ``spark.sql.streaming.checkpointLocation``
    or a temporary directory: the relay's own state is in the table);
    ``from_snapshot``, ``max_snapshots``, ``consumer_id``: as :class:`tablelog.relay.Relay`.
    """
    from tablelog.relay import Relay
    from tablelog.table import internals
    from tablelog.tables import open_table

    given = dict(options or {})
    open_table(warehouse, table, given)  # bad options and a missing table fail here, not in the query
    spark.dataSource.register(RelaySource)

    # Where the last micro-batch stopped. Each one takes the relay lock for its own time only
    # (a query stopped leaves no lock behind), and goes on from there without reading the
    # snapshots back to the last relay commit.
    stopped_at: dict[str, int | None] = {"next": None}

    def relay_batch(batch: DataFrame, batch_id: int) -> None:
        with Relay(internals(open_table(warehouse, table, given)), from_snapshot=from_snapshot,
                   max_snapshots=max_snapshots, consumer_id=consumer_id, resume_from=stopped_at["next"]) as relay:
            while relay.step().relayed:
                pass
            stopped_at["next"] = relay.next_snapshot

    source = spark.readStream.format(FORMAT).option("warehouse", warehouse).option("table", table).options(**given)
    if from_snapshot is not None:
        source = source.option(_FROM_SNAPSHOT, str(from_snapshot))
    stream = source.load()
    writer = stream.writeStream.foreachBatch(relay_batch).trigger(processingTime=trigger_interval)
    if checkpoint_location is None and not spark.conf.get("spark.sql.streaming.checkpointLocation", None):
        import tempfile

        checkpoint_location = tempfile.mkdtemp(prefix="tablelog-relay-")
    if checkpoint_location is not None:
        writer = writer.option("checkpointLocation", checkpoint_location)
    if query_name is not None:
        writer = writer.queryName(query_name)
    return writer.start()
