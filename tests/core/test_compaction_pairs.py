"""Compaction per (partition, bucket): planned at a snapshot, rewritten pair by pair
(picklable, for a distributed job's tasks), committed once; a pair that lost a race to
another compaction or an overwrite is dropped alone (its new files deleted), whatever
engine committed the other compaction."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner

import tablelog
from tablelog.cli import cli
from tablelog.commit.compaction import (
    PairRewrite,
    commit_rewrites,
    compact,
    plan_compaction,
    rewrite_pair,
)
from tablelog.errors import OptionError
from tablelog.store.compaction import TableCompactions
from tablelog.table import Table, internals
from tablelog.testing import NO_COMPACTION
from tablelog.verify import verify

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])
PARTITIONS = ("a", "b")


def make_table(tmp_path: Path) -> Table:
    return tablelog.create_table(
        str(tmp_path), "db.t", SCHEMA, primary_key=["dt", "id"], partition_keys=["dt"], bucket=1,
        options={"log.system": "filesystem", **NO_COMPACTION},
    )


def write(table: Table, commits: int, start: int = 0) -> None:
    with table.writer() as writer:
        for i in range(start, start + commits):
            writer.write([{"dt": dt, "id": k, "v": f"c{i}"} for dt in PARTITIONS for k in range(2 * i, 2 * i + 4)])
            writer.commit()


def expected(commits: int) -> list[dict[str, Any]]:
    rows = {(dt, k): f"c{i}" for i in range(commits) for dt in PARTITIONS for k in range(2 * i, 2 * i + 4)}
    return [{"dt": dt, "id": k, "v": v} for (dt, k), v in sorted(rows.items())]


def rows(table: Table) -> list[dict[str, Any]]:
    return table.rows().sort_by([("dt", "ascending"), ("id", "ascending")]).to_pylist()


def partition_files(table: Table, dt: str) -> set[str]:
    return {p.name for p in (Path(table.warehouse.path) / "db.db" / "t" / f"dt={dt}" / "bucket-0").iterdir()}


def runs(table: Table) -> dict[str, int]:
    files = internals(table).files
    latest = files.latest_snapshot()
    assert latest is not None
    return {b.partition[0]: b.sorted_runs for b in files.compactions().bucket_files(latest.id)}


def while_rewriting(monkeypatch: pytest.MonkeyPatch, dt: str, meanwhile: Callable[[], Any]) -> list[Any]:
    """Patch the rewrite so that ``meanwhile`` runs once, right after partition ``dt``'s
    rewrite (before the compaction commits); returns what it returned."""
    rewrite = TableCompactions.rewrite_bucket
    done: list[Any] = []

    def rewrite_then(compactions: TableCompactions, files: Any, level: int, drop_deletes: bool, pace: Any = None) -> list[Any]:
        new = rewrite(compactions, files, level, drop_deletes, pace)
        if files.partition == (dt,) and not done:
            done.append(None)
            done[0] = meanwhile()
        return new

    monkeypatch.setattr(TableCompactions, "rewrite_bucket", rewrite_then)
    return done


def test_compactions_of_one_bucket_number_in_two_partitions_both_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = make_table(tmp_path)
    write(table, 3)
    other = tablelog.open_table(str(tmp_path), "db.t")
    done = while_rewriting(monkeypatch, "a", lambda: compact(internals(other), partitions=[{"dt": "b"}]))
    ours = compact(internals(table), partitions=[{"dt": "a"}])
    assert done[0].snapshot_id is not None and done[0].pairs == ((("b",), 0),)
    assert ours.snapshot_id is not None and ours.pairs == ((("a",), 0),) and not ours.dropped
    assert runs(table) == {"a": 1, "b": 1}
    assert rows(table) == expected(3)


def test_a_compaction_that_loses_one_pair_commits_the_others_and_deletes_the_lost_pairs_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = make_table(tmp_path)
    write(table, 3)
    before = partition_files(table, "a")
    other = tablelog.open_table(str(tmp_path), "db.t")
    done = while_rewriting(monkeypatch, "a", lambda: compact(internals(other), partitions=[{"dt": "a"}]))
    ours = compact(internals(table))
    assert done[0].pairs == ((("a",), 0),)
    assert ours.snapshot_id is not None and ours.pairs == ((("b",), 0),) and ours.dropped == ((("a",), 0),)
    assert "1 pair(s) lost to another compaction (partition a bucket 0)" in ours.summary()
    assert len(partition_files(table, "a") - before) == 1  # the winner's file; ours was deleted
    assert runs(table) == {"a": 1, "b": 1}
    assert rows(table) == expected(3)
    assert verify(table).consistent


def test_a_compaction_another_engine_committed_since_the_plan_makes_the_pair_lose(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A foreign COMPACT (no tablelog property) of the files written after this
    compaction's plan: the files this one rewrites are all still there, but both would
    put a run of overlapping keys at the highest level."""
    table = make_table(tmp_path)
    write(table, 2)
    files = internals(table).files
    plan = plan_compaction(internals(table), partitions=[{"dt": "a"}])
    (task,) = plan.tasks
    write(table, 2, start=2)
    latest = files.latest_snapshot()
    assert latest is not None
    operations = files.compactions()
    (now,) = [b for b in operations.bucket_files(latest.id) if b.partition == ("a",)]
    newer = now.subset(f for f in now.files if f.file_name not in {g.file_name for g in task.files.files})
    foreign = operations.rewrite_bucket(newer, task.output_level, False)
    with files.commit_lock():
        operations.commit([(newer, foreign)], commit_user="java-compaction", commit_identifier=1, properties={})
    ours = commit_rewrites(internals(table), plan.snapshot_id or 0, [rewrite_pair(internals(table), task)])
    assert ours.snapshot_id is None and ours.dropped == ((("a",), 0),)
    assert [s.commit_kind for s in table.snapshots()].count("COMPACT") == 1
    assert rows(table) == expected(4)


