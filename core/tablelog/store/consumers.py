"""Paimon consumers: ``consumer/consumer-<id>`` files in the table's folder, each the JSON
``{"nextSnapshot": N}`` of a reader that registered a ``consumer-id``. Stored with
pypaimon's ``ConsumerManager``, so Paimon (Java or Python) sees them too: its expiry
keeps every snapshot from a consumer's ``nextSnapshot`` on, and so does tablelog's.
"""

from __future__ import annotations

import errno
from collections.abc import Iterator
from typing import Any

import attrs

from tablelog.errors import WriteAccessError
from tablelog.store.pypaimon_internals import consumer_directory


@attrs.frozen
class ConsumerInfo:
    consumer_id: str
    next_snapshot: int
    #: When the consumer file was last written (epoch millis; None when the store does not say).
    modified_millis: int | None


class Consumers:
    """The consumers of one table."""

    def __init__(self, file_io: Any, table_path: str) -> None:
        from pypaimon.consumer import ConsumerManager

        self._file_io = file_io
        self._manager = ConsumerManager(file_io, table_path)

    def record(self, consumer_id: str, next_snapshot: int) -> None:
        """Write ``consumer_id``'s next snapshot (which also marks it seen now); a
        :class:`~tablelog.errors.WriteAccessError` where this process may only read."""
        from pypaimon.consumer import Consumer

        try:
            self._manager.reset_consumer(consumer_id, Consumer(next_snapshot=int(next_snapshot)))
        except OSError as err:
            if not refused(err):
                raise
            raise WriteAccessError(
                f"consumer-id {consumer_id!r}: the reader records its progress in "
                f"{consumer_directory(self._manager)}/{self._manager.CONSUMER_PREFIX}{consumer_id}, and "
                f"writing there was refused ({err}). A reader with a consumer-id needs the right to "
                "write and delete that folder's files (on S3: s3:PutObject and s3:DeleteObject on its "
                "keys); a reader without one needs only read access (see docs/deploying.md)"
            ) from None

    def get(self, consumer_id: str) -> int | None:
        consumer = self._manager.consumer(consumer_id)
        return None if consumer is None else int(consumer.next_snapshot)

    def delete(self, consumer_id: str) -> None:
        self._manager.delete_consumer(consumer_id)

    def all(self) -> list[ConsumerInfo]:
        """Every consumer, by id."""
        found = []
        for consumer_id, status in listed(self._file_io, consumer_directory(self._manager),
                                          self._manager.CONSUMER_PREFIX):
            consumer = self._manager.consumer(consumer_id)
            if consumer is None:
                continue  # removed while listing
            found.append(ConsumerInfo(consumer_id, int(consumer.next_snapshot), modified_millis(status)))
        return sorted(found, key=lambda c: c.consumer_id)

    def remove_unseen_since(self, millis: int) -> list[str]:
        """Remove the consumers last written before ``millis`` (Paimon's
        ``ConsumerManager.expire``); returns their ids."""
        removed = []
        for consumer in self.all():
            if consumer.modified_millis is not None and consumer.modified_millis < millis:
                self._manager.delete_consumer(consumer.consumer_id)
                removed.append(consumer.consumer_id)
        return removed


def refused(err: OSError) -> bool:
    """Whether ``err`` says the storage refused a write as not allowed: a read-only
    mount or directory, or an object store's access denial."""
    if err.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return True
    text = str(err)
    return any(mark in text for mark in ("AccessDenied", "ACCESS_DENIED", "Access Denied", "Forbidden"))


def listed(file_io: Any, directory: str, prefix: str) -> Iterator[tuple[str, Any]]:
    """The files of ``directory`` named ``<prefix><name>``: each ``name`` and its listed
    status; nothing when the directory does not exist."""
    if not file_io.exists(directory):
        return
    for status in file_io.list_status(directory):
        base = status.base_name or ""
        if base.startswith(prefix):
            yield base[len(prefix):], status


def modified_millis(status: Any) -> int | None:
    """A listed file's modification time: seconds from the local file IO, a datetime from
    pyarrow's (S3)."""
    mtime = getattr(status, "mtime", None)
    if mtime is None:
        return None
    if hasattr(mtime, "timestamp"):
        return int(mtime.timestamp() * 1000)
    return int(float(mtime) * 1000)
