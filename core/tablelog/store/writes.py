"""Writing a Paimon table's data files: a :class:`TableWrite` prepares them, the
committer commits them as one snapshot (:func:`commit_files`) or drops them
(:func:`abort_files`)."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any

from tablelog.store.pypaimon_internals import with_commit_user

log = logging.getLogger("tablelog.writing.writer")

_TORN_LATEST_HINT = re.compile(r"Snapshot \d+ does not exist\.?")


class TableWrite:
    """The data files of one write attempt, prepared for one commit identifier.

    The Paimon writer is opened on the first write: an attempt that writes nothing costs nothing.
    """

    def __init__(self, identifier: str, paimon: Any) -> None:
        self._identifier = identifier
        self._paimon = paimon  # pypaimon FileStoreTable
        self._write: Any = None
        self._wrote = False

    def write_arrow(self, data: Any) -> None:
        if self._write is None:
            self._write = self._paimon.new_stream_write_builder().new_write()
        try:
            self._write.write_arrow(data)
        except ValueError as err:
            if self._wrote or not _TORN_LATEST_HINT.fullmatch(str(err).strip()):
                raise
            # pypaimon-rust's writer starts from the snapshot the table's LATEST hint names,
            # and that file is rewritten in place by every commit: read while another
            # process commits, it can name a snapshot that never existed. Nothing is
            # written yet: start over once.
            log.warning("table %r: %s; opening the Paimon writer again", self._identifier, err)
            self._write.close()
            self._write = self._paimon.new_stream_write_builder().new_write()
            self._write.write_arrow(data)
        self._wrote = True

    def prepare_commit(self, commit_identifier: int) -> list[Any]:
        """The commit messages of the files written (picklable: they travel to the committer)."""
        if self._write is None:
            return []
        return list(self._write.prepare_commit(commit_identifier))

    def close(self) -> None:
        write, self._write = self._write, None
        if write is not None:
            write.close()


def commit_files(
    paimon: Any, messages: Sequence[Any], commit_user: str, commit_identifier: int, properties: Mapping[str, str],
    snapshot_commit: Any = None,
) -> None:
    """Commit ``messages`` as one snapshot. With ``snapshot_commit`` (an object-store
    warehouse's conditional commit), that creates the snapshot file, in one attempt:
    a lost race raises, and the caller re-reads the table before trying again. No
    ``messages``: a snapshot of properties alone (a log attached to the table,
    :mod:`tablelog.log_change`), which Paimon otherwise skips as an empty commit."""
    if not messages:
        paimon = paimon.copy({"snapshot.ignore-empty-commit": "false"})
    builder = with_commit_user(paimon.new_stream_write_builder(), commit_user)
    commit = builder.new_commit()
    if snapshot_commit is not None:
        # Only the snapshot commit is swapped, not the table's CatalogEnvironment: the
        # native (pypaimon-rust) write path keeps its own.
        commit.file_store_commit.snapshot_commit = snapshot_commit
        commit.file_store_commit.commit_max_retries = 0
    try:
        commit.commit(list(messages), commit_identifier, snapshot_properties=dict(properties))
    finally:
        commit.close()


def abort_files(paimon: Any, messages: Sequence[Any]) -> None:
    commit = paimon.new_stream_write_builder().new_commit()
    try:
        commit.abort(list(messages))
    finally:
        commit.close()
