"""An attempt's data files written by lanes beside its log (tablelog.writing.files_lane):
each lane a thread owning one write of whole buckets. A lane's failure fails the attempt
and leaves no data file; rows land in Paimon's buckets, the last write of a key winning;
an attempt dropped unfinished stops its lanes."""

from __future__ import annotations

import gc
import threading
import time
import traceback
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import tablelog
from tablelog.commit import committer
from tablelog.errors import StoreUnavailableError
from tablelog.store import TableWrite
from tablelog.store.bucket_routing import BucketRouting
from tablelog.store.integer_hash import integer_key_buckets
from tablelog.table import Table, internals
from tablelog.testing.merge_reference import read_all
from tablelog.verify import verify
from tablelog.writing import files_lane, writer
from tablelog.writing.write_task import WriteTask

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])


@pytest.fixture(autouse=True)
def two_lanes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writer, "MOST_LANES", 2)  # a Writer's, as on a machine of two cores or more


def _task(table: Table, commit_identifier: int = 1) -> WriteTask:
    return WriteTask(internals(table), "w", commit_identifier, lanes=2)


def _table(tmp_path: Path) -> Table:
    return tablelog.create_table(str(tmp_path), "db.t", SCHEMA, primary_key=["id"], bucket=4,
                                 options={"log.system": "filesystem"})


def _rows(keys: range, value: str) -> list[dict[str, Any]]:
    return [{"id": k, "v": value} for k in keys]


def _data_files(warehouse: Path) -> set[str]:
    return {p.name for p in (warehouse / "db.db" / "t").rglob("data-*")}


def _fail_in_lane(monkeypatch: pytest.MonkeyPatch, method: str, lane: int) -> None:
    """Make ``method`` of the write of lane ``lane`` (the buckets ``b % 2 == lane``) raise."""
    original_write, original = TableWrite.write_arrow, getattr(TableWrite, method)
    lanes: dict[int, int] = {}  # id of a write -> its lane

    def write_arrow(self: TableWrite, data: Any, kinds: Any = None, spans: Any = None) -> None:
        lanes[id(self)] = spans[0][0] % 2
        if method == "write_arrow" and lanes[id(self)] == lane:
            raise OSError(f"{method}: no space left on device")
        original_write(self, data, kinds, spans)

    def failing(self: TableWrite, *args: Any) -> Any:
        if lanes.get(id(self)) == lane:
            raise OSError(f"{method}: no space left on device")
        return original(self, *args)

    monkeypatch.setattr(TableWrite, "write_arrow", write_arrow)
    if method != "write_arrow":
        monkeypatch.setattr(TableWrite, method, failing)


def test_a_lane_failing_to_write_fails_the_attempt_at_its_next_write_and_commit_and_leaves_no_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(files_lane, "HOLD_BYTES", 0)  # the lanes write each batch as it comes
    table = _table(tmp_path)
    with table.writer("w") as writer:
        writer.write(_rows(range(100), "a"))
        writer.commit()
        before, rows = _data_files(tmp_path), table.rows()
        writer.write(_rows(range(100, 200), "b"))  # written by both lanes, prepared at the commit
        _fail_in_lane(monkeypatch, "write_arrow", 1)
        deadline = time.monotonic() + 10
        with pytest.raises(OSError, match="no space left on device"):
            while time.monotonic() < deadline:  # the lanes write beside: a later write hears of it
                writer.write(_rows(range(200, 210), "c"))
        with pytest.raises(OSError, match="no space left on device"):
            writer.commit()  # the attempt failed: nothing of it is committed
        assert _data_files(tmp_path) == before
        assert table.rows().equals(rows)
        monkeypatch.undo()
        writer.write(_rows(range(300, 310), "d"))  # the next round is a new attempt
        writer.commit()
    assert sorted(r["id"] for r in table.rows().to_pylist()) == [*range(100), *range(300, 310)]
    assert sorted(c.row["id"] for c in read_all(table)) == [*range(100), *range(300, 310)]
    assert verify(table).consistent


def test_a_lane_failing_to_write_the_rows_it_held_fails_the_commit_and_leaves_no_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    table = _table(tmp_path)
    _fail_in_lane(monkeypatch, "write_arrow", 0)
    with table.writer("w") as writer:
        writer.write(_rows(range(100), "a"))  # held by the lanes: written at the commit
        with pytest.raises(OSError, match="no space left on device"):
            writer.commit()
    assert _data_files(tmp_path) == set()
    assert table.rows().num_rows == 0 and read_all(table) == [] and read_all(table, "eventual")


