"""Tables with a merge engine (and deduplicate tables with ``changelog-producer = lookup``):
the log carries the table's changelog, not the writes.

Each test checks what a transactional reader returns against a reference independent of
tablelog's merge code (:mod:`tablelog.testing.merge_reference`): a few lines per engine
keep the table's rows by key, the way Paimon's documentation describes the engine; each
snapshot's expected changes are the per-key diff of the reference before and after it,
by the rule of Paimon's ``lookup`` changelog producer. Writers run sequentially and concurrently (two
attempts computed against the same snapshot, committed one after the other, so that
the second's changes must be computed again by its committer).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from tablelog.cli import cli
from tablelog.normalize import Normalizer
from tablelog.table import Table
from tablelog.testing import NO_COMPACTION, merge_reference
from tablelog.testing.merge_reference import (
    ENGINES,
    Engine,
    Input,
    Model,
    Row,
    assert_changes_are,
    by_snapshot,
    canonical,
    read_all,
    replay,
    table_rows,
    write_and_commit,
    writes_as_changes,
)
from tablelog.testing.merge_scenarios import MergeEngineScenarios
from tablelog.verify import verify
from tablelog.writing import merged_parts


def create(warehouse: Path, engine: Engine, **options: str) -> Table:
    return merge_reference.create(str(warehouse), engine, {"log.system": "filesystem", "log.system.partitions": "2"},
                                  **options)


@pytest.fixture(params=sorted(ENGINES))
def engine(request: pytest.FixtureRequest) -> Iterator[Engine]:
    yield ENGINES[request.param]


def test_each_snapshot_brings_exactly_the_reference_changes_of_its_keys(
    tmp_path: Path, engine: Engine, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Random writes over 16 commits: one writer, then two attempts computed against the
    same snapshot and committed one after the other (the second's changes are computed
    again by the committer). Each attempt's changes are computed in parts by bucket, as
    a large attempt's are (:mod:`tablelog.writing.merged_parts`; the other tests here
    compute small attempts' at once)."""
    monkeypatch.setattr(merged_parts, "MIN_PART_ROWS", 1)
    table = create(tmp_path, engine)
    model = Model(engine)
    rng = random.Random(29)
    expected: dict[int, list[tuple[str, Row]]] = {}
    for round_ in range(16):
        if round_ % 2 == 0:
            writes = engine.inputs(rng, 10)
            with table.writer(f"w{round_}") as writer:
                writer.write(writes_as_changes(writes))
                result = writer.commit()
            assert result.snapshot_id is not None
            expected[result.snapshot_id] = model.commit(writes)
        else:
            first, second = engine.inputs(rng, 8), engine.inputs(rng, 8)
            tasks = [table.write_task("a", round_), table.write_task("b", round_)]
            tasks[0].write(writes_as_changes(first))
            tasks[1].write(writes_as_changes(second))
            receipts = [t.finish() for t in tasks]  # both against the same snapshot
            for writer_id, receipt, writes in (("a", receipts[0], first), ("b", receipts[1], second)):
                result = table.commit(writer_id, round_, [receipt])
                assert result.snapshot_id is not None
                expected[result.snapshot_id] = model.commit(writes)
    changes = read_all(table)
    got = by_snapshot(changes)
    for snapshot_id, its_changes in expected.items():
        assert canonical(got.get(snapshot_id, [])) == canonical(its_changes), f"snapshot {snapshot_id}"
    assert set(got) <= set(expected)
    assert table_rows(table) == model.rows
    assert replay(changes) == model.rows
    assert verify(table).consistent



def test_eventual_readers_normalized_end_with_the_tables_rows_after_conflicting_commits(tmp_path: Path, engine: Engine) -> None:
    table = create(tmp_path, engine)
    rng = random.Random(7)
    for round_ in range(6):
        tasks = [table.write_task(w, round_) for w in ("a", "b")]
        for task in tasks:
            task.write(writes_as_changes(engine.inputs(rng, 8)))
        receipts = [t.finish() for t in tasks]
        table.commit("a", round_, receipts[:1])
        table.commit("b", round_, receipts[1:])
    normalizer = Normalizer(["id"])
    normalizer.apply(read_all(table, "eventual"))
    assert {row["id"]: dict(row) for row in normalizer.rows()} == table_rows(table)


