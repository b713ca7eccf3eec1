"""Maintenance off the commit path (tablelog.commit.maintenance): a writer's commits return
while its table's maintainer compacts in the background; a write waits past
``num-sorted-run.stop-trigger``; ``write-only`` writers neither compact nor expire; a
writer closed mid-compaction leaves no new file; background errors reach the next commit.

A compaction is made slow on purpose by patching the rewrite of a pair in this process to
wait on an event (no test hook in the production code)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import tablelog
from tablelog.store.compaction import TableCompactions
from tablelog.table import Table, internals
from tablelog.verify import verify

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
WAIT_S = 30.0
#: The rewrites in the writer's process, where a test patches them (by default a child
#: process rewrites: tests/core/test_compaction_process.py).
IN_THIS_PROCESS = {"compaction.background.nice": "0"}


def make_table(tmp_path: Path, **options: str) -> Table:
    return tablelog.create_table(
        str(tmp_path), "db.t", SCHEMA, primary_key=["id"], bucket=1,
        options={"log.system": "filesystem", "num-sorted-run.compaction-trigger": "2", **options},
    )


def eventually(condition: Callable[[], Any], timeout: float = WAIT_S) -> Any:
    deadline = time.monotonic() + timeout
    while not (result := condition()):
        assert time.monotonic() < deadline, "the condition did not come true in time"
        time.sleep(0.05)
    return result


def kinds(table: Table) -> list[str]:
    return [s.commit_kind for s in table.snapshots()]


def round_rows(i: int) -> list[dict[str, Any]]:
    return [{"id": k, "v": f"c{i}"} for k in range(3 * i, 3 * i + 5)]


def expected_rows(rounds: int) -> list[dict[str, Any]]:
    rows: dict[int, dict[str, Any]] = {}
    for i in range(rounds):
        rows.update({r["id"]: r for r in round_rows(i)})
    return sorted(rows.values(), key=lambda r: r["id"])


class SlowRewrite:
    """The rewrite of a pair, patched to write its files and then wait for :attr:`release`."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.new_files: list[str] = []
        rewrite = TableCompactions.rewrite_bucket

        def slow(compactions: TableCompactions, files: Any, level: int, drop_deletes: bool, pace: Any = None) -> list[Any]:
            new = rewrite(compactions, files, level, drop_deletes, pace)
            self.new_files += [f.file_name for f in new]
            self.started.set()
            assert self.release.wait(WAIT_S)
            return new

        monkeypatch.setattr(TableCompactions, "rewrite_bucket", slow)


@pytest.fixture
def slow_rewrite(monkeypatch: pytest.MonkeyPatch) -> Iterator[SlowRewrite]:
    slow = SlowRewrite(monkeypatch)
    yield slow
    slow.release.set()


def data_files(table: Table) -> set[str]:
    return {p.name for p in (Path(table.warehouse.path) / "db.db" / "t" / "bucket-0").iterdir()}


def files_in_latest_snapshot(table: Table) -> set[str]:
    files = internals(table).files
    latest = files.latest_snapshot()
    assert latest is not None
    return {f.file_name for b in files.compactions().bucket_files(latest.id) for f in b.files}


def test_a_commit_returns_while_the_compaction_it_triggered_runs(tmp_path: Path, slow_rewrite: SlowRewrite) -> None:
    table = make_table(tmp_path, **IN_THIS_PROCESS)
    committed: list[int | None] = []
    with table.writer() as writer:

        def commit_rounds() -> None:
            for i in range(3):
                writer.write(round_rows(i))
                committed.append(writer.commit().snapshot_id)

        rounds = threading.Thread(target=commit_rounds, daemon=True)
        rounds.start()
        assert slow_rewrite.started.wait(WAIT_S)  # the second commit's runs started a compaction
        rounds.join(WAIT_S / 3)
        assert not rounds.is_alive(), "a commit waited for the compaction"
        assert committed == [1, 2, 3] and "COMPACT" not in kinds(table)
        slow_rewrite.release.set()
        eventually(lambda: "COMPACT" in kinds(table))
    assert table.rows().sort_by("id").to_pylist() == expected_rows(3)
    assert verify(table).consistent


