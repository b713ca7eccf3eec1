"""Exactly-once on merge-engine tables, proven by counting, for any log system.

Subclass :class:`MergeEngineScenarios` and provide the fixture ``log_options`` (as for
:class:`~tablelog.testing.scenarios.ExactlyOnceScenarios`). A merge-engine table's log
carries its changelog, computed from the table's rows when an attempt finishes: a failed
attempt's changes must never reach a transactional reader, and its retry's must reach it
once, equal to an independent reference (:mod:`tablelog.testing.merge_reference`), while
eventual readers, which see every attempt, normalize to the table's rows. An aggregation
table shows a change counted twice at once (its sums would be off).
"""

from __future__ import annotations

import random
import textwrap
from pathlib import Path

from tablelog.normalize import Normalizer
from tablelog.table import Table
from tablelog.tables import open_table
from tablelog.testing.merge_reference import (
    ENGINES,
    Input,
    Model,
    assert_changes_are,
    create,
    read_all,
    replay,
    table_rows,
    write_and_commit,
    writes_as_changes,
)
from tablelog.testing.processes import kill_when_reached
from tablelog.testing.scenarios import LogSystemFixtures
from tablelog.verify import verify


class MergeEngineScenarios(LogSystemFixtures):
    """Provide fixture ``log_options``; the tests below need nothing else."""

    def test_merged_changes_of_attempts_that_died_after_producing_reach_transactional_readers_once(
        self, warehouse: str, log_options: dict[str, str],
    ) -> None:
        engine = ENGINES["aggregation"]
        table = create(warehouse, engine, log_options)
        model, rng = Model(engine), random.Random(3)
        expected: dict[int, list[Input]] = {}
        for commit_id in (1, 2, 3):
            writes = engine.inputs(rng, 15)
            receipts = []
            for attempt in range(2):  # the first dies after producing: finished, never committed
                task = table.write_task("w", commit_id, task=f"0-attempt-{attempt}")
                task.write(writes_as_changes(writes))
                receipts.append(task.finish())
            result = table.commit("w", commit_id, receipts[-1:])
            assert result.snapshot_id is not None
            expected[result.snapshot_id] = model.commit(writes)
        self.assert_readers_end_on_the_reference(table, expected, model.rows)

    def test_a_writer_killed_before_committing_and_restarted_with_its_id_commits_its_changes_once(
        self, warehouse: str, log_options: dict[str, str],
    ) -> None:
        """Partial-update: the killed writer's changes were computed against a table that
        another stream then changed; the restarted writer's are computed again."""
        engine = ENGINES["partial-update"]
        table = create(warehouse, engine, log_options)
        model, expected = Model(engine), dict[int, list[Input]]()
        names = [("+I", {"id": i, "a": f"name-{i}", "b": None}) for i in range(20)]
        with table.writer("names") as writer:
            write_and_commit(writer, model, names[:10], expected)
        reached = Path(warehouse) / "reached"
        kill_when_reached(_KILLED_WRITER, {"warehouse": warehouse, "table": table.identifier, "options": log_options,
                                           "rows": names, "reached": str(reached)}, reached)
        assert len(read_all(table, "eventual")) > len(names[:10])  # the killed writer's changes are in the log
        scores = [("+I", {"id": i, "a": None, "b": i}) for i in range(5, 25)]
        with table.writer("scores") as writer:
            write_and_commit(writer, model, scores, expected)
        restarted = open_table(warehouse, table.identifier, log_options)
        with restarted.writer("names") as writer:
            assert writer.commit_identifier == 2
            write_and_commit(writer, model, names, expected)
        self.assert_readers_end_on_the_reference(table, expected, model.rows)

    def assert_readers_end_on_the_reference(self, table: Table, expected: dict[int, list[Input]],
                                            rows: dict[int, dict[str, object]]) -> None:
        changes = read_all(table)
        assert_changes_are(changes, expected)
        assert replay(changes) == table_rows(table) == rows
        normalizer = Normalizer(table.primary_key)
        normalizer.apply(read_all(table, "eventual"))
        assert {row["id"]: dict(row) for row in normalizer.rows()} == rows
        report = verify(table)
        assert report.consistent, report.summary()


# A writer of the `names` stream whose commit never returns: it has finished (its changes
# are in the log) when the test kills it.
_KILLED_WRITER = textwrap.dedent("""
    import time
    from pathlib import Path
    from tablelog.tables import open_table
    from tablelog.testing.processes import child_config
    from tablelog.writing import writer as writer_module

    config = child_config()
    def wait_forever(*args, **kwargs):
        Path(config["reached"]).write_text("reached")
        time.sleep(600)
    writer_module.committer.commit = wait_forever
    table = open_table(config["warehouse"], config["table"], config["options"])
    with table.writer("names") as writer:
        writer.write([(kind, row) for kind, row in config["rows"]])
        writer.commit()
""")