def test_two_attempts_of_one_commit_writing_the_same_key_get_one_change(tmp_path: Path) -> None:
    engine = ENGINES["partial-update"]
    table = create(tmp_path, engine)
    with table.writer("w") as writer:
        writer.write([{"id": 1, "a": "x", "b": 1}])
        writer.commit()
    tasks = [table.write_task("spark", 1, "0"), table.write_task("spark", 1, "1")]
    tasks[0].write([{"id": 1, "a": "y", "b": None}])
    tasks[1].write([{"id": 1, "a": None, "b": 2}])
    table.commit("spark", 1, [t.finish() for t in tasks])
    changes = [c for c in read_all(table) if c.snapshot_id == 2]
    assert [(c.kind.value, c.row) for c in changes] == [
        ("-U", {"id": 1, "a": "x", "b": 1}), ("+U", {"id": 1, "a": "y", "b": 2})]


def test_a_repeated_first_row_key_reaches_no_reader(tmp_path: Path) -> None:
    table = create(tmp_path, ENGINES["first-row"])
    with table.writer("w") as writer:
        writer.write([{"id": 1, "v": "first"}, {"id": 1, "v": "second"}])
        writer.commit()
        writer.write([{"id": 1, "v": "third"}, {"id": 2, "v": "new"}])
        writer.commit()
    assert [(c.kind.value, c.row["v"]) for c in read_all(table)] == [("+I", "first"), ("+I", "new")]
    assert table_rows(table) == {1: {"id": 1, "v": "first"}, 2: {"id": 2, "v": "new"}}


def test_a_first_row_written_before_the_keys_row_but_committed_after_it_reaches_readers_as_an_update(
    tmp_path: Path,
) -> None:
    """Records are ordered by when they were written: the slow writer's row is the first
    from its commit on, and transactional readers, eventual readers and verify say so."""
    table = create(tmp_path, ENGINES["first-row"])
    slow = table.write_task("slow", 1)
    slow.write([{"id": 1, "v": "written-first"}])
    receipt = slow.finish()
    with table.writer("fast") as writer:
        writer.write([{"id": 1, "v": "committed-first"}, {"id": 2, "v": "other"}])
        writer.commit()
    table.commit("slow", 1, [receipt])
    assert table_rows(table)[1] == {"id": 1, "v": "written-first"}
    changes = read_all(table)
    assert [(c.kind.value, c.row["v"]) for c in changes if c.row["id"] == 1] == [
        ("+I", "committed-first"), ("-U", "committed-first"), ("+U", "written-first")]
    assert replay(changes) == table_rows(table)
    normalizer = Normalizer(["id"])
    normalizer.apply(read_all(table, "eventual"))
    assert {row["id"]: dict(row) for row in normalizer.rows()} == table_rows(table)
    report = verify(table)
    assert report.consistent, report.summary()


def test_a_late_event_under_a_sequence_field_leaves_the_row_and_says_so_as_paimon_does(tmp_path: Path) -> None:
    """Without row-deduplicate Paimon's lookup producer emits -U/+U of the unchanged row;
    with it, nothing."""
    for dedup, expected in (("false", [("+I", 5), ("-U", 5), ("+U", 5)]), ("true", [("+I", 5)])):
        table = create(tmp_path, ENGINES["sequence-field"], **{"changelog-producer.row-deduplicate": dedup})
        with table.writer("w") as writer:
            writer.write([{"id": 1, "ts": 5, "v": "new"}])
            writer.commit()
            writer.write([{"id": 1, "ts": 3, "v": "late"}])
            writer.commit()
        assert [(c.kind.value, c.row["ts"]) for c in read_all(table)] == expected
        assert table_rows(table)[1]["v"] == "new"


def test_aggregation_sums_and_counts_with_deletes(tmp_path: Path) -> None:
    table = create(tmp_path, ENGINES["aggregation"])
    with table.writer("w") as writer:
        writer.write([{"id": 1, "total": 5, "n": 1}, {"id": 1, "total": 7, "n": 1}])
        writer.commit()
        writer.write([("-D", {"id": 1, "total": 5, "n": 1})])
        writer.commit()
    assert [(c.kind.value, c.row["total"], c.row["n"]) for c in read_all(table)] == [
        ("+I", 12, 2), ("-U", 12, 2), ("+U", 7, 1)]
    assert table_rows(table) == {1: {"id": 1, "total": 7, "n": 1}}


def test_a_retraction_the_engine_refuses_fails_the_write_and_leaves_nothing(tmp_path: Path) -> None:
    table = create(tmp_path, ENGINES["partial-update"])
    with table.writer("w") as writer:
        writer.write([{"id": 1, "a": "x", "b": 1}])
        writer.commit()
        with pytest.raises(ValueError, match="partial-update"):
            writer.write([("-D", {"id": 1, "a": "x", "b": 1})])
        writer.commit()
    assert len(read_all(table)) == 1
    assert table_rows(table) == {1: {"id": 1, "a": "x", "b": 1}}



