"""Writer leases: ``log-lease/lease-<token>`` files in the table's folder, beside Paimon's
``consumer/`` files, each the JSON ``{"token": ..., "topic": {partition: position},
"projection": {partition: position}}`` of a write attempt that may still commit. The
positions are where the log ended, per partition, before the attempt produced anything:
log retention keeps every record from there on while the lease is live
(:mod:`tablelog.commit.leases`). Liveness is the file's modification time, as Paimon's
consumers expire: a writer refreshes its lease by writing it again.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Mapping
from typing import Any

import attrs

from tablelog.store.consumers import listed, modified_millis

LEASE_DIRECTORY = "log-lease"
LEASE_PREFIX = "lease-"


@attrs.frozen
class WriterLease:
    """One write attempt's hold on the log: the positions its records start at or after."""

    token: str
    #: Per partition of the table topic, the log's end before the attempt's first produce.
    topic: Mapping[int, int]
    #: The same of the projection stream (:mod:`tablelog.formats.projection`), when the table has one.
    projection: Mapping[int, int] = attrs.field(factory=dict)
    #: When the lease was last written (epoch millis; None when the store does not say).
    modified_millis: int | None = None

    def to_json(self) -> str:
        return json.dumps({
            "token": self.token,
            "topic": {str(p): int(v) for p, v in self.topic.items()},
            "projection": {str(p): int(v) for p, v in self.projection.items()},
        })

    @classmethod
    def from_json(cls, text: str, modified: int | None) -> WriterLease:
        data = json.loads(text)
        return cls(
            str(data["token"]),
            {int(p): int(v) for p, v in data["topic"].items()},
            {int(p): int(v) for p, v in data.get("projection", {}).items()},
            modified,
        )


class Leases:
    """The writer leases of one table."""

    def __init__(self, file_io: Any, table_path: str, *, local: bool) -> None:
        """``local``: a local warehouse (a lease is replaced by a rename, so that a reader
        never finds it half written; an object store's put replaces a file whole)."""
        self._file_io = file_io
        self._directory = f"{table_path.rstrip('/')}/{LEASE_DIRECTORY}"
        self._local = local

    def _path(self, token: str) -> str:
        if not token or "/" in token or token in (".", ".."):
            raise ValueError(f"a writer token is not a file name: {token!r}")
        return f"{self._directory}/{LEASE_PREFIX}{token}"

    def write(self, lease: WriterLease) -> None:
        """Write (or refresh: write again) ``lease``; it is live from now on."""
        path, text = self._path(lease.token), lease.to_json()
        if not self._local:
            self._file_io.overwrite_file_utf8(path, text)
            return
        os.makedirs(self._directory, exist_ok=True)
        temporary = f"{self._directory}/.{uuid.uuid4().hex}.tmp"
        with open(temporary, "w") as file:
            file.write(text)
        os.replace(temporary, path)

    def remove(self, token: str) -> None:
        self._file_io.delete_quietly(self._path(token))

    def all(self) -> list[WriterLease]:
        """Every lease, by token. A lease removed while listing is left out; one that
        cannot be read raises (retention must not guess what it holds)."""
        found = []
        for token, status in listed(self._file_io, self._directory, LEASE_PREFIX):
            path = f"{self._directory}/{LEASE_PREFIX}{token}"
            try:
                text = self._file_io.read_file_utf8(path)
            except OSError:
                if not self._file_io.exists(path):
                    continue  # its attempt committed or gave up meanwhile
                raise
            try:
                found.append(WriterLease.from_json(text, modified_millis(status)))
            except (ValueError, KeyError, TypeError, AttributeError) as err:
                raise ValueError(f"writer lease {path} cannot be read: {err}") from err
        return sorted(found, key=lambda lease: lease.token)
