"""Snapshot expiry: Paimon's options and semantics, Paimon's order of deletion, and a
table pypaimon alone still reads."""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tablelog.table import Table, internals
from tablelog.tables import create_table, open_table
from tablelog.testing import NO_COMPACTION

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def make_table(tmp_path: Path, primary_key: bool = True, **options: str) -> Table:
    return create_table(
        str(tmp_path / "wh"), "db.t", SCHEMA, primary_key=["id"] if primary_key else [], bucket=2,
        # expiry in the commit: these tests check what it removes, not when
        options={"log.system": "filesystem", "snapshot.expire.execution-mode": "sync", **NO_COMPACTION, **options},
    )


def commit_rounds(table: Table, rounds: int, start: int = 0, per_round: int = 3) -> None:
    with table.writer("w") as writer:
        for r in range(start, start + rounds):
            writer.write([{"id": r * per_round + i, "v": f"r{r}"} for i in range(per_round)])
            writer.commit()


def snapshot_ids(table: Table) -> list[int]:
    return [s.id for s in table.snapshots()]


def snapshot_files(table: Table) -> list[str]:
    return sorted(n for n in os.listdir(Path(internals(table).files.path) / "snapshot") if n.startswith("snapshot-"))


def plain_pypaimon_rows(table: Table, snapshot_id: int) -> list[dict[str, Any]]:
    """The rows at ``snapshot_id`` read by pypaimon alone (no tablelog code)."""
    from pypaimon import CatalogFactory

    paimon = CatalogFactory.create({"warehouse": table.warehouse.path}).get_table(table.identifier)
    paimon = paimon.copy({"scan.snapshot-id": str(snapshot_id)})
    builder = paimon.new_read_builder()
    result = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    rows = [] if result is None else result.select(["id", "v"]).to_pylist()
    return sorted(rows, key=lambda r: r["id"])


def test_expiry_keeps_the_newest_snapshots_that_num_retained_min_asks_for(tmp_path: Path) -> None:
    table = make_table(tmp_path, **{"snapshot.num-retained.min": "3", "snapshot.time-retained": "0 ms"})
    commit_rounds(table, 8)  # expiry runs after each commit
    assert snapshot_ids(table) == [6, 7, 8]
    assert snapshot_files(table) == ["snapshot-6", "snapshot-7", "snapshot-8"]
    assert (Path(internals(table).files.path) / "snapshot" / "EARLIEST").read_text().strip() == "6"
    assert table.rows().num_rows == 24


def test_a_snapshot_expires_only_once_its_successor_is_older_than_time_retained(tmp_path: Path) -> None:
    table = make_table(tmp_path, **{"snapshot.num-retained.min": "1", "snapshot.time-retained": "1 h"})
    commit_rounds(table, 5)
    assert snapshot_ids(table) == [1, 2, 3, 4, 5]  # all younger than an hour
    times = {s.id: s.time_millis for s in table.snapshots()}
    # Just over an hour after snapshot 3 was committed: 1 and 2 go (their successors are old enough), 3 stays.
    result = table.expire_snapshots(now_millis=times[3] + 3_600_001)
    assert result.expired.snapshots == (1, 2)
    assert result.held_by == "snapshot.time-retained"
    assert snapshot_ids(table) == [3, 4, 5]


def test_num_retained_max_expires_snapshots_however_young(tmp_path: Path) -> None:
    table = make_table(tmp_path, **{"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2"})
    commit_rounds(table, 6)
    assert snapshot_ids(table) == [5, 6]


def test_expire_limit_bounds_the_snapshots_one_run_removes(tmp_path: Path) -> None:
    table = make_table(tmp_path, **{"snapshot.num-retained.min": "1", "snapshot.time-retained": "5 d"})
    commit_rounds(table, 9)
    table = open_table(table.warehouse.path, table.identifier,
                       {"snapshot.time-retained": "0 ms", "snapshot.expire.limit": "3"})
    assert table.expire_snapshots().expired.snapshots == (1, 2, 3)
    assert snapshot_ids(table) == [4, 5, 6, 7, 8, 9]


