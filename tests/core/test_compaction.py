"""Compaction: a bucket's small files rewritten into one sorted run in a COMPACT snapshot,
after commits past ``num-sorted-run.compaction-trigger`` and by ``tablelog compact``; the
rows never change, log readers pass over the snapshot, pypaimon alone reads the result."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner

import tablelog
from tablelog.cli import cli
from tablelog.commit.compaction import P_COMPACTED, compact
from tablelog.errors import OptionError
from tablelog.store.compaction import TableCompactions
from tablelog.table import Table, internals
from tablelog.verify import verify

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def make_table(tmp_path: Path, trigger: int | None = None, bucket: int = 2, name: str = "db.t") -> Table:
    # the commit waits for its compaction: these tests check what is compacted when
    # (test_background_maintenance.py checks it happens off the commit path)
    options = {"log.system": "filesystem", "commit.force-compact": "true"}
    if trigger is not None:
        options["num-sorted-run.compaction-trigger"] = str(trigger)
    return tablelog.create_table(str(tmp_path), name, SCHEMA, primary_key=["id"], bucket=bucket, options=options)


def write_commits(table: Table, commits: int, start: int = 0) -> list[dict[str, Any]]:
    """``commits`` commits, each upserting 6 overlapping keys and deleting one: the
    expected rows afterwards, by id."""
    expected: dict[int, dict[str, Any]] = {r["id"]: r for r in table.rows().to_pylist()}
    with table.writer() as writer:
        for i in range(start, start + commits):
            rows = [{"id": k, "v": f"c{i}"} for k in range(2 * i, 2 * i + 6)]
            writer.write(rows)
            expected.update({r["id"]: r for r in rows})
            if i % 3 == 2:
                writer.write([("-D", {"id": 2 * i, "v": f"c{i}"})])
                expected.pop(2 * i)
            writer.commit()
    return sorted(expected.values(), key=lambda r: r["id"])


def runs(table: Table) -> dict[int, int]:
    latest = internals(table).files.latest_snapshot()
    assert latest is not None
    return {b.bucket: b.sorted_runs for b in internals(table).files.compactions().bucket_files(latest.id)}


def kinds(table: Table) -> Counter[str]:
    return Counter(s.commit_kind for s in table.snapshots())


def rows_read_by_plain_pypaimon(warehouse: Path, identifier: str) -> list[dict[str, Any]]:
    """The table's rows as pypaimon alone reads them (no tablelog code involved)."""
    import pypaimon

    paimon = pypaimon.CatalogFactory.create({"warehouse": str(warehouse)}).get_table(identifier)
    builder = paimon.new_read_builder()
    result = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    return sorted(({"id": r["id"], "v": r["v"]} for r in result.to_pylist()), key=lambda r: r["id"])


def test_a_bucket_past_the_trigger_is_compacted_after_the_commit(tmp_path: Path) -> None:
    table = make_table(tmp_path, trigger=3, bucket=1)
    write_commits(table, 2)
    assert runs(table) == {0: 2}
    assert kinds(table) == {"APPEND": 2}
    for i in range(2, 8):
        write_commits(table, 1, start=i)
        assert runs(table)[0] <= 3  # compacted whenever a commit took it past the trigger
    assert kinds(table)["COMPACT"] >= 2
    compaction = next(s for s in table.snapshots() if s.commit_kind == "COMPACT")
    assert compaction.properties[P_COMPACTED] == "[0]"


def test_a_bucket_with_fewer_sorted_runs_than_the_trigger_is_not_compacted(tmp_path: Path) -> None:
    table = make_table(tmp_path, trigger=5, bucket=1)
    write_commits(table, 4)
    assert runs(table) == {0: 4}
    assert kinds(table) == {"APPEND": 4}


def test_the_default_trigger_is_paimons_five_sorted_runs(tmp_path: Path) -> None:
    table = make_table(tmp_path, bucket=1)
    assert table.options.num_sorted_run_compaction_trigger == 5
    write_commits(table, 4)
    assert "COMPACT" not in kinds(table)
    write_commits(table, 2, start=4)
    assert kinds(table)["COMPACT"] == 1


