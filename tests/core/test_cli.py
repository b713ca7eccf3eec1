"""The `tablelog` command line, end to end on the filesystem log."""

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

import tablelog
from tablelog.cli import cli
from tablelog.commit import LogCommitRecord
from tablelog.logs.filesystem.frames import encode_batch
from tablelog.logs.filesystem.topic import partition_file_name
from tablelog.records import ProduceBatch
from tablelog.table import internals


@pytest.fixture
def runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("TABLELOG_WAREHOUSE", str(tmp_path / "wh"))
    return CliRunner()


def invoke(runner: CliRunner, *args: str, code: int = 0) -> str:
    result = runner.invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result.output


def populated(runner: CliRunner) -> tablelog.Table:
    invoke(runner, "create", "db.users", "--schema", "id bigint, name string", "-k", "id", "-b", "2",
           "-o", "log.system=filesystem")
    table = tablelog.open_table(os.environ["TABLELOG_WAREHOUSE"], "db.users")
    with table.writer("cli-test") as writer:
        writer.write([{"id": i, "name": f"user-{i}"} for i in range(20)])
        writer.commit()
        writer.write([("-D", {"id": 3, "name": "user-3"}), ("+U", {"id": 4, "name": "renamed"})])
        writer.commit()
    return table


@pytest.mark.parametrize("command", ["plugins", "options", "create", "alter", "describe", "tail", "verify", "demo"])
def test_every_command_has_help(runner: CliRunner, command: str) -> None:
    assert "Usage:" in invoke(runner, command, "--help")


def test_plugins_lists_the_builtin_and_bundled_log_systems(runner: CliRunner) -> None:
    out = invoke(runner, "plugins")
    assert "filesystem" in out and "kafka" in out and "pulsar" in out and "tablelog" in out


def test_describe_shows_snapshots_with_writes_and_log_positions(runner: CliRunner) -> None:
    table = populated(runner)
    out = invoke(runner, "describe", "db.users", "--tokens")
    assert "snapshots" in out and "cli-test" in out and "log end positions" in out
    record = LogCommitRecord.from_properties(internals(table).files.snapshot(2).properties)  # type: ignore[union-attr]
    assert record is not None and all(r.token in out for r in record.ranges)


def test_tail_prints_each_committed_change_and_a_resumable_position(runner: CliRunner) -> None:
    populated(runner)
    result = runner.invoke(cli, ["tail", "db.users", "--scan-mode", "earliest", "--idle-timeout", "0.3"],
                           catch_exceptions=False)  # output holds stdout and stderr
    lines = [line for line in result.output.splitlines() if line[:2] in ("+I", "+U", "-D", "-U")]
    assert len(lines) == 22
    assert any(line.startswith("-D") and '"id": 3' in line for line in lines)
    assert '"snapshot":2' in result.output


def test_verify_says_consistent(runner: CliRunner) -> None:
    populated(runner)
    assert "consistent: table db.users at snapshot 2" in invoke(runner, "verify", "db.users")


def test_verify_shows_the_difference_when_the_log_was_tampered_with(runner: CliRunner) -> None:
    table = populated(runner)
    # Rewrite one committed record in place, as a valid frame with another name.
    record = LogCommitRecord.from_properties(internals(table).files.snapshot(1).properties)  # type: ignore[union-attr]
    assert record is not None
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        victim = next(c for c in reader.read_all() if c.row["id"] == 7)
    assert victim.partition is not None and victim.position is not None
    token = next(r.token for r in record.ranges if r.partition == victim.partition)
    log_file = Path(table.warehouse.path) / ".tablelog" / "log" / "db.users" / partition_file_name(victim.partition)
    original = log_file.read_bytes()
    seq = next(i for i, c in enumerate(_records_of(table, victim.partition, token)) if c == victim.position)
    forged, _ = encode_batch(ProduceBatch(token, victim.partition, [b'{"id":7}'],
                                          [_value_like(original, victim.position, b"user-7", b"FORGED")],
                                          0, first_seq=seq))
    log_file.write_bytes(original[: victim.position] + forged + original[victim.position + len(forged):])
    out = invoke(runner, "verify", "db.users", code=1)
    assert "INCONSISTENT" in out and "1 row(s) differ" in out and "FORGED" in out


def test_verify_reports_log_data_that_is_gone(runner: CliRunner) -> None:
    table = populated(runner)
    log_dir = Path(table.warehouse.path) / ".tablelog" / "log" / "db.users"
    (log_dir / partition_file_name(0)).write_bytes(b"")
    out = invoke(runner, "verify", "db.users", code=1)
    assert "INCONSISTENT" in out and "log data lost" in out and "partition 0" in out


def test_errors_are_one_clear_line_without_a_traceback(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["describe", "db.missing"])
    assert result.exit_code == 1
    assert "does not exist" in result.output and "Traceback" not in result.output


def test_demo_runs_the_pipeline_and_ends_consistent(runner: CliRunner, tmp_path: Path) -> None:
    out = invoke(runner, "demo", "--engine", "python", "--warehouse", str(tmp_path / "demo"), "--batches", "3", "--rows", "50")
    assert "died before committing" in out
    assert "equal to the table's" in out
    assert "consistent: table demo.orders" in out


def _records_of(table: tablelog.Table, partition: int, token: str) -> list[int]:
    with internals(table).open_log() as log:
        result = log.fetch(partition, 0, 100_000, 1.0)
    return [r.position for r in result.records if r.token == token]


def _value_like(log: bytes, position: int, old: bytes, new: bytes) -> bytes:
    """The value of the frame at ``position`` with ``old`` replaced by ``new`` (same length)."""
    start = log.index(b'{"before"', position)
    end = log.index(b"}", log.index(b'"ts_ms"', start)) + 1
    value = log[start:end].replace(old, new)
    return json.dumps(json.loads(value), separators=(",", ":")).encode()
