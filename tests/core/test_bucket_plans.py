"""A snapshot's data files per bucket (tablelog.store.bucket_plans), planned by moving the
process's last plan of the table forward by each later snapshot's delta manifests: the
same files, with the same paths, as pypaimon's own whole plan, after appends,
compactions, deletes and in partitions; planned whole again when the planned snapshot
expired, when the table was created anew at the same path, or for an older snapshot."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import tablelog
from tablelog.store import bucket_plans
from tablelog.store.bucket_plans import snapshot_files
from tablelog.table import Table, internals

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])


@pytest.fixture(autouse=True)
def no_kept_plans() -> Any:
    bucket_plans.forget_plans()
    yield
    bucket_plans.forget_plans()


@pytest.fixture
def whole_plans(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The snapshot id of each whole plan made."""
    made: list[int] = []
    whole = bucket_plans._whole

    def counted(paimon: Any, snapshot: Any) -> Any:
        made.append(snapshot.id)
        return whole(paimon, snapshot)

    monkeypatch.setattr(bucket_plans, "_whole", counted)
    return made


def _table(tmp_path: Path, *, partitioned: bool = False, **options: str) -> Table:
    return tablelog.create_table(
        str(tmp_path), "db.t", SCHEMA, primary_key=["dt", "id"] if partitioned else ["id"], bucket=2,
        partition_keys=["dt"] if partitioned else None,
        options={"log.system": "filesystem", "num-sorted-run.compaction-trigger": "3", "commit.force-compact": "true",
                 "snapshot.expire.execution-mode": "sync", **options})


def _commit(table: Table, commit: int, *, delete: bool = False) -> None:
    with table.writer() as writer:
        writer.write([{"dt": f"d{k % 2}", "id": k, "v": f"c{commit}"} for k in range(3 * commit, 3 * commit + 8)])
        if delete:
            writer.write([("-D", {"dt": f"d{3 * commit % 2}", "id": 3 * commit, "v": f"c{commit}"})])
        writer.commit()


def _paimon(table: Table) -> Any:
    return internals(table).files.paimon


def _latest(table: Table) -> int:
    snapshot = internals(table).files.latest_snapshot()
    assert snapshot is not None
    return snapshot.id


def _planned(paimon: Any, snapshot_id: int) -> dict[tuple[Any, ...], set[tuple[str, int, str]]]:
    return {key: {(f.file_name, f.level, f.file_path) for f in files}
            for key, files in snapshot_files(paimon, snapshot_id).items()}


def _pypaimons_plan(paimon: Any, snapshot_id: int) -> dict[tuple[Any, ...], set[tuple[str, int, str]]]:
    """The reference: pypaimon's plan of the snapshot for a writer (level 0 included)."""
    scan = paimon.copy({"scan.snapshot-id": str(snapshot_id)}).new_read_builder().new_scan()
    found: dict[tuple[Any, ...], set[tuple[str, int, str]]] = {}
    for split in scan.plan_for_write().splits():
        found.setdefault((tuple(split.partition.values), int(split.bucket)), set()).update(
            (f.file_name, f.level, f.file_path) for f in split.files)
    return found


@pytest.mark.parametrize("partitioned", [False, True], ids=["unpartitioned", "partitioned"])
def test_a_plan_moved_forward_commit_by_commit_holds_pypaimons_files(
    tmp_path: Path, whole_plans: list[int], partitioned: bool,
) -> None:
    table = _table(tmp_path, partitioned=partitioned)
    paimon = _paimon(table)
    for commit in range(8):
        _commit(table, commit, delete=commit % 3 == 2)
        latest = _latest(table)
        assert _planned(paimon, latest) == _pypaimons_plan(paimon, latest)
    assert any(s.commit_kind == "COMPACT" for s in table.snapshots())  # compactions deleted files
    assert len(whole_plans) == 1


def test_a_plan_moved_over_several_snapshots_at_once_holds_pypaimons_files(
    tmp_path: Path, whole_plans: list[int],
) -> None:
    table = _table(tmp_path)
    paimon = _paimon(table)
    _commit(table, 0)
    _planned(paimon, _latest(table))
    for commit in range(1, 6):
        _commit(table, commit)
    latest = _latest(table)
    assert _planned(paimon, latest) == _pypaimons_plan(paimon, latest)
    assert len(whole_plans) == 1


