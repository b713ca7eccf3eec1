"""`tablelog expire` and the consumers `tablelog describe` lists."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

import tablelog
from tablelog.cli import cli
from tablelog.testing import NO_COMPACTION


@pytest.fixture
def runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("TABLELOG_WAREHOUSE", str(tmp_path / "wh"))
    return CliRunner()


def invoke(runner: CliRunner, *args: str, code: int = 0) -> str:
    result = runner.invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result.output


def table_with_snapshots(count: int) -> tablelog.Table:
    table = tablelog.create_table(
        os.environ["TABLELOG_WAREHOUSE"], "db.t", pa.schema([("id", pa.int64())]), primary_key=["id"],
        options={"log.system": "filesystem", "snapshot.num-retained.min": "2", **NO_COMPACTION},
    )
    with table.writer("w") as writer:
        for i in range(count):
            writer.write([{"id": i}])
            writer.commit()
    return table


def test_expire_has_help(runner: CliRunner) -> None:
    assert "--dry-run" in invoke(runner, "expire", "--help")


def test_expire_dry_run_prints_what_would_go_and_removes_nothing(runner: CliRunner) -> None:
    table = table_with_snapshots(5)
    out = invoke(runner, "expire", "db.t", "--dry-run", "-o", "snapshot.time-retained=0ms")
    assert "would remove snapshots 1..3 (3)" in out
    assert "snapshots kept: 4..5" in out
    assert [s.id for s in table.snapshots()] == [1, 2, 3, 4, 5]


def test_expire_removes_the_snapshots_the_options_let_go(runner: CliRunner) -> None:
    table = table_with_snapshots(5)
    doc = json.loads(invoke(runner, "expire", "db.t", "-o", "snapshot.time-retained=0ms", "--format", "json"))
    assert doc["expired_snapshots"] == [1, 2, 3] and doc["earliest_kept"] == 4
    assert [s.id for s in table.snapshots()] == [4, 5]
    out = invoke(runner, "expire", "db.t", "-o", "snapshot.time-retained=0ms")
    assert "no snapshot expired (held by snapshot.num-retained.min)" in out


def test_expire_refuses_a_bad_retention_naming_the_option_and_value(runner: CliRunner) -> None:
    table_with_snapshots(1)
    result = runner.invoke(cli, ["expire", "db.t", "-o", "snapshot.time-retained=soon"])
    assert result.exit_code == 1
    assert "invalid value 'soon' for option 'snapshot.time-retained'" in result.output
