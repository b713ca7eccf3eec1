"""The relay on an object-store warehouse: its snapshot without data files is created by
the conditional commit (no commit lock there) and a plain reader of the log gets each
foreign change once."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tablelog.relay import Relay
from tablelog.table import internals
from tablelog.testing.relay_scenarios import (
    RelayScenarios,
    envelope,
    envelopes,
    foreign_commit,
    log_values,
    row,
)
from tablelog.testing.s3_server import S3Endpoint

pytestmark = pytest.mark.cluster


def test_the_relay_commits_its_snapshot_on_s3_and_publishes_each_foreign_change_once(
        s3_server: S3Endpoint, tmp_path: Path) -> None:
    options = {
        "s3.endpoint": s3_server.endpoint, "s3.access-key": s3_server.access_key,
        "s3.secret-key": s3_server.secret_key, "log.system": "filesystem",
        "filesystem.path": str(tmp_path / "log"),
    }
    table = RelayScenarios().make_table(s3_server.url(f"relay-{uuid.uuid4().hex[:8]}"), options)
    with table.writer() as writer:
        writer.write([row(1, "t1")])
        writer.commit()
    foreign = foreign_commit(table, [("+U", row(1, "f1")), ("+I", row(2, "f2"))])
    with Relay(internals(table)) as relay:
        step = relay.step()
        assert step.relayed == (foreign,) and step.changes == 2
        assert relay.step().relayed == ()
    relay_snapshot = internals(table).files.snapshot(step.snapshot_id)  # type: ignore[arg-type]
    assert relay_snapshot is not None and relay_snapshot.properties["tablelog.log.relayed-snapshots"] == str(foreign)
    assert envelopes(log_values(table)) == {
        envelope("c", after=row(1, "t1")): 1, envelope("c", after=row(1, "f1")): 1, envelope("c", after=row(2, "f2")): 1,
    }