def test_after_a_commit_only_the_new_small_runs_are_rewritten_not_the_big_old_one(tmp_path: Path) -> None:
    table = make_table(tmp_path, trigger=3, bucket=1)
    with table.writer() as writer:
        writer.write([{"id": k, "v": "old" * 20} for k in range(2000)])
        writer.commit()
        writer.write([{"id": k, "v": "older" * 20} for k in range(1000)])
        writer.commit()
    table.compact()
    latest = internals(table).files.latest_snapshot()
    assert latest is not None
    (big,) = internals(table).files.compactions().bucket_files(latest.id)[0].files
    assert big.level == 3
    expected = {r["id"]: r for r in table.rows().to_pylist()}
    with table.writer() as writer:
        for i in range(4):
            rows = [{"id": k, "v": f"new{i}"} for k in range(i * 3, i * 3 + 3)]
            writer.write(rows)
            writer.write([("-D", {"id": 1500 + i, "v": ""})])  # deletes a key only the big run has
            expected.update({r["id"]: r for r in rows})
            expected.pop(1500 + i)
            writer.commit()
    assert kinds(table)["COMPACT"] >= 2  # the first one, and those after the commits
    latest = internals(table).files.latest_snapshot()
    assert latest is not None
    files = internals(table).files.compactions().bucket_files(latest.id)[0].files
    assert big.file_name in {f.file_name for f in files}  # the big run stays; the new ones were merged below it
    assert 2 in {f.level for f in files} and all(f.level < 3 for f in files if f.file_name != big.file_name)
    rows = sorted(expected.values(), key=lambda r: r["id"])
    assert table.rows().sort_by("id").to_pylist() == rows
    assert rows_read_by_plain_pypaimon(tmp_path, "db.t") == rows
    table.compact()  # all runs: the retractions are dropped now
    assert table.rows().sort_by("id").to_pylist() == rows
    assert rows_read_by_plain_pypaimon(tmp_path, "db.t") == rows


def test_compaction_keeps_every_row_and_pypaimon_alone_reads_them(tmp_path: Path) -> None:
    table = make_table(tmp_path, trigger=50)
    expected = write_commits(table, 12)
    assert table.rows().sort_by("id").to_pylist() == expected
    result = compact(internals(table))
    assert result.snapshot_id is not None and result.buckets == (0, 1)
    assert runs(table) == {0: 1, 1: 1}
    assert table.rows().sort_by("id").to_pylist() == expected
    assert rows_read_by_plain_pypaimon(tmp_path, "db.t") == expected
    # A compacted bucket compacted with newer files again keeps the newer rows.
    expected = write_commits(table, 4, start=12)
    compact(internals(table))
    assert table.rows().sort_by("id").to_pylist() == expected
    assert rows_read_by_plain_pypaimon(tmp_path, "db.t") == expected


def test_the_compacted_rows_are_those_of_every_earlier_snapshot_too(tmp_path: Path) -> None:
    table = make_table(tmp_path, trigger=50)
    write_commits(table, 6)
    before = {s.id: table.rows(s.id).sort_by("id").to_pylist() for s in table.snapshots()}
    compact(internals(table))
    assert {s: table.rows(s).sort_by("id").to_pylist() for s in before} == before


def test_log_readers_never_see_a_compaction_snapshot_as_changes(tmp_path: Path) -> None:
    table = make_table(tmp_path, trigger=50)
    for start in (0, 3, 6):
        expected = write_commits(table, 3, start=start)
        assert compact(internals(table)).snapshot_id is not None
    assert kinds(table)["COMPACT"] == 3
    written = 9 * 6 + 3  # the upserts and the deletes, each one change
    for consistency in ("transactional", "eventual"):
        with table.reader(consistency=consistency, scan_mode="earliest") as reader:
            changes = reader.read_all()
        assert len(changes) == written, consistency
    # A hybrid read started at a compaction snapshot: the current rows once, then nothing more.
    latest = internals(table).files.latest_snapshot()
    assert latest is not None and latest.commit_kind == "COMPACT"
    for consistency in ("transactional", "eventual"):
        with table.reader(consistency=consistency) as reader:
            changes = reader.read_all()
        assert sorted((c.row["id"], c.row["v"]) for c in changes) == [(r["id"], r["v"]) for r in expected]
    # A transactional reader following the table passes over compactions between commits.
    with table.reader(consistency="transactional") as reader:
        reader.read_all()
        more = write_commits(table, 3, start=9)
        compact(internals(table))
        changes = reader.read_all()
    assert len(changes) == 3 * 6 + 1
    assert table.rows().sort_by("id").to_pylist() == more


def test_verify_stays_consistent_across_compactions(tmp_path: Path) -> None:
    table = make_table(tmp_path, trigger=2)
    write_commits(table, 10)
    compact(internals(table))
    report = verify(table)
    assert report.consistent, report.summary()


