"""Warehouses: directories of Paimon databases and tables.

A warehouse is given as a local path or a ``file://`` URL; :func:`warehouse_path`
is the one place that turns what a user typed into the directory, or refuses it.
:class:`Warehouse` creates and opens its tables (:class:`~tablelog.store.table.PaimonTable`).
tablelog keeps its own options as Paimon table properties; secrets are never stored:
they are given again when a table is opened.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from collections.abc import Iterator, Mapping
from functools import cached_property
from typing import Any

import attrs
import pyarrow as pa

from tablelog.errors import OptionError, TableNotFoundError
from tablelog.options import is_secret
from tablelog.store.schema import KIND_FIELD
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