def test_a_dry_run_says_what_would_go_and_removes_nothing(tmp_path: Path) -> None:
    table = make_table(tmp_path, **{"snapshot.num-retained.min": "2", "snapshot.time-retained": "5 d"})
    commit_rounds(table, 5)
    def table_files() -> list[str]:
        return sorted(p.name for p in Path(internals(table).files.path).rglob("*") if not p.name.startswith(".tablelog-"))

    before = table_files()
    table = open_table(table.warehouse.path, table.identifier, {"snapshot.time-retained": "0 ms"})
    result = table.expire_snapshots(dry_run=True)
    assert result.dry_run and result.expired.snapshots == (1, 2, 3)
    assert result.expired.manifest_files
    assert table_files() == before


def test_retained_minimum_above_maximum_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"snapshot.num-retained.max=2 is less than snapshot.num-retained.min=10"):
        make_table(tmp_path, **{"snapshot.num-retained.max": "2"})


def test_expiry_removes_the_data_files_and_manifests_no_retained_snapshot_references(tmp_path: Path) -> None:
    table = make_table(tmp_path, primary_key=False,
                       **{"snapshot.num-retained.min": "1", "snapshot.time-retained": "5 d"})
    commit_rounds(table, 3)
    old_files = {p for p in Path(internals(table).files.path).glob("bucket-*/*") if p.is_file()}
    # An overwrite replaces every row: its delta deletes the three rounds' data files.
    paimon = internals(table).files.paimon
    builder = paimon.new_batch_write_builder().overwrite()
    write = builder.new_write()
    write.write_arrow(pa.table({"id": [100], "v": ["new"]}, schema=SCHEMA))
    commit = builder.new_commit()
    commit.commit(write.prepare_commit())
    write.close()
    commit.close()
    manifests_before = set(os.listdir(Path(internals(table).files.path) / "manifest"))
    table = open_table(table.warehouse.path, table.identifier, {"snapshot.time-retained": "0 ms"})
    result = table.expire_snapshots()
    assert result.expired.snapshots == (1, 2, 3)
    assert {Path(p) for p in result.expired.data_files} == old_files
    assert not any(p.exists() for p in old_files)
    manifests_after = set(os.listdir(Path(internals(table).files.path) / "manifest"))
    assert manifests_after < manifests_before
    assert set(result.expired.manifest_files) == manifests_before - manifests_after
    assert plain_pypaimon_rows(table, 4) == [{"id": 100, "v": "new"}]


def test_pypaimon_alone_reads_every_retained_snapshot_as_before_expiry(tmp_path: Path) -> None:
    table = make_table(tmp_path, **{"snapshot.num-retained.min": "4", "snapshot.time-retained": "5 d"})
    commit_rounds(table, 10)
    with table.writer("w2") as writer:  # updates and deletes, so that snapshots differ in more than size
        writer.write([{"id": 0, "v": "changed"}, {"id": 1, "v": "changed"}])
        writer.commit()
        writer.write([("-D", {"id": 2, "v": "r0"})])
        writer.commit()
    before = {s: plain_pypaimon_rows(table, s) for s in snapshot_ids(table)}
    table = open_table(table.warehouse.path, table.identifier, {"snapshot.time-retained": "0 ms"})
    assert table.expire_snapshots().expired.snapshots == tuple(range(1, 9))
    assert snapshot_ids(table) == [9, 10, 11, 12]
    for snapshot_id in snapshot_ids(table):
        assert plain_pypaimon_rows(table, snapshot_id) == before[snapshot_id]


def test_an_expiry_error_after_a_commit_is_logged_and_the_commit_stands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    table = make_table(tmp_path, **{"snapshot.num-retained.min": "1", "snapshot.time-retained": "0 ms"})
    commit_rounds(table, 2)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise OSError("disk on fire")

    monkeypatch.setattr("tablelog.store.expiry.SnapshotDeletion.expire", broken)
    with caplog.at_level(logging.WARNING, logger="tablelog.expiry"), table.writer("w") as writer:
        writer.write([{"id": 99, "v": "x"}])
        result = writer.commit()
    assert result.committed and result.snapshot_id == 3
    assert "snapshot expiry after the commit failed (OSError: disk on fire)" in caplog.text
    monkeypatch.undo()
    commit_rounds(table, 1, start=50)  # the next commit's expiry does the work
    assert snapshot_ids(table) == [4]


