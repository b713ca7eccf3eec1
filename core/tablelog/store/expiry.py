"""Removing expired snapshots and the files only they reference, as Apache Paimon's
``ExpireSnapshotsImpl`` and ``SnapshotDeletion`` do (pypaimon 2.1 has no expiry; this is
built on its manifest readers).

Expiring the snapshots ``begin <= id < end`` keeps snapshot ``end`` and every later one
whole. The order of deletion is Paimon's, so that a crash at any point leaves every
retained snapshot readable and the next run finishes the work:

1. data files that the deltas of snapshots ``begin < id <= end`` removed from the table
   (a compaction's or an overwrite's inputs): no snapshot from ``end`` on has them;
2. changelog files the expired snapshots added;
3. manifest files and manifest lists of the expired snapshots that snapshot ``end`` does
   not reference (a later snapshot only references manifests snapshot ``end`` has, or new
   ones); the same for index manifests and the dynamic buckets' key index (``HASH``)
   files they name: each commit that adds keys writes a bucket's whole index again;
4. the snapshot files, oldest first, and then the ``EARLIEST`` hint.

Files that were never committed (an aborted write's, orphans of a crashed writer) are
not expiry's: Paimon removes those with ``remove_orphan_files``. Other index files and
statistics files (deletion vectors, table statistics: tablelog writes neither) are kept.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Iterable
from typing import Any

import attrs

from tablelog.store.deletions import delete_files, delete_in_order, parallel_map
from tablelog.store.manifests import list_entries

log = logging.getLogger("tablelog.expiry")

_ADD = 0


@attrs.frozen
class ExpiredFiles:
    """What one expiry removed (or, in a dry run, would remove)."""

    snapshots: tuple[int, ...] = ()
    data_files: tuple[str, ...] = ()
    manifest_files: tuple[str, ...] = ()
    index_files: tuple[str, ...] = ()


class SnapshotDeletion:
    """The files of one table's expiring snapshots (Paimon's ``SnapshotDeletion``)."""

    def __init__(self, paimon: Any, *, local: bool, s3_client: Any = None) -> None:
        """``local``: a local warehouse (hints are replaced by a rename; an object store's
        put replaces a file whole by itself). ``s3_client``: an object store's, which
        deletes files a thousand at a time (:mod:`.deletions`)."""
        from pypaimon.manifest.manifest_list_manager import ManifestListManager

        self._paimon = paimon
        self._local = local
        self._s3_client = s3_client
        self._file_io = paimon.file_io
        self._snapshots = paimon.snapshot_manager()
        self._manifest_lists = ManifestListManager(paimon)
        self._manifest_dir = f"{str(paimon.table_path).rstrip('/')}/manifest"

    def snapshot(self, snapshot_id: int) -> Any:
        """The snapshot ``snapshot_id``, None when its file is gone (another expiry took it)."""
        try:
            return self._snapshots.get_snapshot_by_id(snapshot_id)
        except FileNotFoundError:
            return None

    def expire(self, begin: int, end: int, *, dry_run: bool) -> ExpiredFiles:
        """Remove the snapshots ``begin <= id < end`` and what only they reference."""
        including_end = [s for s in parallel_map(self.snapshot, range(begin, end + 1)) if s is not None]
        if not including_end:
            return ExpiredFiles()
        excluding_end = [s for s in including_end if s.id != end]
        first = including_end[0].id
        data_files = self._data_files_to_delete([s for s in including_end if s.id != first])
        data_files += self._changelog_files_to_delete(excluding_end)
        self._delete(data_files, dry_run)
        if including_end[-1].id != end:
            return ExpiredFiles(data_files=tuple(data_files))  # snapshot end is gone: another expiry ran
        manifests = self._manifests_to_delete(excluding_end, including_end[-1])
        index_manifests, index_files = self._index_files_to_delete(excluding_end, including_end[-1])
        manifests += index_manifests
        self._delete(index_files, dry_run)
        self._delete((f"{self._manifest_dir}/{name}" for name in manifests), dry_run)
        if not dry_run:
            delete_in_order(self._file_io, (self._snapshots.get_snapshot_path(s.id) for s in excluding_end),
                            self._s3_client)
            self.write_earliest_hint(end)
        return ExpiredFiles(tuple(s.id for s in excluding_end), tuple(data_files), tuple(manifests),
                            tuple(index_files))

    def write_earliest_hint(self, snapshot_id: int) -> None:
        """Paimon's ``EARLIEST`` hint: readers look for the earliest snapshot from there on.
        Replaced whole: a reader must never see it empty (pypaimon fails on an empty hint)."""
        path = f"{self._snapshots.snapshot_dir}/EARLIEST"
        if not self._local:
            self._file_io.overwrite_file_utf8(path, str(snapshot_id))
            return
        temporary = f"{path}.{uuid.uuid4().hex}.tmp"
        with open(temporary, "w") as hint:
            hint.write(str(snapshot_id))
        os.replace(temporary, path)

    # -- what to delete ----------------------------------------------------------

    def _data_files_to_delete(self, snapshots: list[Any]) -> list[str]:
        """The files each snapshot's delta removed (and did not add back: a file moved to
        another level is deleted and added in one delta)."""
        return [path for paths in parallel_map(self._removed_by, snapshots) for path in paths]

    def _removed_by(self, snapshot: Any) -> list[str]:
        removed: dict[str, list[str]] = {}
        try:
            for entry in self._entries(snapshot.delta_manifest_list, snapshot.delta_manifest_list_size):
                files = self._paths(entry)
                if entry.kind == _ADD:
                    removed.pop(files[0], None)
                else:
                    removed[files[0]] = files
        except Exception as err:  # a manifest cannot be read: delete none of this snapshot's
            log.warning("expiry: cannot read the delta of snapshot %d (%s); its removed data files "
                        "are kept", snapshot.id, err)
            return []
        return [path for files in removed.values() for path in files]

    def _changelog_files_to_delete(self, snapshots: list[Any]) -> list[str]:
        paths: list[str] = []
        for snapshot in snapshots:
            if not snapshot.changelog_manifest_list:
                continue
            try:
                entries = self._entries(snapshot.changelog_manifest_list, snapshot.changelog_manifest_list_size)
            except Exception as err:
                log.warning("expiry: cannot read the changelog of snapshot %d (%s); its files are kept",
                            snapshot.id, err)
                continue
            for entry in entries:
                if entry.kind == _ADD:
                    paths.extend(self._paths(entry))
        return paths

    def _manifests_to_delete(self, expiring: list[Any], end: Any) -> list[str]:
        """The manifest files and lists of ``expiring`` that snapshot ``end`` does not use."""
        try:
            skipping = self._manifest_names(end)
        except Exception as err:  # unsure what the retained snapshot needs: delete no manifest
            log.warning("expiry: cannot read the manifests of snapshot %d (%s); manifests are kept",
                        end.id, err)
            return []
        names: list[str] = []
        for its_names in parallel_map(lambda snapshot: self._manifest_names(snapshot, missing_ok=True), expiring):
            for name in its_names:
                if name not in skipping:
                    skipping.add(name)
                    names.append(name)
        return names

    def _index_files_to_delete(self, expiring: list[Any], end: Any) -> tuple[list[str], list[str]]:
        """The index manifests of ``expiring`` that snapshot ``end`` does not use, and the
        HASH index files they name that ``end``'s does not (an index manifest lists every
        index file of its snapshot: a later one names ``end``'s files or new ones)."""
        from pypaimon.index.dynamic_bucket import HASH_INDEX
        from pypaimon.manifest.index_manifest_file import IndexManifestFile

        manifests = IndexManifestFile(self._paimon)
        try:
            kept = {e.index_file.file_name for e in manifests.read(end.index_manifest)} if end.index_manifest else set()
        except Exception as err:  # unsure what the retained snapshot needs: delete no index file
            log.warning("expiry: cannot read the index manifest of snapshot %d (%s); index files are kept",
                        end.id, err)
            return [], []
        names: list[str] = []
        paths: list[str] = []
        for snapshot in expiring:
            name = snapshot.index_manifest
            if not name or name == end.index_manifest or name in names:
                continue
            try:
                entries = manifests.read(name)
            except Exception as err:
                log.warning("expiry: cannot read index manifest %s (%s); its index files are kept", name, err)
                continue
            for entry in entries:
                if entry.index_file.index_type == HASH_INDEX and entry.index_file.file_name not in kept:
                    kept.add(entry.index_file.file_name)
                    paths.append(self._paimon.path_factory().bucket_index_path(
                        tuple(entry.partition.values), entry.bucket, entry.index_file, self._file_io))
            names.append(name)
        return names, paths

    def _manifest_names(self, snapshot: Any, *, missing_ok: bool = False) -> set[str]:
        """A snapshot's manifest lists and the manifest files they name."""
        names: set[str] = set()
        for list_name, size in (
            (snapshot.base_manifest_list, snapshot.base_manifest_list_size),
            (snapshot.delta_manifest_list, snapshot.delta_manifest_list_size),
            (snapshot.changelog_manifest_list, snapshot.changelog_manifest_list_size),
        ):
            if not list_name:
                continue
            try:
                names.update(m.file_name for m in self._manifest_lists.read(list_name, size))
            except FileNotFoundError:
                if not missing_ok:
                    raise
            names.add(list_name)
        return names

    def _entries(self, list_name: str | None, size: int | None) -> list[Any]:
        if not list_name:
            return []
        try:
            return list_entries(self._paimon, list_name, size)
        except FileNotFoundError:
            return []  # Paimon's tryReadManifestList: a list already gone holds nothing to delete

    def _paths(self, entry: Any) -> list[str]:
        """A manifest entry's data file and its extra files, as the file IO names them."""
        from pypaimon.utils.file_store_path_factory import canonical_data_file_path

        file = entry.file
        if not file.physical_path():
            file.file_path = canonical_data_file_path(
                self._paimon, tuple(entry.partition.values), entry.bucket, file.file_name
            )
        return list(file.collect_files())

    def _delete(self, paths: Iterable[str], dry_run: bool) -> None:
        if not dry_run:
            delete_files(self._file_io, paths, self._s3_client)
