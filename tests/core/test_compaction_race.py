"""Compaction racing a writer: a writer process commits in a loop (compacting after its
own commits) while this process compacts again and again. No row is lost or comes back,
every change is read once, and pypaimon alone reads the right rows afterwards."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pyarrow as pa

import tablelog
from tablelog.commit.compaction import compact
from tablelog.table import internals
from tablelog.verify import verify

COMMITS = 40


def expected_rows(commits: int) -> list[dict[str, Any]]:
    """What the writer below leaves: commit i upserts keys 3i..3i+7 and deletes key 3i+1."""
    rows: dict[int, dict[str, Any]] = {}
    for i in range(commits):
        rows.update({k: {"id": k, "v": f"c{i}"} for k in range(3 * i, 3 * i + 8)})
        rows.pop(3 * i + 1)
    return sorted(rows.values(), key=lambda r: r["id"])


WRITER = textwrap.dedent("""
    import sys, tablelog
    table = tablelog.open_table(sys.argv[1], "db.race")
    with table.writer("w") as writer:
        for i in range(int(sys.argv[2])):
            writer.write([{"id": k, "v": f"c{i}"} for k in range(3 * i, 3 * i + 8)])
            writer.write([("-D", {"id": 3 * i + 1, "v": f"c{i}"})])
            writer.commit()
""")


def test_compactions_racing_a_writer_lose_and_resurrect_no_row(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    table = tablelog.create_table(
        str(tmp_path), "db.race", schema, primary_key=["id"], bucket=2,
        options={"log.system": "filesystem", "num-sorted-run.compaction-trigger": "2"},
    )
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), str(COMMITS)],
                              stderr=subprocess.PIPE, text=True)
    ours = 0
    try:
        while writer.poll() is None:
            if compact(internals(table)).snapshot_id is not None:
                ours += 1
    finally:
        _, err = writer.communicate(timeout=300)
    assert writer.returncode == 0, err
    compact(internals(table))
    kinds = [s.commit_kind for s in table.snapshots()]
    assert kinds.count("APPEND") == COMMITS
    assert kinds.count("COMPACT") >= ours >= 1  # and the writer's own, when they won a race
    expected = expected_rows(COMMITS)
    assert table.rows().sort_by("id").to_pylist() == expected
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        changes = reader.read_all()
    assert len(changes) == COMMITS * 9
    assert verify(table).consistent

    import pypaimon

    paimon = pypaimon.CatalogFactory.create({"warehouse": str(tmp_path)}).get_table("db.race")
    builder = paimon.new_read_builder()
    read = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    assert sorted(({"id": r["id"], "v": r["v"]} for r in read.to_pylist()), key=lambda r: r["id"]) == expected
