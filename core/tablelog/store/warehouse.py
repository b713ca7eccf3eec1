"""The table files: Apache Paimon tables through pypaimon, in a filesystem warehouse.

A warehouse is given as a local path or a ``file://`` URL; :func:`warehouse_path`
is the one place that turns what a user typed into the directory, or refuses it.

tablelog keeps its own options as Paimon table properties, and for primary-key
tables a string column ``_tablelog_kind`` that Paimon's ``rowkind.field`` reads
(so ``-U``/``-D`` rows are applied as retractions). Readers never show that
column. Secrets are never stored: they are given again when a table is opened.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import re
import urllib.parse
from collections.abc import Iterable, Iterator, Mapping
from functools import cached_property
from typing import Any

import attrs
import pyarrow as pa

from tablelog.errors import OptionError, TableNotFoundError
from tablelog.options import is_secret

KIND_FIELD = "_tablelog_kind"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


def parse_identifier(identifier: str) -> tuple[str, str]:
    """``"db.name"`` -> ``("db", "name")``, refusing anything that could leave the warehouse."""
    parts = identifier.split(".")
    if len(parts) != 2 or not all(_NAME.fullmatch(p) for p in parts):
        raise OptionError(
            f"invalid table name {identifier!r}: expected 'database.table', each part letters, "
            "digits and '_' (starting with a letter or '_')"
        )
    return parts[0], parts[1]


def native_write_available() -> bool:
    try:
        import pypaimon_rust.datafusion  # noqa: F401
    except ImportError:
        return False
    return True


@functools.cache
def paimon_option_keys() -> frozenset[str]:
    """Every table option key pypaimon knows, allowed through to the table."""
    from pypaimon.common.options.core_options import CoreOptions

    keys = set()
    for value in vars(CoreOptions).values():
        key = getattr(value, "key", None)
        if callable(key):
            try:
                keys.add(str(key()))
            except TypeError:
                continue
    return frozenset(keys)


#: What a warehouse may be, for error messages.
SUPPORTED_WAREHOUSES = "a local directory path or a file:// URL (file:///data/wh)"

# A URL scheme followed by a slash: "s3://b/wh", "file:///x", "hdfs:/x". A local
# relative path such as "data:2024/wh" has no slash after its colon and stays a path.
_URL_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):/")


def warehouse_path(location: str) -> str:
    """The absolute local directory of the warehouse ``location``.

    A local path (``~`` expanded, relative to the working directory) or a ``file://``
    URL without a host. Anything else is refused rather than taken as a relative
    path: ``s3://b/wh`` would otherwise become the local folder ``./s3:/b/wh``.
    """
    text = str(location).strip()
    if not text:
        raise OptionError(f"the warehouse is empty; give {SUPPORTED_WAREHOUSES}")
    scheme = _URL_SCHEME.match(text)
    if scheme is None:
        return os.path.abspath(os.path.expanduser(text))
    if scheme[1].lower() != "file":
        raise OptionError(
            f"warehouse {text!r}: the URL scheme {scheme[1]!r} is not supported; "
            f"a warehouse is {SUPPORTED_WAREHOUSES}"
        )
    url = urllib.parse.urlsplit(text)
    if url.netloc not in ("", "localhost"):
        raise OptionError(
            f"warehouse {text!r}: a file:// URL names a local directory, not the host {url.netloc!r}; "
            "write file:///path (three slashes)"
        )
    if url.query or url.fragment:
        raise OptionError(f"warehouse {text!r}: a file:// URL takes no '?' query or '#' fragment")
    path = urllib.parse.unquote(url.path)
    if not path.startswith("/"):
        raise OptionError(f"warehouse {text!r}: a file:// URL needs an absolute path (file:///data/wh)")
    return os.path.abspath(path)


@functools.cache
def paimon_option_default(key: str) -> str | None:
    """Paimon's default of the table option ``key`` as text, or None when it has none."""
    from pypaimon.common.options.core_options import CoreOptions

    for value in vars(CoreOptions).values():
        if callable(getattr(value, "key", None)) and value.key() == key:
            default = value.default_value() if value.has_default_value() else None
            if default is None:
                return None
            if isinstance(default, bool):
                return "true" if default else "false"
            return str(getattr(default, "value", default))
    return None


