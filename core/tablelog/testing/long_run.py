"""A table committed to many times, with its disk use recorded: the long-run test of
``tests/core/test_long_lived_table.py`` (a few hundred commits) and its soak version in
``tests/reliability`` (thousands) share it; ``bench.long_run`` is the timed variant."""

from __future__ import annotations

import contextlib
import os
import random
from pathlib import Path
from typing import Any

import attrs
import pyarrow as pa

from tablelog.table import Table
from tablelog.tables import create_table
from tablelog.testing import NO_COMPACTION

KEYS = 2_000
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])

#: Expiry, compaction and the file log's retention, scaled down: 20 snapshots at most,
#: and small log segments so that retention has whole segments to delete.
BOUNDED = {
    "snapshot.num-retained.min": "5",
    "snapshot.num-retained.max": "20",
    "snapshot.time-retained": "1 ms",
    "filesystem.segment-bytes": str(16 * 1024),
    # the rewrites in the writer's process: a child at nice 19 takes only the CPU the
    # machine's other work leaves, so on a busy test machine the disk use would measure
    # its lag (bounded by twice num-sorted-run.stop-trigger), not expiry and compaction
    "compaction.background.nice": "0",
}
#: The table as it was before #16: every snapshot, small file and log record kept.
UNBOUNDED = {
    "snapshot.num-retained.min": str(2**31 - 1),
    **NO_COMPACTION,
    "filesystem.segment-bytes": str(16 * 1024),
}


@attrs.frozen
class DiskUse:
    commit: int
    warehouse_bytes: int
    log_bytes: int
    snapshot_files: int


@attrs.define
class LongRun:
    """A table in ``work`` with the file log, and the rows it should hold."""

    work: Path
    options: dict[str, str]
    table: Table = attrs.field(init=False)
    expected: dict[int, str] = attrs.field(factory=dict)

    def __attrs_post_init__(self) -> None:
        self.table = create_table(str(self.work / "warehouse"), "db.t", SCHEMA, primary_key=["id"], bucket=2,
                                  options={"log.system": "filesystem", "filesystem.path": str(self.work / "log"),
                                           **self.options})

    def commit(self, commits: int, rows: int, seed: int = 7, start: int = 1) -> list[DiskUse]:
        """``commits`` commits of ``rows`` upserts of random keys; the disk use after each."""
        rng = random.Random(seed)
        uses = []
        with self.table.writer("long-run") as writer:
            for commit in range(start, start + commits):
                ids = rng.sample(range(KEYS), rows)
                values = [f"c{commit}-{i}" for i in ids]
                writer.write(pa.table({"id": ids, "v": values}, schema=SCHEMA))
                writer.commit()
                self.expected.update(zip(ids, values, strict=True))
                uses.append(self.disk_use(commit))
        return uses

    def disk_use(self, commit: int) -> DiskUse:
        snapshot_dir = self.work / "warehouse" / "db.db" / "t" / "snapshot"
        return DiskUse(commit, _bytes(self.work / "warehouse"), _bytes(self.work / "log"),
                       sum(1 for f in snapshot_dir.iterdir() if f.name.startswith("snapshot-")))

    def rows(self) -> dict[int, Any]:
        return {r["id"]: r["v"] for r in self.table.rows().to_pylist()}


def _bytes(path: Path) -> int:
    """The bytes of the files under ``path``; a file the background expiry deletes while
    they are counted counts nothing."""
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(FileNotFoundError):
                total += os.stat(os.path.join(folder, name)).st_size
    return total
