"""`tablelog relay` on the file log: other writers' commits reach a plain reader of the
log exactly once (:mod:`tablelog.testing.relay_scenarios`), and what the relay refuses."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tablelog.relay import Relay, RelayError
from tablelog.table import internals
from tablelog.testing.relay_scenarios import RelayScenarios, foreign_commit, log_values, row


class TestRelayOnTheFileLog(RelayScenarios):
    @pytest.fixture
    def log_options(self) -> dict[str, str]:
        return {"log.system": "filesystem"}


def test_relaying_a_foreign_snapshot_that_expired_fails_and_says_how_to_go_on(tmp_path: Path) -> None:
    table = TestRelayOnTheFileLog().make_table(tmp_path, {"log.system": "filesystem"})
    with table.writer() as writer:
        writer.write([row(1, "a")])
        writer.commit()
    foreign = foreign_commit(table, [("+I", row(2, "b"))])
    with table.writer() as writer:
        for i in range(3, 6):
            writer.write([row(i, "c")])
            writer.commit()
    from click.testing import CliRunner

    from tablelog.cli import cli

    expired = CliRunner().invoke(cli, ["expire", "--warehouse", str(tmp_path), "db.t",
                                       "-o", "snapshot.num-retained.min=1", "-o", "snapshot.num-retained.max=1"])
    assert expired.exit_code == 0, expired.output
    with Relay(internals(table), from_snapshot=foreign) as relay, pytest.raises(RelayError) as err:
        relay.step()
    assert f"snapshots {foreign}..4 expired before the relay published them" in str(err.value)
    assert "--from-snapshot 5" in str(err.value)


def test_a_table_without_a_log_has_nothing_to_relay_into(tmp_path: Path) -> None:
    from tablelog.errors import OptionError

    table = TestRelayOnTheFileLog().make_table(tmp_path, {})
    with pytest.raises(OptionError, match="has no log"):
        Relay(internals(table))


def test_a_second_relay_of_the_same_table_is_refused(tmp_path: Path) -> None:
    table = TestRelayOnTheFileLog().make_table(tmp_path, {"log.system": "filesystem"})
    with Relay(internals(table)), pytest.raises(RelayError, match="another relay is running for this table"):
        Relay(internals(table))
    Relay(internals(table)).close()  # the first one stopped: the lock is free


def test_the_relay_consumer_keeps_the_snapshots_it_has_yet_to_publish_from_expiry(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from tablelog.cli import cli

    table = TestRelayOnTheFileLog().make_table(tmp_path, {"log.system": "filesystem"})
    with table.writer() as writer:
        writer.write([row(1, "a")])
        writer.commit()
    with Relay(internals(table), consumer_id="relay") as relay:
        assert relay.step().relayed == ()
    foreign = foreign_commit(table, [("+U", row(1, "b"))])
    with table.writer() as writer:
        for i in range(3, 6):
            writer.write([row(i, "c")])
            writer.commit()
    expired = CliRunner().invoke(cli, ["expire", "--warehouse", str(tmp_path), "db.t",
                                       "-o", "snapshot.num-retained.min=1", "-o", "snapshot.num-retained.max=1"])
    assert expired.exit_code == 0, expired.output
    assert "held by" in expired.output or "no snapshot expired" in expired.output
    with Relay(internals(table), consumer_id="relay") as relay:
        assert relay.step().relayed == (foreign,)


def test_the_relay_command_follows_the_table_and_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys

    table = TestRelayOnTheFileLog().make_table(tmp_path, {"log.system": "filesystem"})
    with table.writer() as writer:
        writer.write([row(1, "a")])
        writer.commit()
    command = [sys.executable, "-c", "from tablelog.cli import main; main()",
               "relay", "--warehouse", str(tmp_path), "db.t", "--interval", "0.1"]
    # a relay that does not stop is made to print its threads' stacks (faulthandler, SIGABRT)
    relay = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONFAULTHANDLER": "1"})
    try:
        assert relay.stdout is not None
        assert relay.stdout.readline().startswith("relaying db.t")
        foreign = foreign_commit(table, [("+U", row(1, "b")), ("+I", row(2, "c"))])
        assert relay.stdout.readline().startswith(f"relayed snapshot(s) {foreign}: 2 change(s) in snapshot ")
        relay.send_signal(signal.SIGTERM)
        try:
            out, err = relay.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            relay.send_signal(signal.SIGABRT)
            pytest.fail(f"the relay did not stop within 60 s of SIGTERM; its stacks:\n{relay.communicate()[1]}")
    finally:
        if relay.poll() is None:
            relay.kill()
            relay.wait()
    assert relay.returncode == 0, err
    assert out.strip() == "db.t: 1 foreign snapshot(s) relayed, 2 change(s)"
    assert not err
    Relay(internals(table)).close()  # it stopped: the relay lock is free again


def paimon_commit(warehouse: Path, rows: list[dict[str, object]], *, overwrite: bool = False) -> None:
    """A commit by pypaimon directly, as another engine makes one."""
    import pyarrow as pa
    import pypaimon
    from pypaimon.schema.data_types import PyarrowFieldParser

    paimon = pypaimon.CatalogFactory.create({"warehouse": str(warehouse)}).get_table("db.t")
    builder = paimon.new_batch_write_builder()
    if overwrite:
        builder = builder.overwrite()
    write, commit = builder.new_write(), builder.new_commit()
    try:
        write.write_arrow(pa.Table.from_pylist(rows, schema=PyarrowFieldParser.from_paimon_schema(
            paimon.table_schema.fields)))
        commit.commit(write.prepare_commit())
    finally:
        write.close()
        commit.close()


def test_a_foreign_overwrite_of_a_primary_key_table_is_relayed_as_the_difference_it_made(tmp_path: Path) -> None:
    from tablelog.testing.relay_scenarios import envelope, envelopes

    table = TestRelayOnTheFileLog().make_table(tmp_path, {"log.system": "filesystem"})
    with table.writer() as writer:
        writer.write([row(1, "a"), row(2, "b"), row(3, "c")])
        writer.commit()
    paimon_commit(tmp_path, [{**row(2, "b2"), "_tablelog_kind": "+I"}, {**row(3, "c"), "_tablelog_kind": "+I"},
                             {**row(4, "d"), "_tablelog_kind": "+I"}], overwrite=True)
    assert [s.commit_kind for s in table.snapshots()][-1] == "OVERWRITE"
    with Relay(internals(table)) as relay:
        assert relay.step().changes == 3
    # Key 1 removed, 2 changed, 3 written again unchanged (no change), 4 new.
    written = {envelope("c", after=row(i, name)): 1 for i, name in ((1, "a"), (2, "b"), (3, "c"))}
    assert envelopes(log_values(table)) == {
        **written, envelope("d", before=row(1, "a")): 1, envelope("c", after=row(2, "b2")): 1,
        envelope("c", after=row(4, "d")): 1,
    }


def test_a_foreign_insert_into_an_append_table_is_relayed_row_by_row(tmp_path: Path) -> None:
    import pyarrow as pa

    import tablelog
    from tablelog.testing.relay_scenarios import envelope, envelopes

    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    table = tablelog.create_table(str(tmp_path), "db.t", schema, bucket=2, options={"log.system": "filesystem"})
    with table.writer() as writer:
        writer.write([row(1, "a")])
        writer.commit()
    paimon_commit(tmp_path, [row(1, "a"), row(2, "b")])
    with Relay(internals(table)) as relay:
        assert relay.step().changes == 2
    assert envelopes(log_values(table)) == {envelope("c", after=row(1, "a")): 2, envelope("c", after=row(2, "b")): 1}


def test_an_eventual_reader_can_tell_a_relay_record_and_its_foreign_snapshot_from_the_token() -> None:
    from tablelog.commit.log_commit import new_token, relay_token, relayed_snapshot

    prefix = "0a1b2c3d-"
    assert relayed_snapshot(relay_token(prefix, 4242), prefix) == 4242
    assert relayed_snapshot(new_token(prefix), prefix) is None  # a writer's: hex digits, never "relay"
    assert relayed_snapshot(relay_token("ffffffff-", 7), prefix) is None  # another table's relay


def test_a_relay_going_on_from_where_it_stopped_passes_over_what_another_relay_published_meanwhile(
    tmp_path: Path,
) -> None:
    table = TestRelayOnTheFileLog().make_table(tmp_path, {"log.system": "filesystem"})
    with table.writer() as writer:
        writer.write([row(1, "a")])
        writer.commit()
    with Relay(internals(table)) as relay:
        relay.step()
        stopped_at = relay.next_snapshot
    foreign = foreign_commit(table, [("+U", row(1, "b"))])
    with Relay(internals(table)) as other:
        assert other.step().relayed == (foreign,)
    with Relay(internals(table), resume_from=stopped_at) as relay:
        assert relay.step().relayed == ()
    assert len(log_values(table)) == 2


def test_an_eventual_reader_leaves_out_the_relays_copy_that_would_undo_later_changes(tmp_path: Path) -> None:
    """The relay publishes another writer's commit after tablelog's later writes of the same
    key; an eventual reader takes that commit from the table files in its place and leaves
    the relay's copy out, so its normalized result is the table, not the older value."""
    import tablelog

    table = TestRelayOnTheFileLog().make_table(tmp_path, {"log.system": "filesystem"})
    with table.writer() as writer:
        writer.write([row(1, "a")])
        writer.commit()
    foreign_commit(table, [("+U", row(1, "b"))])
    with table.writer() as writer:
        writer.write([row(1, "c")])
        writer.commit()
    with Relay(internals(table)) as relay:
        relay.step()
    assert [json.loads(v)["after"]["name"] for v in log_values(table)] == ["a", "c", "b"]  # the relay's copy last
    with table.reader(consistency="eventual", scan_mode="earliest") as reader:
        changes = reader.read_all(idle_timeout_s=1.0)
    assert [c.row["name"] for c in changes] == ["a", "b", "c"]
    normalized = tablelog.Normalizer(table.primary_key)
    normalized.apply(changes)
    assert {k: r["name"] for k, r in normalized.state.items()} == {(1,): "c"}
