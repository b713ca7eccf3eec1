"""What a table is below its facade: its files, options, log encoding and log.

:class:`TableInternals` is the :class:`~tablelog.table_view.TableView` the writer, the
readers, the committer and the log pool are given; :class:`tablelog.table.Table`, the
facade users hold, keeps one and shows only the user's operations. Tools above the
facade (the dashboard, ``describe``, ``verify``, Spark) reach it with
:func:`tablelog.table.internals`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

import attrs
import pyarrow as pa

from tablelog.commit.log_commit import shown_log
from tablelog.errors import LogChangedError, OptionError
from tablelog.formats import record_codec
from tablelog.formats.codec import RecordCodec
from tablelog.formats.projection import TOPIC_SUFFIX, projected_columns
from tablelog.identity import table_id, token_prefix
from tablelog.logs import discovery
from tablelog.options import ChangelogMode, TableOptions, split_system_options
from tablelog.reading.table_partitions import table_partitions
from tablelog.records import LogConfig
from tablelog.store import TableFiles, Warehouse, snapshot_changes
from tablelog.topic_owners import default_topic, stream_config
from tablelog.writing import routing

if TYPE_CHECKING:
    from tablelog.logs.client import LogClient


@attrs.define
class TableInternals:
    warehouse: Warehouse
    files: TableFiles
    options: TableOptions
    system_options: dict[str, str] = attrs.field(repr=False)
    _codec: RecordCodec | None = attrs.field(default=None, init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        self._use_lookup_cache()

    def _use_lookup_cache(self) -> None:
        """Tell the files this object's bounds of the lookup cache (given ones over stored ones)."""
        self.files.use_lookup_cache(self.options.lookup_cache_max_disk_size, self.options.lookup_cache_file_retention)

    @property
    def identifier(self) -> str:
        return self.files.identifier

    @property
    def schema(self) -> pa.Schema:
        return self.files.schema

    @property
    def primary_key(self) -> tuple[str, ...]:
        return self.files.primary_key

    @property
    def changelog_mode(self) -> ChangelogMode:
        mode = self.options.log_changelog_mode
        if mode is ChangelogMode.AUTO:
            # A log that carries the table's changelog (a merge engine, or the lookup
            # producer) carries the rows as they were too: its -U are exact, as Paimon's
            # lookup changelog files hold them.
            merged = self.files.merge_options is not None
            return ChangelogMode.UPSERT if self.primary_key and not merged else ChangelogMode.ALL
        return mode

    @cached_property
    def table_id(self) -> str:
        """The table's stable id (see :mod:`tablelog.identity`)."""
        return table_id(self.files)

    @cached_property
    def token_prefix(self) -> str:
        """What the writer tokens of this table start with (see :mod:`tablelog.identity`)."""
        return token_prefix(self.table_id)

    @property
    def schema_id(self) -> int:
        """The id of the schema this object reads and writes with (see :meth:`refresh_schema`)."""
        return self.files.schema_id

    @property
    def codec(self) -> RecordCodec:
        """The log encoding of this object's schema (records say its id)."""
        if self._codec is None:
            self._codec = record_codec(
                self.schema, self.primary_key, self.options.log_format, self.identifier, self.files.schema_id,
                self.options.log_arrow_compression,
            )
        return self._codec

    def refresh_schema(self) -> bool:
        """Take the table's latest schema if it was altered since this object was opened
        (by this process or another); True if it was. Writers call this before writing."""
        if not self.files.has_newer_schema():
            return False
        self.files = self.warehouse.open(self.identifier)
        self._use_lookup_cache()
        self._codec = None
        return True

    def opened_again(self) -> TableInternals:
        """This table with its own table files, opened again with the same options: for
        another thread, which must not share this object (its writer swaps its files at
        a schema change)."""
        return TableInternals(self.warehouse, self.warehouse.open(self.identifier), self.options, self.system_options)

    # -- the log ---------------------------------------------------------------

    @cached_property
    def topic(self) -> str:
        """The table's topic: fixed with the table (readers compare it at every snapshot)."""
        return default_topic(self.identifier, self.options.log_system, self.system_options)

    @property
    def log_name(self) -> tuple[str, str]:
        """The log this object writes and reads: (system, topic); the topic is empty without one."""
        system = self.options.log_system
        return system, self.topic if system != "none" else ""

    def current_log(self) -> tuple[str, str]:
        """The log the table has now, as :attr:`log_name`: its latest stored options, which an
        alter may have changed since this object was opened (:mod:`tablelog.log_change`)."""
        files = self.warehouse.open(self.identifier) if self.files.has_newer_schema() else self.files
        properties = files.properties
        system = properties.get("log.system", "none").strip().lower()
        if system == "none":
            return system, ""
        return system, default_topic(self.identifier, system, {
            k: v for k, v in properties.items() if k.startswith(system + ".")
        })

    def check_log_unchanged(self, who: str) -> None:
        """Refuse to write or commit when the table's log was attached, moved or detached
        since this object was opened: what ``who`` produced went to the old log (or to none),
        and committed after the change it would be in no reader's log."""
        now = self.current_log()
        if now != self.log_name:
            raise LogChangedError(
                f"table {self.identifier!r}: its log is now {shown_log(now)}, changed by an alter after "
                f"this {who} opened the table with {shown_log(self.log_name)}; nothing was committed. "
                "Open the table again and write the data again"
            )

    @property
    def log_partitions(self) -> int:
        return self.options.log_partition_count

    def log_config(self) -> LogConfig:
        system = self.options.log_system
        return LogConfig(
            system=system,
            table=self.identifier,
            topic=self.topic,
            partitions=self.log_partitions,
            auto_register=self.options.log_system_auto_register,
            options=split_system_options(system, self.system_options),
            warehouse=self.warehouse.path,
        )

    def open_log(self) -> LogClient:
        if not self.options.log_enabled:
            raise OptionError(f"table {self.identifier!r} has log.system=none: it has no log")
        system = discovery.load_log_system(self.options.log_system)
        return system.open(self.log_config())

    @property
    def projection(self) -> tuple[str, ...]:
        """The columns of the log's projection stream, the key's among them, in schema
        order; empty when the table has none (:mod:`tablelog.formats.projection`)."""
        named = self.options.log_arrow_projection
        if not named:
            return ()
        return tuple(projected_columns(self.schema, self.primary_key, named))

    def projection_log_config(self) -> LogConfig:
        return stream_config(self.log_config(), TOPIC_SUFFIX)

    def open_projection_log(self) -> LogClient:
        system = discovery.load_log_system(self.options.log_system)
        return system.open(self.projection_log_config())

    def rows(
        self, snapshot_id: int | None = None, buckets: Sequence[int] | None = None,
        partitions: Sequence[Mapping[str, Any]] | None = None,
    ) -> pa.Table:
        """The table's rows at a snapshot (default: the latest); ``buckets``: only those
        buckets'; ``partitions``: only those table partitions' (checked and typed here)."""
        files = self.files
        typed = None if partitions is None else table_partitions(self.identifier, files.partition_keys,
                                                                 files.schema, partitions)
        return files.read_rows(snapshot_id, buckets, partitions=typed)

    def log_partition_rows(
        self, snapshot_id: int | None, partitions: Collection[int] | None, schema_id: int | None = None,
        table_partitions: Sequence[Mapping[str, Any]] | None = None,
    ) -> pa.Table:
        """The table's rows at a snapshot whose log partition is in ``partitions`` (None:
        all), of ``table_partitions`` (None: all; typed already)."""
        return routing.log_partition_rows(self.files, self.log_partitions, snapshot_id, partitions, schema_id,
                                          table_partitions)

    def log_partition_changes(
        self, snapshot_id: int, partitions: Collection[int], schema_id: int | None = None
    ) -> pa.Table | None:
        """What snapshot ``snapshot_id`` changed in log ``partitions``, with row kinds, in
        schema ``schema_id`` (default the table's): the rows it added, or where the log
        carries the merged changelog, the changes of the keys it wrote
        (:func:`tablelog.store.snapshot_changes`); None: expired."""
        delta = routing.log_partition_delta(self.files, self.log_partitions, snapshot_id, partitions, schema_id)
        return None if delta is None else snapshot_changes(self.files, snapshot_id, delta, schema_id)