def test_a_plan_whose_planned_snapshot_expired_moves_forward(tmp_path: Path, whole_plans: list[int]) -> None:
    table = _table(tmp_path, **{"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    paimon = _paimon(table)
    _commit(table, 0)
    planned_at = _latest(table)
    _planned(paimon, planned_at)
    _commit(table, 1)  # expires the planned snapshot
    assert internals(table).files.snapshot(planned_at) is None
    latest = _latest(table)
    assert _planned(paimon, latest) == _pypaimons_plan(paimon, latest)
    assert whole_plans == [planned_at]


def test_a_plan_whose_next_snapshots_expired_is_planned_whole_again(
    tmp_path: Path, whole_plans: list[int],
) -> None:
    table = _table(tmp_path, **{"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    paimon = _paimon(table)
    _commit(table, 0)
    planned_at = _latest(table)
    _planned(paimon, planned_at)
    kept = copy.deepcopy(bucket_plans._PLANS)  # this process's plan, as another process left it
    for commit in range(1, 4):
        _commit(table, commit)
    bucket_plans._PLANS.clear()
    bucket_plans._PLANS.update(kept)
    latest = _latest(table)
    assert internals(table).files.snapshot(planned_at + 1) is None
    assert _planned(paimon, latest) == _pypaimons_plan(paimon, latest)
    assert whole_plans[-1] == latest


def test_a_table_created_anew_at_the_same_path_is_not_planned_from_the_old_one(
    tmp_path: Path, whole_plans: list[int],
) -> None:
    table = _table(tmp_path)
    for commit in range(3):
        _commit(table, commit)
    old_latest = _latest(table)
    _planned(_paimon(table), old_latest)
    shutil.rmtree(tmp_path / "db.db" / "t")
    again = _table(tmp_path)
    for commit in range(10, 13):
        _commit(again, commit)
    latest = _latest(again)
    assert latest == old_latest  # the same snapshot id, other files
    assert _planned(_paimon(again), latest) == _pypaimons_plan(_paimon(again), latest)
    assert len(whole_plans) == 2  # the old table's, then the new one's


def test_an_older_snapshot_is_planned_whole_and_the_newer_plan_is_kept(
    tmp_path: Path, whole_plans: list[int],
) -> None:
    table = _table(tmp_path)
    paimon = _paimon(table)
    for commit in range(3):
        _commit(table, commit)
    latest = _latest(table)
    _planned(paimon, latest)
    before = len(whole_plans)
    assert _planned(paimon, latest - 1) == _pypaimons_plan(paimon, latest - 1)
    _planned(paimon, latest)
    assert whole_plans[before:] == [latest - 1]


def test_a_snapshot_that_does_not_exist_is_refused(tmp_path: Path) -> None:
    table = _table(tmp_path)
    _commit(table, 0)
    with pytest.raises(FileNotFoundError, match="snapshot 99"):
        snapshot_files(_paimon(table), 99)


def test_a_python_write_numbers_its_records_above_every_file_of_its_bucket_from_the_kept_plan(
    tmp_path: Path, whole_plans: list[int], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """pypaimon's Python writer takes each bucket's largest sequence number from the
    process's plan, never from a whole plan of its own; a later write still wins."""
    from pypaimon.write.file_store_write import FileStoreWrite

    pypaimon_plans: list[Any] = []
    load = FileStoreWrite._load_seq_number_stats
    monkeypatch.setattr(FileStoreWrite, "_load_seq_number_stats",
                        lambda self, partition: pypaimon_plans.append(partition) or load(self, partition))
    table = _table(tmp_path, **{"num-sorted-run.compaction-trigger": "100", "commit.force-compact": "false",
                                "data-file.thin-mode": "false"})  # pypaimon-rust writes thin files only
    paimon = _paimon(table)
    seen: dict[int, int] = {}  # each bucket's largest sequence number so far
    known: set[str] = set()
    for commit in range(5):
        _commit(table, commit)
        for (_, bucket), files in snapshot_files(paimon, _latest(table)).items():
            new = [f for f in files if f.file_name not in known]
            assert new and all(f.min_sequence_number > seen.get(bucket, -1) for f in new), (commit, bucket)
            seen[bucket] = max(f.max_sequence_number for f in files)
            known.update(f.file_name for f in files)
    assert pypaimon_plans == [] and len(whole_plans) == 1
    rows = {r["id"]: r["v"] for r in table.rows().to_pylist()}
    assert rows[3] == "c1" and rows[12] == "c4"  # key 3 written by commits 0 and 1, 12 by 3 and 4