def test_files_another_lane_prepared_are_deleted_when_a_lane_fails_to_prepare(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    table = _table(tmp_path)
    before = _data_files(tmp_path)
    _fail_in_lane(monkeypatch, "prepare_commit", 1)
    task = _task(table)
    task.write(_rows(range(200), "a"))
    with pytest.raises(OSError, match="no space left on device"):
        task.finish()
    assert _data_files(tmp_path) == before


def test_files_prepared_beside_a_log_flush_that_fails_are_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    table = _table(tmp_path)
    before = _data_files(tmp_path)
    prepared = threading.Event()
    original = TableWrite.prepare_commit

    def prepare_commit(self: TableWrite, commit_identifier: int) -> list[Any]:
        messages = original(self, commit_identifier)
        prepared.set()
        return messages

    def flush_fails(*args: Any) -> Any:
        assert prepared.wait(10)  # the files exist when the flush fails
        raise RuntimeError("the log is gone")

    monkeypatch.setattr(TableWrite, "prepare_commit", prepare_commit)
    monkeypatch.setattr(WriteTask, "_flush", flush_fails)
    task = _task(table)
    task.write(_rows(range(200), "a"))
    with pytest.raises(RuntimeError, match="the log is gone"):
        task.finish()
    assert _data_files(tmp_path) == before


def test_rows_of_several_lanes_land_in_paimons_buckets_and_the_last_write_of_a_key_wins(tmp_path: Path) -> None:
    table = _table(tmp_path)
    files = internals(table).files
    assert files.bucket_routing(2) == BucketRouting(("id",), 4, 2)
    with table.writer("w") as writer:
        writer.write(_rows(range(0, 300), "first"))
        writer.write(_rows(range(100, 200), "second"))
        # Rows of several kinds in one write: each row's kind goes with it to its bucket.
        writer.write([("-D", {"id": k, "v": "second"}) if k < 300 else ("+I", {"id": k, "v": "mixed"})
                      for k in range(250, 320)])
        writer.commit()
        writer.write(_rows(range(150, 160), "third"))
        writer.commit()
    expected = {k: "first" for k in range(250)} | {k: "second" for k in range(100, 200)} | {
        k: "third" for k in range(150, 160)} | {k: "mixed" for k in range(300, 320)}
    assert {r["id"]: r["v"] for r in table.rows().to_pylist()} == expected
    for bucket in range(4):  # every row in the bucket Paimon's own bucket function gives it
        rows = files.read_rows(None, [bucket])
        assert [b for b, _ in files.key_hash_rows(rows, 4)] in ([bucket], [])
    assert len(read_all(table)) == 300 + 100 + 70 + 10
    assert verify(table).consistent


def test_an_attempt_dropped_unfinished_stops_its_lanes(tmp_path: Path) -> None:
    table = _table(tmp_path)

    def lanes() -> int:
        return sum(t.name == "tablelog-files" for t in threading.enumerate())

    task = _task(table)
    task.write(_rows(range(100), "a"))
    assert lanes() == 2
    del task
    gc.collect()
    deadline = time.monotonic() + 10
    while lanes() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert lanes() == 0


def test_a_commit_reads_the_latest_snapshot_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = _table(tmp_path)
    files = internals(table).files
    reads = 0
    latest_snapshot = type(files).latest_snapshot

    def counted(self: Any) -> Any:
        """Counts the reads of the commit's own look-ups: those made by the committer or the
        history it walks (not by the log retention, expiry or compaction run after it)."""
        nonlocal reads
        for frame in reversed(traceback.extract_stack()[:-1]):
            name = Path(frame.filename)
            if "tablelog" in name.parts and "store" not in name.parts and name.name != "history.py":
                reads += name.name == "committer.py"
                break
        return latest_snapshot(self)

    monkeypatch.setattr(type(files), "latest_snapshot", counted)
    for identifier, value in ((1, "a"), (2, "b")):
        task = table.write_task("w", identifier)
        task.write(_rows(range(10), value))
        receipt = task.finish()
        reads = 0
        committer.commit(internals(table), "w", identifier, [receipt])
        assert reads == 1
    assert [c.row["v"] for c in read_all(table)] == ["a"] * 10 + ["b"] * 10


def test_the_routing_of_an_attempts_rows_gives_each_row_once_to_the_write_of_its_bucket_in_input_order() -> None:
    data = pa.table({"id": pa.array([7, 3, 7, 11, 3, 42, 5, 7, 19, 23], pa.int64())})
    buckets = integer_key_buckets([data.column("id")], 4).tolist()
    order, spans = BucketRouting(("id",), 4, 2).route(data)
    assert order is not None
    rows = order.tolist()
    seen: list[int] = []
    for write, write_spans in enumerate(spans):
        assert [stop for _, _, stop in write_spans[:-1]] == [start for _, start, _ in write_spans[1:]]  # one after the other
        for bucket, start, stop in write_spans:
            part = rows[start:stop]
            assert {buckets[i] for i in part} == {bucket} and bucket % 2 == write
            assert part == sorted(part)  # input order within a bucket: a later write of a key later
            seen += part
    assert sorted(seen) == list(range(data.num_rows))


def test_an_attempt_whose_lane_does_not_answer_is_given_up_after_the_write_timeout_and_leaves_no_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # pypaimon-rust's writer has no request timeout: a lane cut off from the store would
    # wait as long as the cut lasts. The attempt waits s3.write-timeout for it, no longer.
    table = _table(tmp_path)
    internals(table).files.write_timeout_s = 0.5  # type: ignore[attr-defined]  # an object store's
    cut_off = threading.Event()
    original = TableWrite.prepare_commit

    def prepare_commit(self: TableWrite, commit_identifier: int) -> list[Any]:
        cut_off.wait(30)  # the store answers when the cut heals
        return original(self, commit_identifier)

    monkeypatch.setattr(TableWrite, "prepare_commit", prepare_commit)
    task = _task(table)
    task.write(_rows(range(100), "a"))
    began = time.monotonic()
    with pytest.raises(StoreUnavailableError, match=r"not written within s3\.write-timeout=0\.5 s .*db\.db/t did not answer"):
        task.finish()
    assert time.monotonic() - began < 5
    cut_off.set()  # the cut heals: the lanes' calls return, and their files are deleted
    deadline = time.monotonic() + 10
    while _data_files(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _data_files(tmp_path)
    assert internals(table).files.latest_snapshot() is None
