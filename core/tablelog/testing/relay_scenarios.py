"""The relay's scenarios (``tablelog relay``, :mod:`tablelog.relay`) for any log system,
proven by counting what a consumer that knows nothing of tablelog reads.

Subclass :class:`RelayScenarios` and provide the fixture ``log_options`` (as for
:class:`~tablelog.testing.scenarios.ExactlyOnceScenarios`). The records are read back by
:meth:`RelayScenarios.raw_values`: by default every record value of the table's topic
through the log system's client (:func:`log_values`), nothing of tablelog's commit records
consulted; override it to read them as a plain consumer of the system does (a Kafka
consumer assigned to every partition from the start).

A foreign commit here is what another pypaimon writer makes: pypaimon's own write and
commit of the table, with the row-kind column, and no tablelog property in the snapshot.
"""

from __future__ import annotations

import json
import textwrap
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tablelog.cli import cli
from tablelog.records import SeekSpec
from tablelog.relay import Relay
from tablelog.store import commit_changes
from tablelog.table import Table, internals
from tablelog.tables import create_table, open_table
from tablelog.testing.processes import kill_when_reached

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string())])

#: A change as a plain consumer of debezium-json sees it: (op, before, after), rows as JSON.
Envelope = tuple[str, str | None, str | None]


def envelope(op: str, before: dict[str, Any] | None = None, after: dict[str, Any] | None = None) -> Envelope:
    def text(row: dict[str, Any] | None) -> str | None:
        return None if row is None else json.dumps(row, sort_keys=True)

    return op, text(before), text(after)


def envelopes(values: list[bytes]) -> Counter[Envelope]:
    """What a debezium-json consumer reads from ``values``: only op, before and after count."""
    result: Counter[Envelope] = Counter()
    for value in values:
        doc = json.loads(value)
        result[envelope(doc["op"], doc["before"], doc["after"])] += 1
    return result


def log_values(table: Table) -> list[bytes]:
    """Every record value of the table's topic, partition by partition, in log order, read
    through its log system's client: nothing of tablelog's commit records consulted."""
    values = []
    with internals(table).open_log() as log:
        for partition in range(internals(table).log_partitions):
            position = log.seek(partition, SeekSpec.earliest())
            while True:
                fetched = log.fetch(partition, position, 1000, timeout_s=0.1)
                if not fetched.records:
                    break
                values += [r.value for r in fetched.records if r.value is not None]
                position = fetched.next_position
    return values


def foreign_commit(table: Table, changes: list[tuple[str, dict[str, Any]]]) -> int:
    """Commit ``changes`` (kind, row) as another Paimon writer does; returns the snapshot id."""
    return commit_changes(table.warehouse, table.identifier, changes)


def row(i: int, name: str) -> dict[str, Any]:
    return {"id": i, "name": name}


