"""Warehouses: directories of Paimon databases and tables.

A warehouse is given as a local path, a ``file://`` URL or an ``s3://bucket/path`` URL;
:func:`warehouse_path` is the one place that turns what a user typed into the directory
or object-store URL, or refuses it. An ``s3://`` warehouse takes its connection from the
``s3.*`` options (:mod:`tablelog.store.s3`), runtime options never stored in a table.
:class:`Warehouse` creates and opens its tables (:class:`~tablelog.store.table.PaimonTable`).
tablelog keeps its own options as Paimon table properties; secrets are never stored:
they are given again when a table is opened.
"""

from __future__ import annotations

import functools
import os
import re
import stat
import urllib.parse
from collections.abc import Iterator, Mapping
from functools import cached_property
from typing import Any

import attrs
import pyarrow as pa

from tablelog.errors import OptionError, TableExistsError, TableNotFoundError, WarehouseError
from tablelog.redaction import is_secret
from tablelog.store.layout import THIN_MODE
from tablelog.store.metadata import MainBranchSchemas
from tablelog.store.pypaimon_internals import schema_ids, use_s3_timeouts
from tablelog.store.schema_files import create_first_schema
from tablelog.store.table import PaimonTable

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


#: What a warehouse may be, for error messages.
SUPPORTED_WAREHOUSES = (
    "a local directory path, a file:// URL (file:///data/wh) or an s3:// URL (s3://bucket/wh)"
)

# A URL scheme followed by a slash: "s3://b/wh", "file:///x", "hdfs:/x". A local
# relative path such as "data:2024/wh" has no slash after its colon and stays a path,
# but not one that starts with the scheme of a file system: "s3:bucket/wh" and
# "file:wh" are URLs written wrong, not folders to create.
_STORAGE_SCHEMES = (
    "file", "s3", "s3a", "s3n", "hdfs", "webhdfs", "viewfs", "gs", "gcs", "abfs", "abfss", "wasb",
    "wasbs", "adl", "oss", "cos", "cosn", "obs", "http", "https", "ftp", "sftp",
)
_URL_SCHEME = re.compile(rf"([A-Za-z][A-Za-z0-9+.-]*):/|({'|'.join(_STORAGE_SCHEMES)}):", re.IGNORECASE)


def is_object_store(location: str) -> bool:
    """Whether the warehouse ``location`` (as :func:`warehouse_path` returns it) is an
    object store rather than a local directory."""
    return location.startswith("s3://")


def warehouse_path(location: str) -> str:
    """The absolute local directory of the warehouse ``location``, or its ``s3://`` URL.

    A local path (``~`` expanded, relative to the working directory), a ``file://``
    URL without a host, or ``s3://bucket/path`` (``s3a://`` and trailing slashes
    normalized away). Other schemes are refused rather than taken as a relative
    path: ``hdfs://nn/wh`` would otherwise become the local folder ``./hdfs:/nn/wh``;
    so is a local path that is a file, lies under one, or cannot be read.
    """
    text = str(location).strip()
    if not text:
        raise WarehouseError(f"the warehouse is empty; give {SUPPORTED_WAREHOUSES}")
    match = _URL_SCHEME.match(text)
    if match is None:
        return _usable_directory(os.path.abspath(os.path.expanduser(text)))
    scheme = match[1] or match[2]
    if scheme.lower() in ("s3", "s3a"):
        return _s3_url(text)
    if scheme.lower() != "file":
        raise WarehouseError(
            f"warehouse {text!r}: the URL scheme {scheme!r} is not supported; "
            f"a warehouse is {SUPPORTED_WAREHOUSES}"
        )
    url = urllib.parse.urlsplit(text)
    if url.netloc not in ("", "localhost"):
        raise WarehouseError(
            f"warehouse {text!r}: a file:// URL names a local directory, not the host {url.netloc!r}; "
            "write file:///path (three slashes)"
        )
    if url.query or url.fragment:
        raise WarehouseError(f"warehouse {text!r}: a file:// URL takes no '?' query or '#' fragment")
    path = urllib.parse.unquote(url.path)
    if not path.startswith("/"):
        raise WarehouseError(f"warehouse {text!r}: a file:// URL needs an absolute path (file:///data/wh)")
    return _usable_directory(os.path.abspath(path))


def _usable_directory(path: str) -> str:
    """``path``, unless it cannot be a warehouse directory: it is a file, or under one, or
    this process may not read it. Refused here, in the one place every entry point goes
    through, rather than as "the table does not exist" when a table is opened, or as
    whatever error the first write into it happens to raise."""
    problem = _directory_problem(path)
    if problem is not None:
        raise WarehouseError(f"warehouse {path!r} {problem}")
    return path


