"""A compaction rewrites several (partition, bucket) pairs at once (``threads``): the
pairs' rewrites overlap, the result is one COMPACT snapshot with every row, and when one
rewrite fails, none starts after it and every pair's new files are deleted."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner

import tablelog
from tablelog.cli import cli
from tablelog.commit.compaction import compact
from tablelog.errors import OptionError
from tablelog.store.compaction import TableCompactions
from tablelog.table import Table, internals
from tablelog.verify import verify

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
BUCKETS = 4
WAIT_S = 30.0


def loaded_table(tmp_path: Path) -> tuple[Table, list[dict[str, Any]]]:
    """A 4-bucket table of 3 sorted runs a bucket (compaction off while loading): the
    table and its rows, by id."""
    table = tablelog.create_table(str(tmp_path), "db.t", SCHEMA, primary_key=["id"], bucket=BUCKETS,
                                  options={"log.system": "filesystem", "write-only": "true"})
    expected: dict[int, dict[str, Any]] = {}
    with table.writer() as writer:
        for i in range(3):
            rows = [{"id": k, "v": f"c{i}"} for k in range(20 * i, 20 * i + 40)]
            writer.write(rows)
            expected.update({r["id"]: r for r in rows})
            writer.commit()
    return table, sorted(expected.values(), key=lambda r: r["id"])


def data_files(table: Table) -> set[str]:
    root = Path(table.warehouse.path) / "db.db" / "t"
    return {p.name for b in range(BUCKETS) for p in (root / f"bucket-{b}").iterdir()}


def files_in_latest_snapshot(table: Table) -> set[str]:
    files = internals(table).files
    latest = files.latest_snapshot()
    assert latest is not None
    return {f.file_name for b in files.compactions().bucket_files(latest.id) for f in b.files}


class Overlap:
    """The rewrite of a pair, patched to count how many run at once."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, fail_bucket: int | None = None) -> None:
        self.lock = threading.Lock()
        self.running = 0
        self.most = 0
        self.together = threading.Event()  # set once two rewrites ran at the same time
        self.started: list[int] = []
        self.new_files: list[str] = []
        rewrite = TableCompactions.rewrite_bucket

        def counted(compactions: TableCompactions, files: Any, level: int, drop_deletes: bool, pace: Any = None) -> list[Any]:
            with self.lock:
                self.running += 1
                self.most = max(self.most, self.running)
                self.started.append(files.bucket)
                if self.running > 1:
                    self.together.set()
            try:
                if files.bucket == fail_bucket:
                    raise OSError("disk full")
                new = rewrite(compactions, files, level, drop_deletes, pace)
                with self.lock:
                    self.new_files += [f.file_name for f in new]
                self.together.wait(WAIT_S / 3)  # hold the thread until another rewrite has started
                return new
            finally:
                with self.lock:
                    self.running -= 1

        monkeypatch.setattr(TableCompactions, "rewrite_bucket", counted)


def test_a_compaction_on_two_threads_rewrites_two_pairs_at_once_and_keeps_every_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table, expected = loaded_table(tmp_path)
    overlap = Overlap(monkeypatch)
    result = compact(internals(table), threads=2)
    assert overlap.most == 2 and sorted(overlap.started) == list(range(BUCKETS))
    assert result.snapshot_id is not None and len(result.pairs) == BUCKETS
    assert table.rows().sort_by("id").to_pylist() == expected
    assert set(overlap.new_files) == files_in_latest_snapshot(table)
    assert verify(table).consistent


def test_a_compaction_on_one_thread_rewrites_one_pair_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table, expected = loaded_table(tmp_path)
    overlap = Overlap(monkeypatch)
    overlap.together.set()  # nothing to wait for: one thread
    compact(internals(table), threads=1)
    assert overlap.most == 1
    assert table.rows().sort_by("id").to_pylist() == expected


def test_a_failed_rewrite_among_threads_commits_nothing_and_deletes_every_pairs_new_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table, expected = loaded_table(tmp_path)
    before = data_files(table)
    overlap = Overlap(monkeypatch, fail_bucket=1)
    with pytest.raises(OSError, match="disk full"):
        compact(internals(table), threads=2)
    assert overlap.new_files, "another pair was rewritten beside the failed one"
    assert [s.commit_kind for s in table.snapshots()] == ["APPEND"] * 3
    assert data_files(table) == before
    assert table.rows().sort_by("id").to_pylist() == expected


def test_fewer_than_one_thread_is_refused_before_anything_is_read(tmp_path: Path) -> None:
    table, _ = loaded_table(tmp_path)
    with pytest.raises(OptionError, match="threads 0"):
        compact(internals(table), threads=0)


def test_tablelog_compact_takes_the_threads_to_use(tmp_path: Path) -> None:
    table, expected = loaded_table(tmp_path)
    result = CliRunner().invoke(cli, ["compact", "--warehouse", str(tmp_path), "db.t", "--threads", "2"])
    assert result.exit_code == 0, result.output
    assert "COMPACT" in [s.commit_kind for s in table.snapshots()]
    assert table.rows().sort_by("id").to_pylist() == expected
    refused = CliRunner().invoke(cli, ["compact", "--warehouse", str(tmp_path), "db.t", "--threads", "0"])
    assert refused.exit_code != 0 and "--threads" in refused.output