def test_a_plan_travels_pickled_its_pairs_are_rewritten_by_another_table_object_and_committed_once(
    tmp_path: Path,
) -> None:
    table = make_table(tmp_path)
    write(table, 3)
    plan = pickle.loads(pickle.dumps(plan_compaction(internals(table))))
    assert sorted(task.pair for task in plan.tasks) == [(("a",), 0), (("b",), 0)]
    elsewhere = tablelog.open_table(str(tmp_path), "db.t")  # as a Spark task opens it
    rewrites: list[PairRewrite] = [pickle.loads(pickle.dumps(rewrite_pair(internals(elsewhere), t))) for t in plan.tasks]
    result = commit_rewrites(internals(table), plan.snapshot_id or 0, rewrites)
    assert result.snapshot_id is not None and sorted(result.pairs) == [(("a",), 0), (("b",), 0)]
    assert [s.commit_kind for s in table.snapshots()] == ["APPEND"] * 3 + ["COMPACT"]
    assert runs(table) == {"a": 1, "b": 1}
    assert rows(table) == expected(3)


def test_compaction_of_chosen_partitions_leaves_the_others_and_an_unknown_column_is_refused(tmp_path: Path) -> None:
    table = make_table(tmp_path)
    write(table, 3)
    assert table.compact(partitions=[{"dt": "b"}]).pairs == ((("b",), 0),)
    assert runs(table) == {"a": 3, "b": 1}
    with pytest.raises(OptionError, match="partition column 'day': table 'db.t' has partition columns dt"):
        table.compact(partitions=[{"day": "a"}])
    assert rows(table) == expected(3)


def test_tablelog_compact_compacts_the_partitions_given_and_refuses_bad_flags_in_one_line(tmp_path: Path) -> None:
    table = make_table(tmp_path)
    write(table, 3)
    runner = CliRunner()
    result = runner.invoke(cli, ["compact", "-w", str(tmp_path), "db.t", "--partition", "dt=a", "--bucket", "0"])
    assert result.exit_code == 0, result.output
    assert "compacted partition a bucket 0 in snapshot 4: 3 files -> 1" in result.output
    assert runs(table) == {"a": 1, "b": 3}
    for flags, error in [
        (["--partition", "dt"], "--partition 'dt': expected COLUMN=VALUE[,COLUMN=VALUE...]"),
        (["--follow", "--interval", "soon"], "--interval 'soon': expected a duration"),
        (["--partition", "day=a"], "partition column 'day': table 'db.t' has partition columns dt"),
        (["--follow", "--bucket", "3"], "bucket 3: table 'db.t' has buckets 0..0"),
    ]:
        result = runner.invoke(cli, ["compact", "-w", str(tmp_path), "db.t", *flags])
        assert result.exit_code != 0 and error in result.output, result.output
        assert "Traceback" not in result.output
    assert runs(table) == {"a": 1, "b": 3} and len(list(table.snapshots())) == 4
