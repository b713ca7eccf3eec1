"""Compaction racing writers: a writer process commits in a loop (compacting in its
background) while this process compacts again and again; two writer processes compacting
in their backgrounds; a dedicated ``tablelog compact --follow`` beside a ``write-only``
writer. No row is lost or comes back, every change is read once, and pypaimon alone reads
the right rows afterwards."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
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


OFFSET_WRITER = textwrap.dedent("""
    import sys, threading, tablelog
    table = tablelog.open_table(sys.argv[1], "db.race")
    offset = int(sys.argv[3])
    with table.writer(sys.argv[4]) as writer:
        for i in range(int(sys.argv[2])):
            writer.write([{"id": offset + k, "v": f"c{i}"} for k in range(3 * i, 3 * i + 8)])
            writer.write([("-D", {"id": offset + 3 * i + 1, "v": f"c{i}"})])
            result = writer.commit()
            assert result.committed and result.maintenance_error is None, result
        background = [t.name for t in threading.enumerate() if t.name.startswith("tablelog-maintenance")]
        assert background == [] if table.options.write_only else ["tablelog-maintenance-db.race"], background
""")


def _start_writer(warehouse: Path, commits: int, offset: int, writer_id: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", OFFSET_WRITER, str(warehouse), str(commits), str(offset), writer_id],
                            stderr=subprocess.PIPE, text=True)


def _expected_with_offsets(commits: int, offsets: list[int]) -> list[dict[str, Any]]:
    return sorted(({"id": offset + r["id"], "v": r["v"]} for offset in offsets for r in expected_rows(commits)),
                  key=lambda r: r["id"])


def _check_counted(table: tablelog.Table, commits: int, offsets: list[int]) -> None:
    """Every row once, every change read once, verify consistent, pypaimon alone agrees."""
    expected = _expected_with_offsets(commits, offsets)
    assert table.rows().sort_by("id").to_pylist() == expected
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        changes = reader.read_all()
    assert len(changes) == commits * 9 * len(offsets)
    assert verify(table).consistent
    import pypaimon

    paimon = pypaimon.CatalogFactory.create({"warehouse": table.warehouse.path}).get_table("db.race")
    builder = paimon.new_read_builder()
    read = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    assert sorted(({"id": r["id"], "v": r["v"]} for r in read.to_pylist()), key=lambda r: r["id"]) == expected


def test_background_compactions_of_two_writer_processes_lose_and_resurrect_no_row(tmp_path: Path) -> None:
    """Each writer's own background maintainer compacts the buckets both write."""
    commits, offsets = 20, [0, 100_000]
    table = tablelog.create_table(
        str(tmp_path), "db.race", pa.schema([("id", pa.int64()), ("v", pa.string())]), primary_key=["id"],
        bucket=2, options={"log.system": "filesystem", "num-sorted-run.compaction-trigger": "2"},
    )
    writers = [_start_writer(tmp_path, commits, offset, f"w{offset}") for offset in offsets]
    for writer in writers:
        _, err = writer.communicate(timeout=300)
        assert writer.returncode == 0, err[-3000:]
    kinds = [s.commit_kind for s in table.snapshots()]
    assert kinds.count("APPEND") == commits * len(offsets) and kinds.count("COMPACT") >= 2
    _check_counted(table, commits, offsets)


def test_tablelog_compact_follow_racing_a_write_only_writer_loses_nothing_and_stops_on_sigterm(
    tmp_path: Path,
) -> None:
    """Two writer runs, the second while the job has compacted the first: at least two rounds race the writes."""
    commits, offsets = 10, [0, 100_000]
    table = tablelog.create_table(
        str(tmp_path), "db.race", pa.schema([("id", pa.int64()), ("v", pa.string())]), primary_key=["id"],
        bucket=2, options={"log.system": "filesystem", "num-sorted-run.compaction-trigger": "2", "write-only": "true",
                           "snapshot.num-retained.min": "200"},
    )
    job = subprocess.Popen(
        [sys.executable, "-c", "from tablelog.cli import main; main()", "compact", "-w", str(tmp_path), "db.race",
         "--follow", "--interval", "100 ms"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy(),
    )
    try:
        assert job.stdout is not None
        started = job.stdout.readline()  # the job follows the table before the writer starts: they race
        assert started.startswith("following table"), started
        for round_, offset in enumerate(offsets, start=1):
            writer = _start_writer(tmp_path, commits, offset, f"w{offset}")
            _, err = writer.communicate(timeout=300)
            assert writer.returncode == 0, err[-3000:]
            _wait_compacted(table, job, rounds=round_)
    finally:
        job.send_signal(signal.SIGTERM)
        out, err = job.communicate(timeout=60)
    assert job.returncode == 0, err[-3000:]
    assert out.rstrip().endswith("table db.race: stopped") and "compacted bucket(s)" in out
    kinds = [s.commit_kind for s in table.snapshots()]
    assert kinds.count("APPEND") == commits * len(offsets) and kinds.count("COMPACT") >= len(offsets)
    _check_counted(table, commits, offsets)


def _wait_compacted(table: tablelog.Table, job: subprocess.Popen[str], rounds: int) -> None:
    """The job's rounds leave every bucket at most two runs, with at least `rounds` compactions committed."""
    deadline = time.monotonic() + 60
    while not (all(b.sorted_runs <= 2 for b in _buckets(table))
               and [s.commit_kind for s in table.snapshots()].count("COMPACT") >= rounds):
        assert time.monotonic() < deadline and job.poll() is None, "the job did not compact the last commits"
        time.sleep(0.1)


def _buckets(table: tablelog.Table) -> list[Any]:
    files = internals(table).files
    latest = files.latest_snapshot()
    return [] if latest is None else files.compactions().bucket_files(latest.id)