class RelayScenarios:
    """Every change reaches a plain consumer of the topic exactly once, whoever committed it."""

    @pytest.fixture
    def log_options(self) -> dict[str, str]:
        raise NotImplementedError("provide a log_options fixture")

    def raw_values(self, table: Table) -> list[bytes]:
        """Every record value of the table's topic, in log order per partition."""
        return log_values(table)

    def make_table(self, warehouse: Path | str, log_options: dict[str, str], identifier: str = "db.t") -> Table:
        return create_table(str(warehouse), identifier, SCHEMA, primary_key=["id"], bucket=2, options=log_options)

    def new_table(self, warehouse: Path, log_options: dict[str, str]) -> Table:
        """A table of a name of its own: its topic (named after it by default) is new on a
        server the tests share."""
        return self.make_table(warehouse, log_options, f"db.relay_{uuid.uuid4().hex[:10]}")

    def write_alternately(self, table: Table, relay_between: bool) -> Counter[Envelope]:
        """tablelog and another writer in turn (inserts, updates, deletes); with
        ``relay_between``, a relay step after each foreign commit. Returns what a plain
        consumer must read once the relay has caught up (upsert changelog: an update is
        its new row as a create, a delete its old row)."""
        expected: Counter[Envelope] = Counter()

        def relay() -> None:
            if relay_between:
                with Relay(internals(table)) as r:
                    assert r.step().relayed

        with table.writer() as writer:
            writer.write([row(i, f"t{i}") for i in range(1, 7)])
            writer.commit()
        expected.update(envelope("c", after=row(i, f"t{i}")) for i in range(1, 7))
        foreign_commit(table, [("+I", row(7, "f7")), ("+U", row(1, "f1")), ("-D", row(2, ""))])
        expected.update([envelope("c", after=row(7, "f7")), envelope("c", after=row(1, "f1")),
                         envelope("d", before=row(2, "t2"))])
        relay()
        with table.writer() as writer:
            writer.write([("-U", row(3, "t3")), ("+U", row(3, "t3b")), ("-D", row(4, "t4")), ("+I", row(8, "t8"))])
            writer.commit()
        expected.update([envelope("c", after=row(3, "t3b")), envelope("d", before=row(4, "t4")),
                         envelope("c", after=row(8, "t8"))])
        # An insert of a key that exists is an update; a delete with the key alone removes the whole row.
        foreign_commit(table, [("+I", row(7, "f7b")), ("-D", {"id": 5, "name": None}), ("+I", row(9, "f9")),
                               ("+U", row(3, "f3"))])
        expected.update([envelope("c", after=row(7, "f7b")), envelope("d", before=row(5, "t5")),
                         envelope("c", after=row(9, "f9")), envelope("c", after=row(3, "f3"))])
        relay()
        foreign_commit(table, [("-D", row(9, "f9")), ("+U", row(8, "f8"))])
        expected.update([envelope("d", before=row(9, "f9")), envelope("c", after=row(8, "f8"))])
        relay()
        with table.writer() as writer:
            writer.write([row(10, "t10")])
            writer.commit()
        expected.update([envelope("c", after=row(10, "t10"))])
        return expected

    def test_each_change_of_both_writers_reaches_a_plain_consumer_exactly_once(
        self, tmp_path: Path, log_options: dict[str, str],
    ) -> None:
        table = self.new_table(tmp_path, log_options)
        expected = self.write_alternately(table, relay_between=True)
        with Relay(internals(table)) as relay:
            assert relay.step().relayed == ()  # caught up: nothing twice
        values = self.raw_values(table)
        assert envelopes(values) == expected
        assert len(values) == sum(expected.values())
        # The relay ran after each foreign commit: replayed in log order, the topic ends as the table.
        state: dict[int, Any] = {}
        for value in values:
            doc = json.loads(value)
            if doc["after"] is not None:
                state[doc["after"]["id"]] = doc["after"]
            else:
                state.pop(doc["before"]["id"], None)
        assert sorted(state.values(), key=lambda r: r["id"]) == sorted(table.rows().to_pylist(), key=lambda r: r["id"])

    def test_the_relay_command_catches_up_in_one_run_and_a_second_run_adds_nothing(
        self, tmp_path: Path, log_options: dict[str, str],
    ) -> None:
        from click.testing import CliRunner

        table = self.new_table(tmp_path, log_options)
        expected = self.write_alternately(table, relay_between=False)
        options = [f"-o{k}={v}" for k, v in log_options.items() if k != "log.system"]
        args = ["relay", "--warehouse", str(tmp_path), table.identifier, "--once", *options]
        first = CliRunner().invoke(cli, args)
        assert first.exit_code == 0, first.output
        assert "3 foreign snapshot(s) relayed, 9 change(s)" in first.output
        again = CliRunner().invoke(cli, args)
        assert again.exit_code == 0, again.output
        assert "0 foreign snapshot(s) relayed, 0 change(s)" in again.output
        assert envelopes(self.raw_values(table)) == expected
        relay_snapshots = [s for s in table.snapshots() if s.commit_user == "tablelog-relay"]
        assert [s.properties["tablelog.log.relayed-snapshots"] for s in relay_snapshots] == ["2,4,5"]

    def test_a_relay_killed_after_producing_and_before_committing_publishes_each_change_once(
        self, tmp_path: Path, log_options: dict[str, str],
    ) -> None:
        table = self.new_table(tmp_path, log_options)
        expected = self.write_alternately(table, relay_between=False)
        self.kill_relay_child(tmp_path, table, log_options, _WAIT_AT_COMMIT)
        # Produced, not committed: a plain consumer has every change already, no snapshot names them.
        assert envelopes(self.raw_values(table)) == expected
        assert not [s for s in table.snapshots() if s.commit_user == "tablelog-relay"]
        with Relay(internals(open_table(str(tmp_path), table.identifier, log_options))) as relay:
            step = relay.step()
        assert step.relayed == (2, 4, 5) and step.recovered == 9 and step.changes == 9
        values = self.raw_values(table)
        assert envelopes(values) == expected
        assert len(values) == sum(expected.values())

    def test_a_relay_killed_while_producing_produces_only_the_rest_when_it_starts_again(
        self, tmp_path: Path, log_options: dict[str, str],
    ) -> None:
        table = self.new_table(tmp_path, log_options)
        expected = self.write_alternately(table, relay_between=False)
        self.kill_relay_child(tmp_path, table, log_options, _WAIT_AFTER_TWO_PRODUCES)
        before = len(self.raw_values(table))
        with Relay(internals(open_table(str(tmp_path), table.identifier, log_options))) as relay:
            step = relay.step()
        assert step.relayed == (2, 4, 5) and step.changes == 9
        assert before - 10 == step.recovered and 0 < step.recovered < 9  # 10: the tablelog writers' records
        values = self.raw_values(table)
        assert envelopes(values) == expected
        assert len(values) == sum(expected.values())

    def kill_relay_child(self, tmp_path: Path, table: Table, log_options: dict[str, str], wait_at: str) -> None:
        """Run a relay step in a child process that waits where ``wait_at`` (a patch of the
        child's code) says and writes a file then; SIGKILL it there."""
        reached = tmp_path / "reached"
        kill_when_reached(_RELAY_CHILD.replace("# WAIT_AT", textwrap.indent(wait_at, "")), {
            "warehouse": str(tmp_path), "table": table.identifier, "reached": str(reached), "options": log_options,
        }, reached)


_RELAY_CHILD = textwrap.dedent("""
    import time
    from pathlib import Path
    from tablelog.logs.client import LogClient
    from tablelog.relay import relay as relay_module
    from tablelog.table import internals
    from tablelog.tables import open_table
    from tablelog.testing.processes import child_config

    config = child_config()
    def wait_forever():
        Path(config["reached"]).write_text("reached")
        time.sleep(600)
    # WAIT_AT
    table = open_table(config["warehouse"], config["table"], config["options"])
    relay_module.Relay(internals(table)).step()
""")
# The commit replaced by a wait: killed there, every record is in the log and no snapshot names them.
_WAIT_AT_COMMIT = "relay_module.committer.commit = lambda *args, **kwargs: wait_forever()\n"
# Two produce calls made durable, then a wait: killed there, the log has part of the records.
_WAIT_AFTER_TWO_PRODUCES = textwrap.dedent("""
    produce, produced = LogClient.produce, []
    def produce_twice(self, batch):
        produce(self, batch)
        produced.append(batch)
        if len(produced) == 2:
            self.flush(30)
            wait_forever()
    LogClient.produce = produce_twice
""")