def _directory_problem(path: str) -> str | None:
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return None  # created with the first table
    except NotADirectoryError:
        above = os.path.dirname(path)
        while os.path.dirname(above) != above and not os.path.isfile(above):
            above = os.path.dirname(above)
        return f"cannot be a directory: {above!r} is a file, not a directory"
    except PermissionError:
        return "cannot be reached: this process may not read a directory on its path (permission denied)"
    if not stat.S_ISDIR(mode):
        what = "is a file, not a directory" if stat.S_ISREG(mode) else "is not a directory"
        return f"{what}; give a directory (an existing one, or one that can be created)"
    if not os.access(path, os.R_OK | os.X_OK):
        return "cannot be read: this process may not read the directory (permission denied)"
    return None


def _s3_url(text: str) -> str:
    url = urllib.parse.urlsplit(text)
    if not url.netloc:
        raise WarehouseError(f"warehouse {text!r}: an s3:// URL names a bucket: s3://bucket/path")
    if url.query or url.fragment:
        raise WarehouseError(f"warehouse {text!r}: an s3:// URL takes no '?' query or '#' fragment")
    path = url.path.strip("/")
    return f"s3://{url.netloc}/{path}" if path else f"s3://{url.netloc}"


@attrs.define
class Warehouse:
    """A directory of Paimon databases and tables, local or on S3 (see :func:`warehouse_path`).

    ``storage_options``: the ``s3.*`` connection options of an ``s3://`` warehouse (with
    the AWS environment variables as defaults); never stored in a table.
    """

    path: str
    storage_options: Mapping[str, str] = attrs.field(factory=dict, repr=False)

    def __attrs_post_init__(self) -> None:
        self.path = warehouse_path(self.path)
        if self.storage_options and not self.on_object_store:
            raise OptionError(
                f"options {', '.join(sorted(self.storage_options))} are for an s3:// warehouse; "
                f"warehouse {self.path!r} is a local directory"
            )

    @property
    def on_object_store(self) -> bool:
        return is_object_store(self.path)

    @cached_property
    def s3_settings(self) -> dict[str, str]:
        from tablelog.store.s3 import s3_settings

        return s3_settings(self.storage_options)

    @cached_property
    def s3_client(self) -> Any:
        """The boto3 client of an ``s3://`` warehouse (the store is checked to honour
        conditional puts before the first one: :func:`tablelog.store.s3.create_if_absent`),
        its endpoint's certificate checked once (:func:`tablelog.store.s3_trust.check_trusted`)."""
        from tablelog.store.s3 import boto3_client, split_s3_url
        from tablelog.store.s3_trust import check_trusted

        client = boto3_client(self.s3_settings)
        check_trusted(client, self.s3_settings, split_s3_url(self.path)[0], self.path)
        return client

    @cached_property
    def file_io(self) -> Any:
        """pypaimon's file IO of this warehouse, as its catalog makes it, without the
        catalog: importing that imports pandas (see :mod:`tablelog.store.table`)."""
        from pypaimon.common.file_io import FileIO
        from pypaimon.common.options import Options

        if self.on_object_store:
            self.s3_client  # noqa: B018 -- boto3 present and the endpoint trusted, before any table file
            use_s3_timeouts()
            return FileIO.get(self.path, Options({"warehouse": self.path, **self.s3_settings}))
        return FileIO.get(self.path, Options({"warehouse": self.path}))

    @cached_property
    def catalog(self) -> Any:
        from pypaimon import CatalogFactory

        if self.on_object_store:
            self.s3_client  # noqa: B018 -- boto3 present and the endpoint trusted, before any table file
            use_s3_timeouts()
            return CatalogFactory.create({"warehouse": self.path, **self.s3_settings})
        os.makedirs(self.path, exist_ok=True)
        return CatalogFactory.create({"warehouse": self.path})

    def _join(self, *parts: str) -> str:
        return "/".join([self.path.rstrip("/"), *parts])

    def _list_dirs(self, location: str) -> list[str]:
        if not self.on_object_store:
            return sorted(os.listdir(location)) if os.path.isdir(location) else []
        bucket_prefix = location.removeprefix("s3://").rstrip("/") + "/"
        bucket, _, prefix = bucket_prefix.partition("/")
        paginator = self.s3_client.get_paginator("list_objects_v2")
        names: set[str] = set()
        for page in paginator.paginate(Bucket=bucket, Prefix=prefix, Delimiter="/"):
            for common in page.get("CommonPrefixes", []):
                names.add(common["Prefix"][len(prefix):].rstrip("/"))
        return sorted(names)

    def exists(self, identifier: str) -> bool:
        db, name = parse_identifier(identifier)
        return self._has_schema(self._join(f"{db}.db", name))

    def _has_schema(self, table_path: str) -> bool:
        """Whether the table at ``table_path`` has a schema file: its ``schema`` directory
        exists a moment before its first schema file, while another process creates it."""
        return bool(schema_ids(MainBranchSchemas(self.file_io, table_path)))

    def create(
        self,
        identifier: str,
        schema: pa.Schema,
        primary_key: tuple[str, ...],
        bucket: int,
        properties: Mapping[str, str],
        *,
        partition_keys: tuple[str, ...] = (),
    ) -> PaimonTable:
        from pypaimon import Schema

        db, name = parse_identifier(identifier)
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
            # Row kinds go to Paimon's own _VALUE_KIND (store.writes): no column of tablelog's.
            # Every tablelog writer writes the layout the table declares (store.layout):
            # thin, as pypaimon-rust's writer does, unless the user chose the key columns
            # (or pypaimon needs them: it reads `row` files by position).
            options.setdefault(THIN_MODE, "false" if options.get("file.format") == "row" else "true")
        elif bucket > 0:  # Paimon allows no bucket key with dynamic buckets
            # Paimon refuses partition columns in the bucket key.
            options.setdefault("bucket-key", ",".join(n for n in schema.names if n not in partition_keys))
        if native_write_available():
            options.setdefault("write.native.enabled", "true")
        paimon_schema = Schema.from_pyarrow_schema(
            pa.schema(fields), partition_keys=list(partition_keys) or None, primary_keys=list(primary_key) or None,
            options=options,
        )
        try:
            self.catalog.create_database(db, True)
            created = create_first_schema(self.file_io, self._join(f"{db}.db", name), paimon_schema,
                                          self.s3_client if self.on_object_store else None)
        except OSError as err:
            if self.on_object_store:
                raise
            raise WarehouseError(
                f"warehouse {self.path!r}: cannot create table {identifier!r}: {err.strerror or err}"
                + (f" ({err.filename})" if err.filename else "")
                + "; the warehouse must be a directory this process can create, read and write"
            ) from err
        if not created:
            raise TableExistsError(f"table {identifier!r} already exists in warehouse {self.path!r}")
        return self.open(identifier)

    def open(self, identifier: str) -> PaimonTable:
        db, name = parse_identifier(identifier)
        path = self._join(f"{db}.db", name)
        schema = MainBranchSchemas(self.file_io, path).latest()  # None: no schema directory
        if schema is None:
            raise TableNotFoundError(f"table {identifier!r} does not exist in warehouse {self.path!r}")
        return PaimonTable(identifier, self.file_io, path, schema, functools.partial(self._data_table, identifier),
                           self.s3_client if self.on_object_store else None,
                           self._write_timeout_s())

    def _write_timeout_s(self) -> float | None:
        """``s3.write-timeout`` of an object-store warehouse; None for a local one."""
        if not self.on_object_store:
            return None
        from tablelog.store.s3 import s3_timeouts

        return s3_timeouts(self.s3_settings).write_s

    def _data_table(self, identifier: str, table_schema: Any) -> Any:
        """pypaimon's ``FileStoreTable`` of ``identifier`` in ``table_schema``, as its
        filesystem catalog's ``get_table`` builds it for the latest schema."""
        from pypaimon.catalog.catalog_environment import CatalogEnvironment
        from pypaimon.catalog.filesystem_catalog_loader import FileSystemCatalogLoader
        from pypaimon.common.identifier import Identifier
        from pypaimon.table.file_store_table import FileStoreTable

        catalog = self.catalog
        name = Identifier.from_string(identifier)
        environment = CatalogEnvironment(identifier=name, uuid=None,
                                         catalog_loader=FileSystemCatalogLoader(catalog.catalog_context),
                                         supports_version_management=False)
        # The warehouse's one file IO (the catalog makes an equal one): the table's data
        # files and its metadata go through the same client.
        return FileStoreTable(self.file_io, name, catalog.get_table_path(name), table_schema, environment)

    def tables(self) -> Iterator[str]:
        for entry in self._list_dirs(self.path):
            if entry.endswith(".db"):
                for name in self._list_dirs(self._join(entry)):
                    if self._has_schema(self._join(entry, name)):
                        yield f"{entry[:-3]}.{name}"