def test_a_table_with_one_sorted_run_per_bucket_has_nothing_to_compact(tmp_path: Path) -> None:
    table = make_table(tmp_path, trigger=50)
    write_commits(table, 1)
    snapshots = [s.id for s in table.snapshots()]
    result = compact(internals(table))
    assert result.snapshot_id is None and result.skipped == "no bucket has more than one sorted run"
    assert [s.id for s in table.snapshots()] == snapshots


def test_compacting_one_bucket_leaves_the_others(tmp_path: Path) -> None:
    table = make_table(tmp_path, trigger=50)
    write_commits(table, 4)
    result = table.compact([1])
    assert result.buckets == (1,) and result.files_before == 4 and result.files_after == 1
    assert runs(table) == {0: 4, 1: 1}


def test_a_compaction_reports_the_time_its_rewrites_took_and_its_whole_time(tmp_path: Path) -> None:
    table = make_table(tmp_path, trigger=50)
    write_commits(table, 4)
    result = table.compact(threads=1)
    assert result.pairs and 0 < result.rewrite_seconds < result.seconds
    assert result.summary().endswith(f"in {result.seconds:.2f} s")
    assert table.compact().rewrite_seconds == 0  # nothing left to rewrite


def test_a_bucket_the_table_does_not_have_is_refused_and_nothing_is_committed(tmp_path: Path) -> None:
    table = make_table(tmp_path, trigger=50)
    write_commits(table, 3)
    snapshots = [s.id for s in table.snapshots()]
    with pytest.raises(OptionError, match=r"bucket 7: table 'db.t' has buckets 0..1"):
        compact(internals(table), [7])
    assert [s.id for s in table.snapshots()] == snapshots


def test_a_compaction_that_fails_after_a_commit_does_not_fail_the_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    table = make_table(tmp_path, trigger=1, bucket=1)
    write_commits(table, 1)

    def broken(self: TableCompactions, files: Any, level: int, drop_deletes: bool, pace: Any = None) -> list[Any]:
        raise OSError("disk full")

    monkeypatch.setattr(TableCompactions, "rewrite_bucket", broken)
    expected = write_commits(table, 1, start=1)
    assert kinds(table) == {"APPEND": 2}
    assert table.rows().sort_by("id").to_pylist() == expected
    assert "compaction after commit failed (the commit stands): disk full" in caplog.text


def test_a_compaction_racing_another_of_the_same_files_commits_nothing_and_leaves_no_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = make_table(tmp_path, trigger=50, bucket=1)
    expected = write_commits(table, 4)
    bucket_dir = tmp_path / "db.db" / "t" / "bucket-0"
    rewrite = TableCompactions.rewrite_bucket
    other = tablelog.open_table(str(tmp_path), "db.t")
    won: list[Any] = []

    def rewrite_while_another_compacts(
        self: TableCompactions, files: Any, level: int, drop_deletes: bool, pace: Any = None
    ) -> list[Any]:
        new = rewrite(self, files, level, drop_deletes, pace)
        if not won:
            won.append(None)  # the other compaction's own rewrite passes straight through
            won[0] = compact(internals(other))  # commits first, deleting the files this one read
        return new

    monkeypatch.setattr(TableCompactions, "rewrite_bucket", rewrite_while_another_compacts)
    files_before = set(bucket_dir.iterdir())
    lost = compact(internals(table))
    assert won[0].snapshot_id is not None
    assert lost.snapshot_id is None and "another compaction" in (lost.skipped or "")
    assert kinds(table) == {"APPEND": 4, "COMPACT": 1}
    # The loser's rewritten file is deleted; the winner's is the one new file.
    assert len(set(bucket_dir.iterdir()) - files_before) == 1
    assert table.rows().sort_by("id").to_pylist() == expected


def test_tablelog_compact_compacts_the_buckets_given(tmp_path: Path) -> None:
    table = make_table(tmp_path, trigger=50)
    expected = write_commits(table, 4)
    runner = CliRunner()
    result = runner.invoke(cli, ["compact", "-w", str(tmp_path), "db.t", "--bucket", "0"])
    assert result.exit_code == 0, result.output
    assert "compacted bucket(s) 0 in snapshot 5: 4 files -> 1" in result.output
    assert runs(table) == {0: 1, 1: 4}
    result = runner.invoke(cli, ["compact", "-w", str(tmp_path), "db.t"])
    assert result.exit_code == 0, result.output
    assert runs(table) == {0: 1, 1: 1}
    result = runner.invoke(cli, ["compact", "-w", str(tmp_path), "db.t"])
    assert "nothing compacted (no bucket has more than one sorted run)" in result.output
    assert table.rows().sort_by("id").to_pylist() == expected


