"""Two writer processes committing to the same table at once: both land, nothing lost."""

import subprocess
import sys
import textwrap
from collections import Counter

import pyarrow as pa
import pytest

import tablelog
from tablelog.table import internals
from tablelog.verify import verify
from tablelog.writing.files_lane import FilesLanes

COMMITS, ROWS = 8, 50


def test_two_processes_committing_concurrently_both_land_and_readers_see_each_record_once(tmp_path) -> None:  # type: ignore[no-untyped-def]
    warehouse = str(tmp_path)
    schema = pa.schema([("id", pa.int64()), ("writer", pa.string())])
    table = tablelog.create_table(warehouse, "db.shared", schema, primary_key=["id"], bucket=2,
                                  options={"log.system": "filesystem"})
    script = textwrap.dedent("""
        import sys, tablelog
        warehouse, name, offset = sys.argv[1], sys.argv[2], int(sys.argv[3])
        table = tablelog.open_table(warehouse, "db.shared")
        with table.writer(name) as writer:
            for commit in range({commits}):
                start = offset + commit * {rows}
                writer.write([{{"id": i, "writer": name}} for i in range(start, start + {rows})])
                writer.commit()
    """).format(commits=COMMITS, rows=ROWS)
    procs = [subprocess.Popen([sys.executable, "-c", script, warehouse, name, str(offset)],
                              stderr=subprocess.PIPE, text=True)
             for name, offset in (("writer-a", 0), ("writer-b", 100_000))]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    rows = table.rows().to_pylist()
    assert Counter(r["writer"] for r in rows) == {"writer-a": COMMITS * ROWS, "writer-b": COMMITS * ROWS}
    writers = Counter(
        s.properties["tablelog.writing.writer"] for s in table.snapshots() if "tablelog.writing.writer" in s.properties
    )
    assert writers == {"writer-a": COMMITS, "writer-b": COMMITS}
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        changes = reader.read_all()
    assert Counter(c.row["id"] for c in changes) == Counter(r["id"] for r in rows)
    assert verify(table).consistent


def test_a_replay_racing_the_original_commit_commits_once(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import threading

    schema = pa.schema([("id", pa.int64()), ("writer", pa.string())])
    table = tablelog.create_table(str(tmp_path), "db.race", schema, primary_key=["id"],
                                  options={"log.system": "filesystem"})
    receipts = []
    for attempt in ("original", "replay"):
        task = table.write_task("w", 1, task=attempt)
        task.write([{"id": i, "writer": attempt} for i in range(20)])
        receipts.append(task.finish())
    start = threading.Barrier(2)
    results = []

    def commit(receipt):  # type: ignore[no-untyped-def]
        start.wait()
        results.append(table.commit("w", 1, [receipt]))

    threads = [threading.Thread(target=commit, args=(r,)) for r in receipts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(r.committed for r in results) == [False, True]
    assert len(list(table.snapshots())) == 1
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        assert len(reader.read_all()) == 20


class _TornHintOnce:
    """Stands in for pypaimon-rust's writer on its first write: fails as it does when it
    read the LATEST hint while another process rewrote it."""

    closed = False

    def write_arrow(self, data: pa.Table, bucket: int | None = None) -> None:
        raise ValueError("Snapshot 90 does not exist.")

    def close(self) -> None:
        self.closed = True


def test_a_first_write_that_read_a_torn_latest_hint_starts_over_and_loses_nothing(tmp_path) -> None:  # type: ignore[no-untyped-def]
    schema = pa.schema([("id", pa.int64()), ("writer", pa.string())])
    table = tablelog.create_table(str(tmp_path), "db.torn", schema, primary_key=["id"], bucket=2,
                                  options={"log.system": "filesystem"})
    task = table.write_task("w", 1)
    files = internals(table).files.new_write()
    files._write = torn = _TornHintOnce()
    task._paimon_write = FilesLanes([files], 1)
    task.write([{"id": i, "writer": "w"} for i in range(30)])
    table.commit("w", 1, [task.finish()])
    assert torn.closed
    assert sorted(r["id"] for r in table.rows().to_pylist()) == list(range(30))
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        assert len(reader.read_all()) == 30
    assert verify(table).consistent


def test_a_torn_hint_error_after_the_tasks_first_write_is_raised(tmp_path) -> None:  # type: ignore[no-untyped-def]
    schema = pa.schema([("id", pa.int64()), ("writer", pa.string())])
    table = tablelog.create_table(str(tmp_path), "db.err", schema, primary_key=["id"],
                                  options={"log.system": "filesystem"})
    task = table.write_task("w", 1)
    files = internals(table).files.new_write()
    files._write = _TornHintOnce()
    files._wrote = True  # not the task's first write: its earlier rows live in that writer
    task._paimon_write = FilesLanes([files], 1)
    task.write([{"id": 1, "writer": "w"}])  # the data files are written beside: their failure fails the attempt
    with pytest.raises(ValueError, match="Snapshot 90 does not exist"):
        task.finish()
