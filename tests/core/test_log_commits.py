"""The walk over a table's past commits (tablelog.commit.history)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import tablelog
from tablelog.commit import last_end_positions, log_commits, snapshot_commits
from tablelog.table import Table, internals

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


@pytest.fixture
def table(tmp_path: Path) -> Table:
    """Snapshots 1, 2 committed by tablelog writer "w"; 3 by a plain Paimon commit; 4 by "w"."""
    table = tablelog.create_table(str(tmp_path), "db.t", SCHEMA, primary_key=["id"],
                                  options={"log.system": "filesystem"})
    with table.writer("w") as writer:
        for i in (1, 2):
            writer.write([{"id": i, "v": "x"}])
            writer.commit()
        files = internals(table).files.new_write()
        files.write_arrow(pa.table({"id": [9], "v": ["p"]}))
        internals(table).files.commit(files.prepare_commit(7), commit_user="plain", commit_identifier=7, properties={})
        files.close()
        writer.write([{"id": 4, "v": "x"}])
        writer.commit()
    return table


def test_log_commits_are_the_snapshots_tablelog_committed_with_their_log_part(table: Table) -> None:
    assert [(s.id, r.writer, r.commit_identifier) for s, r in log_commits(internals(table).files)] == [
        (1, "w", 1), (2, "w", 2), (4, "w", 3)
    ]
    assert [s.id for s, _ in log_commits(internals(table).files, newest_first=True)] == [4, 2, 1]


def test_snapshot_commits_show_a_snapshot_without_a_log_part_as_none(table: Table) -> None:
    assert [(s.id, r is None) for s, r in snapshot_commits(internals(table).files)] == [
        (1, False), (2, False), (3, True), (4, False)
    ]


def test_after_and_upto_bound_the_walk_to_the_snapshots_between(table: Table) -> None:
    assert [s.id for s, _ in snapshot_commits(internals(table).files, after=1, upto=3)] == [2, 3]
    assert [s.id for s, _ in log_commits(internals(table).files, newest_first=True, upto=3)] == [2, 1]
    assert [s.id for s, _ in log_commits(internals(table).files, upto=99)] == [1, 2, 4]


def test_the_end_positions_up_to_a_snapshot_are_those_of_the_newest_log_commit_up_to_it(table: Table) -> None:
    files, log = internals(table).files, (table.options.log_system, table.topic)
    second = dict(next(r for s, r in log_commits(files) if s.id == 2).end_positions)
    assert last_end_positions(files, *log, upto=3) == second
    assert last_end_positions(files, *log) == dict(next(log_commits(files, newest_first=True))[1].end_positions)
    assert last_end_positions(files, *log)[0] > second[0]  # snapshot 4 committed one more record