def test_a_writer_closed_mid_compaction_commits_nothing_and_leaves_no_new_file(
    tmp_path: Path, slow_rewrite: SlowRewrite
) -> None:
    table = make_table(tmp_path, **IN_THIS_PROCESS)
    writer = table.writer()
    for i in range(2):
        writer.write(round_rows(i))
        writer.commit()
    assert slow_rewrite.started.wait(WAIT_S) and slow_rewrite.new_files
    closing = threading.Thread(target=writer.close, daemon=True)
    closing.start()
    time.sleep(0.2)
    slow_rewrite.release.set()  # the rewrite ends; the cancelled compaction goes no further
    closing.join(WAIT_S)
    assert not closing.is_alive()
    assert kinds(table) == ["APPEND", "APPEND"]
    assert not set(slow_rewrite.new_files) & data_files(table)
    assert data_files(table) == files_in_latest_snapshot(table)
    assert table.rows().sort_by("id").to_pylist() == expected_rows(2)
    assert verify(table).consistent


def test_a_write_waits_while_a_bucket_it_wrote_is_past_the_stop_trigger(
    tmp_path: Path, slow_rewrite: SlowRewrite, caplog: pytest.LogCaptureFixture
) -> None:
    table = make_table(tmp_path, **{"num-sorted-run.stop-trigger": "3"}, **IN_THIS_PROCESS)
    progress: list[str] = []
    with table.writer() as writer, caplog.at_level(logging.INFO, logger="tablelog.maintenance"):

        def rounds() -> None:
            for i in range(5):
                writer.write(round_rows(i))
                progress.append(f"wrote {i}")
                writer.commit()
                progress.append(f"committed {i}")

        writing = threading.Thread(target=rounds, daemon=True)
        writing.start()
        assert slow_rewrite.started.wait(WAIT_S)  # compacting the first 2 runs, for as long as it is held
        eventually(lambda: progress[-1:] == ["committed 3"])  # 4 runs: past the stop trigger of 3
        time.sleep(1.0)
        assert progress[-1] == "committed 3", "the write went on past the stop trigger"
        assert "the write waits for the background compaction" in caplog.text
        slow_rewrite.release.set()
        writing.join(WAIT_S)
        assert progress[-1] == "committed 4"
    assert "COMPACT" in kinds(table)
    assert table.rows().sort_by("id").to_pylist() == expected_rows(5)


def test_a_write_only_writer_neither_compacts_nor_expires_nor_waits(tmp_path: Path) -> None:
    table = make_table(tmp_path, **{"write-only": "true", "num-sorted-run.stop-trigger": "2",
                                    "snapshot.num-retained.min": "1", "snapshot.time-retained": "0 ms"})
    with table.writer() as writer:
        for i in range(8):
            writer.write(round_rows(i))
            writer.commit()
    time.sleep(0.5)  # a maintainer, if any ran, would have compacted and expired by now
    assert kinds(table) == ["APPEND"] * 8
    assert table.options.write_only and "write-only" in internals(table).files.properties
    assert table.rows().sort_by("id").to_pylist() == expected_rows(8)


def test_a_background_compaction_error_is_logged_and_returned_with_the_next_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    failed = threading.Event()

    def broken(compactions: TableCompactions, files: Any, level: int, drop_deletes: bool, pace: Any = None) -> list[Any]:
        failed.set()
        raise OSError("disk full")

    monkeypatch.setattr(TableCompactions, "rewrite_bucket", broken)
    table = make_table(tmp_path, **IN_THIS_PROCESS)
    errors: list[str | None] = []
    with caplog.at_level(logging.WARNING, logger="tablelog.maintenance"), table.writer() as writer:
        for i in range(2):
            writer.write(round_rows(i))
            errors.append(writer.commit().maintenance_error)
        assert failed.wait(WAIT_S)
        eventually(lambda: "background compaction failed" in caplog.text)
        writer.write(round_rows(2))
        result = writer.commit()
    assert errors == [None, None] and result.committed
    assert (result.maintenance_error or "").splitlines()[0] == "compaction: OSError: disk full"
    assert kinds(table) == ["APPEND"] * 3
