"""What the parts below the table facade use of a table.

:class:`tablelog.table.Table` is the facade users hold; the writer, the reader, the
committer and the log pool take a table too, but import only this protocol, never
:mod:`tablelog.table`: the dependency runs one way, from the facade down. The table
they are given is the facade's :class:`~tablelog.table_internals.TableInternals`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import pyarrow as pa

    from tablelog.formats.codec import RecordCodec
    from tablelog.logs.client import LogClient
    from tablelog.options import ChangelogMode, TableOptions
    from tablelog.records import LogConfig
    from tablelog.store import TableFiles
    from tablelog.store.warehouse import Warehouse


class TableView(Protocol):
    """A table: its warehouse, its Paimon table files (``files``:
    :class:`~tablelog.store.TableFiles`), its options and its log."""

    warehouse: Warehouse
    files: TableFiles
    options: TableOptions

    @property
    def identifier(self) -> str: ...

    @property
    def schema(self) -> pa.Schema: ...

    @property
    def primary_key(self) -> tuple[str, ...]: ...

    @property
    def changelog_mode(self) -> ChangelogMode: ...

    @property
    def table_id(self) -> str: ...

    @property
    def token_prefix(self) -> str: ...

    @property
    def codec(self) -> RecordCodec: ...

    @property
    def schema_id(self) -> int: ...

    def refresh_schema(self) -> bool: ...

    def opened_again(self) -> TableView:
        """The same table with table files of its own, for another thread (the background
        maintainer, :mod:`tablelog.commit.maintenance`) than this object's users."""

    @property
    def topic(self) -> str: ...

    @property
    def log_name(self) -> tuple[str, str]: ...

    def current_log(self) -> tuple[str, str]: ...

    def check_log_unchanged(self, who: str) -> None: ...

    @property
    def log_partitions(self) -> int: ...

    def log_config(self) -> LogConfig: ...

    def open_log(self) -> LogClient: ...

    @property
    def projection(self) -> tuple[str, ...]: ...

    def projection_log_config(self) -> LogConfig: ...

    def open_projection_log(self) -> LogClient: ...

    def rows(self, snapshot_id: int | None = None, buckets: Sequence[int] | None = None) -> pa.Table: ...

    def log_partition_rows(
        self, snapshot_id: int | None, partitions: Collection[int] | None, schema_id: int | None = None,
        table_partitions: Sequence[Mapping[str, Any]] | None = None,
    ) -> pa.Table: ...

    def log_partition_changes(
        self, snapshot_id: int, partitions: Collection[int], schema_id: int | None = None
    ) -> pa.Table | None: ...