def as_stored(schema: pa.Schema) -> pa.Schema:
    """``schema`` as a Paimon table stores and returns it (``large_string`` -> ``string``...)."""
    from pypaimon import Schema
    from pypaimon.schema.data_types import PyarrowFieldParser

    return PyarrowFieldParser.from_paimon_schema(Schema.from_pyarrow_schema(schema).fields)


@attrs.define
class Warehouse:
    """A local directory of Paimon databases and tables (see :func:`warehouse_path`)."""

    path: str

    def __attrs_post_init__(self) -> None:
        self.path = warehouse_path(self.path)

    @cached_property
    def catalog(self) -> Any:
        from pypaimon import CatalogFactory

        os.makedirs(self.path, exist_ok=True)
        return CatalogFactory.create({"warehouse": self.path})

    def exists(self, identifier: str) -> bool:
        db, name = parse_identifier(identifier)
        return os.path.isdir(os.path.join(self.path, f"{db}.db", name, "schema"))

    def create(
        self,
        identifier: str,
        schema: pa.Schema,
        primary_key: tuple[str, ...],
        bucket: int,
        properties: Mapping[str, str],
    ) -> PaimonTable:
        from pypaimon import Schema

        db, _ = parse_identifier(identifier)
        leaked = [k for k in properties if is_secret(k)]
        if leaked:  # a programming error: callers strip secrets before storing
            raise OptionError(f"refusing to store secret options in the table: {leaked}")
        fields = list(schema)
        for key in primary_key:
            index = schema.get_field_index(key)
            if index < 0:
                raise OptionError(
                    f"primary-key column {key!r} is not in the schema; columns: {', '.join(schema.names)}"
                )
            fields[index] = fields[index].with_nullable(False)
        options = {"bucket": str(bucket), **properties}
        if primary_key:
            fields.append(pa.field(KIND_FIELD, pa.string()))
            options["rowkind.field"] = KIND_FIELD
        else:
            options.setdefault("bucket-key", ",".join(schema.names))
        if native_write_available():
            options.setdefault("write.native.enabled", "true")
        paimon_schema = Schema.from_pyarrow_schema(
            pa.schema(fields), primary_keys=list(primary_key) or None, options=options
        )
        self.catalog.create_database(db, True)
        self.catalog.create_table(identifier, paimon_schema, False)
        return self.open(identifier)

    def open(self, identifier: str) -> PaimonTable:
        parse_identifier(identifier)
        if not self.exists(identifier):
            raise TableNotFoundError(f"table {identifier!r} does not exist in warehouse {self.path!r}")
        return PaimonTable(identifier, self.catalog.get_table(identifier))

    def tables(self) -> Iterator[str]:
        if not os.path.isdir(self.path):
            return
        for entry in sorted(os.listdir(self.path)):
            if entry.endswith(".db"):
                for name in sorted(os.listdir(os.path.join(self.path, entry))):
                    if os.path.isdir(os.path.join(self.path, entry, name, "schema")):
                        yield f"{entry[:-3]}.{name}"


@attrs.frozen
class SnapshotInfo:
    id: int
    time_millis: int
    commit_user: str
    commit_identifier: int
    commit_kind: str
    total_record_count: int
    properties: Mapping[str, str]


def _info(snapshot: Any) -> SnapshotInfo:
    return SnapshotInfo(
        id=snapshot.id,
        time_millis=snapshot.time_millis,
        commit_user=snapshot.commit_user,
        commit_identifier=snapshot.commit_identifier,
        commit_kind=str(snapshot.commit_kind),
        total_record_count=snapshot.total_record_count or 0,
        properties=dict(snapshot.properties or {}),
    )