def test_a_replayed_commit_whose_snapshot_expired_commits_nothing_again(tmp_path: Path) -> None:
    table = make_table(tmp_path, **{"snapshot.num-retained.min": "2", "snapshot.time-retained": "0 ms"})
    task = table.write_task("spark-query", 1)
    task.write([{"id": 1, "v": "batch-1"}])
    receipt = task.finish()
    assert table.commit("spark-query", 1, [receipt]).committed
    for batch in (2, 3, 4):
        later = table.write_task("spark-query", batch)
        later.write([{"id": batch, "v": f"batch-{batch}"}])
        table.commit("spark-query", batch, [later.finish()])
    assert snapshot_ids(table) == [3, 4]
    replay = table.commit("spark-query", 1, [receipt])
    assert not replay.committed and replay.snapshot_id is None
    assert snapshot_ids(table) == [3, 4]


def test_a_reader_started_at_earliest_after_expiry_starts_at_the_earliest_retained_snapshot(tmp_path: Path) -> None:
    table = make_table(tmp_path, **{"snapshot.num-retained.min": "3", "snapshot.time-retained": "0 ms"})
    commit_rounds(table, 6)
    assert snapshot_ids(table) == [4, 5, 6]
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        changes = reader.read_all(idle_timeout_s=0.3)
    assert sorted(c.snapshot_id for c in changes) == [4] * 3 + [5] * 3 + [6] * 3
    assert sorted(c.row["id"] for c in changes) == list(range(9, 18))


def test_expiry_racing_a_committing_writer_never_loses_or_resurrects_a_row(tmp_path: Path) -> None:
    table = make_table(tmp_path, primary_key=False,
                       **{"snapshot.num-retained.min": "2", "snapshot.time-retained": "0 ms"})
    rounds, per_round = 40, 5
    errors: list[BaseException] = []

    def write() -> None:
        try:
            commit_rounds(table, rounds, per_round=per_round)
        except BaseException as err:  # reported below
            errors.append(err)

    writer = threading.Thread(target=write)
    writer.start()
    runs = 0
    racing = open_table(table.warehouse.path, table.identifier)
    while writer.is_alive():
        racing.expire_snapshots()
        runs += 1
    writer.join()
    assert not errors
    racing.expire_snapshots()
    ids = [r["id"] for r in table.rows().to_pylist()]
    assert sorted(ids) == list(range(rounds * per_round))  # every row once: none lost, none back twice
    assert runs > 1
    for snapshot_id in snapshot_ids(table):
        assert len(plain_pypaimon_rows(table, snapshot_id)) == internals(table).files.snapshot(snapshot_id).total_record_count


def test_verify_after_expiry_replays_the_log_from_the_rows_of_the_earliest_kept_snapshot(tmp_path: Path) -> None:
    from tablelog.verify import verify

    table = make_table(tmp_path, **{"snapshot.num-retained.min": "3", "snapshot.time-retained": "0 ms"})
    commit_rounds(table, 6)
    with table.writer("w2") as writer:
        writer.write([{"id": 0, "v": "changed"}, ("-D", {"id": 1, "v": "r0"})])
        writer.commit()
    assert snapshot_ids(table) == [5, 6, 7]
    report = verify(table)
    assert report.consistent, report.summary()
    assert report.log_rows == report.table_rows == 17


def test_a_position_inside_a_snapshot_that_expired_is_refused_saying_so(tmp_path: Path) -> None:
    from tablelog.errors import ReaderPositionError

    table = make_table(tmp_path, **{"snapshot.num-retained.min": "1", "snapshot.time-retained": "1 h"})
    commit_rounds(table, 2)
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        reader.poll(max_records=1)
        position = reader.position.to_json()
    assert reader.position.offsets  # inside snapshot 1
    commit_rounds(table, 1, start=5)
    open_table(table.warehouse.path, table.identifier, {"snapshot.time-retained": "0 ms"}).expire_snapshots()
    with pytest.raises(ReaderPositionError, match=r"inside snapshot 1 of table 'db.t', which has expired \(earliest kept: 3\)"):
        table.reader(position)


def test_the_earliest_snapshot_is_found_while_expiry_deletes_the_one_it_looks_at(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = make_table(tmp_path)
    commit_rounds(table, 3)
    manager = internals(table).files._snapshots
    gone, read = str(manager.get_snapshot_path(1)), manager.file_io.read_file_utf8

    def read_after_expiry(path: Any) -> str:
        if str(path) == gone:  # expiry in another process deleted it after its existence was checked
            raise FileNotFoundError(path)
        return str(read(path))

    monkeypatch.setattr(manager.file_io, "read_file_utf8", read_after_expiry)
    assert internals(table).files.earliest_snapshot_id() == 1
    assert snapshot_ids(table) == [2, 3]
