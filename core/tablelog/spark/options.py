"""The options of the `tablelog` Spark data source: which belong to Spark and the data
source, which are table options.

Spark hands a Python data source every ``.option(...)`` with its key lower-cased and
its value a string. The keys below are the data source's own (never table options);
every other key is a table option (``log.system``, ``kafka.*``, ``primary-key``,
Paimon's own options...), parsed here once (:class:`tablelog.options.GivenOptions`)
and checked by the table that takes them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

import attrs

from tablelog.errors import OptionError
from tablelog.options import GivenOptions
from tablelog.reading.table_partitions import parse_partition_specs
from tablelog.redaction import redact
from tablelog.store import warehouse_path

#: The sink option that adds a DataFrame's extra columns to the table (Delta's and Spark's name).
MERGE_SCHEMA = "mergeschema"

#: The source option that names the columns a read returns (Spark passes a Python source
#: no projection: a query's ``select`` cannot prune what the source decodes).
COLUMNS = "columns"

#: The source option that limits a read to table partitions, as Paimon's procedures write
#: them: ``dt=2026-11-24;dt=2026-11-25``, columns of one partition separated by commas.
PARTITIONS = "partitions"

#: Keys that configure the data source (or Spark itself), never the table.
ENGINE_KEYS = frozenset({
    "warehouse", "table", "path", "checkpointlocation", "queryname", "writer.id", "consumer-id", MERGE_SCHEMA,
    COLUMNS, PARTITIONS,
})

#: Reader-side overrides of table options.
READ_KEYS = frozenset({"log.consistency", "scan.mode", "scan.timestamp-millis"})

WAREHOUSE_ENV = "TABLELOG_WAREHOUSE"

#: Set by Spark in its Python workers: the id of the session whose artifacts they use,
#: ``default`` for a classic session. Under Spark Connect each session has its own, and
#: the workers run in that session's artifact directory, deleted with the session.
ARTIFACT_SESSION_ENV = "SPARK_JOB_ARTIFACT_UUID"


@attrs.frozen
class SourceOptions:
    """The data source options of one read or write, parsed."""

    warehouse: str
    table: str
    # Every key that is not the data source's own; secrets (kafka.sasl.password,
    # s3.secret-key...) shown as ****** wherever the options are printed.
    table_options: dict[str, str] = attrs.field(repr=lambda options: repr(redact(options)))
    writer_id: str | None = None
    #: A streaming read's Paimon consumer: recorded by the driver when Spark commits a
    #: batch (never by the executors' readers).
    consumer_id: str | None = None
    #: ``mergeSchema = true``: a write adds the DataFrame's extra columns to the table first.
    merge_schema: bool = False
    #: ``columns = "a,b"``: reads return only these (and the primary key's) columns.
    columns: tuple[str, ...] | None = None
    #: ``partitions = "dt=2026-11-24;dt=2026-11-25"``: reads return only these table partitions'
    #: rows and changes (values as text; the table's reader checks and types them).
    table_partitions: tuple[dict[str, str], ...] | None = None
    #: ``table_options`` parsed, once, on the driver: what every layer below takes, down
    #: to the executors (:mod:`tablelog.options.given`).
    given: GivenOptions = attrs.field(kw_only=True, repr=False)

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SourceOptions:
        raw = {str(k).strip().lower(): str(v) for k, v in options.items()}
        warehouse = raw.get("warehouse") or os.environ.get(WAREHOUSE_ENV)
        if not warehouse:
            raise OptionError(
                "the tablelog data source needs option 'warehouse' (a warehouse directory, file:// or s3:// URL): "
                f".option('warehouse', '/path/to/warehouse'), or set {WAREHOUSE_ENV}"
            )
        refuse_session_relative(warehouse)
        table = raw.get("table") or raw.get("path")
        if not table:
            raise OptionError(
                "the tablelog data source needs option 'table' ('database.name'): "
                ".option('table', 'db.orders'), or .load('db.orders') / .save('db.orders')"
            )
        table_options = {k: v for k, v in raw.items() if k not in ENGINE_KEYS}
        writer_id = raw.get("writer.id") or None
        merge = raw.get(MERGE_SCHEMA, "false").strip().lower()
        if merge not in ("true", "false"):
            raise OptionError(f"option mergeSchema={raw[MERGE_SCHEMA]!r}: expected 'true' or 'false'")
        # Resolved on the driver: executors may run in another working directory.
        columns = None
        if COLUMNS in raw:
            columns = tuple(c.strip() for c in raw[COLUMNS].split(",") if c.strip())
            if not columns:
                raise OptionError(f"option columns={raw[COLUMNS]!r}: expected column names separated by commas")
        table_partitions = parse_partition_specs(raw[PARTITIONS], "option partitions") if PARTITIONS in raw else None
        return cls(warehouse_path(warehouse), table, table_options, writer_id, raw.get("consumer-id"),
                   merge == "true", columns, table_partitions, given=GivenOptions.parse(table_options))

    @property
    def runtime_options(self) -> dict[str, str]:
        """Options for opening an existing table: everything but the read keys. Those that
        define the table (``primary-key``, ``log.format``...) are checked against it there."""
        return {k: v for k, v in self.table_options.items() if k not in READ_KEYS}

    @property
    def runtime(self) -> GivenOptions:
        """:attr:`runtime_options`, parsed."""
        return self.given.without(READ_KEYS)

    @property
    def read_options(self) -> dict[str, str]:
        return {k: v for k, v in self.table_options.items() if k in READ_KEYS}


def refuse_session_relative(warehouse: str) -> None:
    """Refuse a relative warehouse path in a Python worker of a Spark Connect session.

    Such a worker's working directory is the session's artifact directory: a relative
    warehouse would become a folder there, and Spark deletes it, tables and all, when the
    session ends. (The client's working directory is another machine's, or unknown.)
    """
    session = os.environ.get(ARTIFACT_SESSION_ENV, "default")
    text = warehouse.strip()
    is_url = re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", text) is not None  # checked by warehouse_path
    if session == "default" or is_url or os.path.isabs(os.path.expanduser(text)):
        return
    raise OptionError(
        f"relative warehouse {warehouse!r}: over Spark Connect the tablelog data source runs on the "
        f"server, in the session's temporary directory {os.getcwd()!r} (deleted when the session ends); "
        "give the warehouse as an absolute path or a URL that the server can reach (file:///…, s3://…)"
    )