def commit_rounds(table: Table, model: Model, rng: random.Random, rounds: int,
                  states: dict[int, dict[int, Row]] | None = None) -> dict[int, list[Input]]:
    """``rounds`` commits of random writes; each snapshot's expected changes (and, in
    ``states``, the reference rows after it)."""
    expected: dict[int, list[Input]] = {}
    with table.writer("w") as writer:
        for _ in range(rounds):
            snapshot_id = write_and_commit(writer, model, model.engine.inputs(rng, 10), expected)
            if states is not None:
                states[snapshot_id] = dict(model.rows)
    return expected


def test_a_replayed_commit_and_tablelog_compact_leave_the_changelog_and_verify_as_the_reference(
    tmp_path: Path, engine: Engine,
) -> None:
    """The same receipts committed twice: the second commits nothing. ``tablelog compact``
    merges with the table's engine: later commits' changes start from the merged rows."""
    table = create(tmp_path, engine, **NO_COMPACTION)
    model, rng = Model(engine), random.Random(11)
    expected = commit_rounds(table, model, rng, 3)
    writes = engine.inputs(rng, 10)
    task = table.write_task("replayed", 1)
    task.write(writes_as_changes(writes))
    receipts = [task.finish()]
    first = table.commit("replayed", 1, receipts)
    assert first.committed and first.snapshot_id is not None
    expected[first.snapshot_id] = model.commit(writes)
    again = table.commit("replayed", 1, receipts)
    assert not again.committed and again.snapshot_id == first.snapshot_id
    result = CliRunner().invoke(cli, ["compact", "-w", str(tmp_path), table.identifier])
    assert result.exit_code == 0, result.output
    # first-row: every commit compacts the buckets it wrote (docs/merge-engines.md), nothing is left
    assert "compacted bucket(s)" in result.output or engine.first_row, result.output
    assert [s.commit_kind for s in table.snapshots()][-1] == "COMPACT"
    assert table_rows(table) == model.rows
    expected |= commit_rounds(table, model, rng, 2)
    changes = read_all(table)
    assert_changes_are(changes, expected)
    assert replay(changes) == table_rows(table) == model.rows
    report = verify(table)
    assert report.consistent, report.summary()


def test_after_expiry_a_reader_from_earliest_starts_at_the_earliest_kept_snapshot_and_verify_is_consistent(
    tmp_path: Path, engine: Engine,
) -> None:
    table = create(tmp_path, engine, **{"snapshot.num-retained.min": "2", "snapshot.num-retained.max": "3"})
    model, rng = Model(engine), random.Random(5)
    states: dict[int, dict[int, Row]] = {}
    expected = commit_rounds(table, model, rng, 7, states)
    kept = [s.id for s in table.snapshots()]
    assert kept[0] > 1
    changes = read_all(table)
    assert_changes_are(changes, {s: c for s, c in expected.items() if s >= kept[0]})
    before_kept = max((s for s in states if s < kept[0]), default=None)
    start = dict(states[before_kept]) if before_kept is not None else {}
    assert replay(changes, start) == table_rows(table) == model.rows
    report = verify(table)
    assert report.consistent, report.summary()


class TestMergeEngineFailuresOnTheFileLog(MergeEngineScenarios):
    @pytest.fixture
    def log_options(self) -> dict[str, str]:
        return {"log.system": "filesystem", "log.system.partitions": "2"}


def test_a_replayed_commit_leaves_eventual_readers_with_the_tables_rows(tmp_path: Path) -> None:
    """A Spark micro-batch replayed after its driver died: its attempts would compute their
    changes against a table that holds the batch already (sums counted twice); the commit
    is there, so they produce nothing."""
    table = create(tmp_path, ENGINES["aggregation"])
    writes = [{"id": 1, "total": 5, "n": 1}, {"id": 2, "total": 7, "n": 1}]
    for replay_ in (False, True):
        task = table.write_task("spark-query", 1, "p0")
        task.write(writes)
        result = table.commit("spark-query", 1, [task.finish()])
        assert result.committed is not replay_
    eventual = read_all(table, "eventual")
    assert len(eventual) == 2
    normalizer = Normalizer(["id"])
    normalizer.apply(eventual)
    assert {row["id"]: dict(row) for row in normalizer.rows()} == table_rows(table) == {
        1: {"id": 1, "total": 5, "n": 1}, 2: {"id": 2, "total": 7, "n": 1}}
    assert [(c.kind.value, c.row["total"]) for c in read_all(table)] == [("+I", 5), ("+I", 7)]
