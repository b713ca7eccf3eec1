"""Merging a table's manifests in a commit, as Paimon's ``manifest.merge-min-count`` does.

pypaimon writes a manifest file per commit and never merges them ("manifest compaction
is handled by external maintenance"), so the base manifest list of a table committed
every minute grows by 1,440 files a day, and every read plans by opening them all. A
``COMPACT`` commit of tablelog's (:mod:`.compaction`) also rewrites the base: once it
has :data:`MERGE_MIN_COUNT` manifest files or more, their live entries (additions not
deleted since) go into as few new manifest files as the target size allows.
"""

from __future__ import annotations

import uuid
from typing import Any

#: Paimon's ``manifest.merge-min-count`` default.
MERGE_MIN_COUNT = 30


def merge_base_manifests(store_commit: Any, min_count: int = MERGE_MIN_COUNT) -> None:
    """Make pypaimon's ``FileStoreCommit`` ``store_commit`` (one commit's) write a merged
    base manifest list: its reads of a snapshot's manifests return them merged, once per
    snapshot, when there are ``min_count`` or more. The merged entries are the same
    files, so conflict detection (which reads through it too) sees the same table."""
    from pypaimon.manifest.schema.file_entry import FileEntry

    lists = store_commit.manifest_list_manager
    files = store_commit.manifest_file_manager
    read_all = lists.read_all
    merged: dict[int, list[Any]] = {}

    def read_all_merged(snapshot: Any) -> list[Any]:
        metas = list(read_all(snapshot))
        if snapshot is None or len(metas) < min_count:
            return metas
        if snapshot.id not in merged:
            entries = [
                entry for meta in metas
                for entry in files.read(meta.file_name, drop_stats=False, file_size=meta.file_size)
            ]
            live = FileEntry.merge_entries(entries)
            if any(entry.kind != 0 for entry in live):
                return metas  # a deletion of a file the base never added: leave it as it is
            merged[snapshot.id] = files.rolling_write(
                live, store_commit.manifest_target_size, f"manifest-{uuid.uuid4()}"
            )
        return merged[snapshot.id]

    lists.read_all = read_all_merged


def list_entries(paimon: Any, list_name: str, size: int | None = None) -> list[Any]:
    """The entries of every manifest file of manifest list ``list_name`` of pypaimon's
    table ``paimon`` (``size``: the list's byte size, when the snapshot records it);
    raises ``FileNotFoundError`` when the list or one of its files is gone."""
    from pypaimon.manifest.manifest_file_manager import ManifestFileManager
    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    files = ManifestFileManager(paimon)
    return [entry for manifest in ManifestListManager(paimon).read(list_name, size)
            for entry in files.read(manifest.file_name, file_size=manifest.file_size)]