@attrs.define
class PaimonTable:
    """One Paimon table: schema, snapshots, rows at a snapshot."""

    identifier: str
    paimon: Any  # pypaimon FileStoreTable

    @property
    def primary_key(self) -> tuple[str, ...]:
        return tuple(self.paimon.table_schema.primary_keys or ())

    @property
    def properties(self) -> dict[str, str]:
        return dict(self.paimon.options.options.to_map())

    @property
    def bucket(self) -> int:
        return int(self.properties.get("bucket", "1"))

    @property
    def schema(self) -> pa.Schema:
        """The user-visible schema (without the row-kind column)."""
        from pypaimon.schema.data_types import PyarrowFieldParser

        full = PyarrowFieldParser.from_paimon_schema(self.paimon.table_schema.fields)
        return pa.schema([f for f in full if f.name != KIND_FIELD])

    @property
    def has_kind_field(self) -> bool:
        return self.properties.get("rowkind.field") == KIND_FIELD

    @property
    def path(self) -> str:
        return str(self.paimon.table_path)

    def first_schema_text(self) -> str:
        """The text of the table's oldest schema file (``schema-0`` unless expired):
        written once when the table was created, never rewritten."""
        manager = self.paimon.schema_manager
        first = min(manager._list_versioned_files())
        return str(self.paimon.file_io.read_file_utf8(manager._to_schema_path(first)))

    @contextlib.contextmanager
    def commit_lock(self) -> Iterator[None]:
        """An exclusive lock on this table's commits, across processes (local warehouse)."""
        fd = os.open(os.path.join(self.path, ".tablelog-commit.lock"), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def refresh(self, warehouse: Warehouse) -> PaimonTable:
        return warehouse.open(self.identifier)

    # -- snapshots -----------------------------------------------------------

    def latest_snapshot(self) -> SnapshotInfo | None:
        snapshot = self.paimon.snapshot_manager().get_latest_snapshot()
        return None if snapshot is None else _info(snapshot)

    def snapshot(self, snapshot_id: int) -> SnapshotInfo | None:
        try:
            snapshot = self.paimon.snapshot_manager().get_snapshot_by_id(snapshot_id)
        except FileNotFoundError:
            return None
        return None if snapshot is None else _info(snapshot)

    def earliest_snapshot_id(self) -> int | None:
        manager = self.paimon.snapshot_manager()
        if manager.get_latest_snapshot() is None:
            return None  # pypaimon raises rather than answer "none" for an empty table
        snapshot = manager.try_get_earliest_snapshot()
        return None if snapshot is None else int(snapshot.id)

    def snapshot_at_or_before(self, millis: int) -> SnapshotInfo | None:
        snapshot = self.paimon.snapshot_manager().earlier_or_equal_time_mills(millis)
        return None if snapshot is None else _info(snapshot)

    # -- rows ----------------------------------------------------------------

    def read_rows(self, snapshot_id: int | None = None, buckets: Iterable[int] | None = None) -> pa.Table:
        """Every row of the table at ``snapshot_id`` (default latest), without the kind column;
        with ``buckets``, only the rows of those buckets."""
        if snapshot_id is None:
            latest = self.latest_snapshot()
            if latest is None:
                return self.schema.empty_table()
            snapshot_id = latest.id
        table = self.paimon.copy({"scan.snapshot-id": str(snapshot_id)})
        builder = table.new_read_builder()
        splits = builder.new_scan().plan().splits()
        if buckets is not None:
            wanted = set(buckets)
            splits = [s for s in splits if s.bucket in wanted]
        result = builder.new_read().to_arrow(splits)
        if result is None:
            return self.schema.empty_table()
        if KIND_FIELD in result.schema.names:
            result = result.drop_columns([KIND_FIELD])
        return result.cast(self.schema)