def test_a_table_read_after_compaction_merges_one_file_per_bucket(tmp_path: Path) -> None:
    # A sanity check of what a read has to merge, not a timing.
    table = make_table(tmp_path, trigger=1000)
    expected = write_commits(table, 40)
    latest = internals(table).files.latest_snapshot()
    assert latest is not None
    assert sum(len(b.files) for b in internals(table).files.compactions().bucket_files(latest.id)) > 40
    compact(internals(table))
    latest = internals(table).files.latest_snapshot()
    assert latest is not None
    assert sum(len(b.files) for b in internals(table).files.compactions().bucket_files(latest.id)) == 2
    assert table.rows().sort_by("id").to_pylist() == expected


def manifests_of_latest(warehouse: Path, identifier: str) -> int:
    """How many manifest files a read of the latest snapshot opens (plain pypaimon)."""
    import pypaimon
    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    paimon = pypaimon.CatalogFactory.create({"warehouse": str(warehouse)}).get_table(identifier)
    return len(ManifestListManager(paimon).read_all(paimon.snapshot_manager().get_latest_snapshot()))


def test_a_compaction_merges_the_manifests_every_commit_added(tmp_path: Path) -> None:
    table = make_table(tmp_path, trigger=1000)
    expected = write_commits(table, 40)
    assert manifests_of_latest(tmp_path, "db.t") >= 40
    before = {s.id: table.rows(s.id).sort_by("id").to_pylist() for s in table.snapshots()}
    compact(internals(table))
    assert manifests_of_latest(tmp_path, "db.t") <= 3
    assert table.rows().sort_by("id").to_pylist() == expected
    assert rows_read_by_plain_pypaimon(tmp_path, "db.t") == expected
    assert {s: table.rows(s).sort_by("id").to_pylist() for s in before} == before
    # Later commits and compactions build on the merged manifests.
    expected = write_commits(table, 3, start=40)
    compact(internals(table))
    assert table.rows().sort_by("id").to_pylist() == expected
    assert rows_read_by_plain_pypaimon(tmp_path, "db.t") == expected


def test_a_table_with_few_manifests_keeps_them(tmp_path: Path) -> None:
    table = make_table(tmp_path, trigger=1000)
    write_commits(table, 5)
    compact(internals(table))
    assert manifests_of_latest(tmp_path, "db.t") == 6  # five commits' and the compaction's


def paimon_arrow_schema(paimon: Any) -> pa.Schema:
    from pypaimon.schema.data_types import PyarrowFieldParser

    return PyarrowFieldParser.from_paimon_schema(paimon.table_schema.fields)


def test_a_table_object_older_than_the_schema_of_the_files_does_not_compact_them(tmp_path: Path) -> None:
    import pypaimon
    from pypaimon.schema.data_types import AtomicType
    from pypaimon.schema.schema_change import SchemaChange

    stale = make_table(tmp_path, trigger=1000)
    write_commits(stale, 3)
    # Another process adds a column (schema evolution: another part of #16) and writes with it.
    catalog = pypaimon.CatalogFactory.create({"warehouse": str(tmp_path)})
    catalog.alter_table("db.t", [SchemaChange.add_column("note", AtomicType("STRING"))])
    paimon = catalog.get_table("db.t")
    builder = paimon.new_batch_write_builder()
    write, commit = builder.new_write(), builder.new_commit()
    write.write_arrow(pa.table({"id": pa.array([1], pa.int64()), "v": ["new"], "note": ["added"]}, schema=paimon_arrow_schema(paimon)))
    commit.commit(write.prepare_commit())
    write.close()
    commit.close()
    fresh = tablelog.open_table(str(tmp_path), "db.t")
    snapshots = [s.id for s in stale.snapshots()]
    result = compact(internals(stale))
    assert result.snapshot_id is None and "newer than this table object's" in (result.skipped or "")
    assert [s.id for s in stale.snapshots()] == snapshots
    # Opened again, the compaction rewrites the old rows into the new schema: the new column null.
    assert tablelog.open_table(str(tmp_path), "db.t").compact().snapshot_id is not None
    rows = {r["id"]: r for r in fresh.rows().to_pylist()}
    assert rows[1] == {"id": 1, "v": "new", "note": "added"}
    assert rows[0]["note"] is None
