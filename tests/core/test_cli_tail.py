"""`tablelog tail` and `describe` as people use them: JSON output, exact resume
positions (--limit, Ctrl-C), tables without a log, values printed as JSON."""

from __future__ import annotations

import base64
import datetime
import decimal
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

import tablelog
from tablelog.cli import cli
from tablelog.commit.log_commit import LogCommitRecord
from tablelog.table import internals


@pytest.fixture
def warehouse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    path = str(tmp_path / "wh")
    monkeypatch.setenv("TABLELOG_WAREHOUSE", path)
    return path


def run(*args: str, code: int = 0) -> tuple[str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == code, result.output + result.stderr
    return result.stdout, result.stderr


def position_of(stderr: str) -> str:
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("# ") and "position: " in last, stderr
    return last.split("position: ", 1)[1]


def users(warehouse: str, rows: int = 20, log: str = "filesystem") -> tablelog.Table:
    table = tablelog.create_table(warehouse, "db.users", pa.schema([("id", pa.int64()), ("name", pa.string())]),
                                  primary_key=["id"], bucket=2, options={"log.system": log})
    with table.writer("w") as writer:
        writer.write([{"id": i, "name": f"user-{i}"} for i in range(rows)])
        writer.commit()
    return table


def test_tail_json_prints_one_object_per_change_with_partition_position_snapshot_kind_key_and_row(
    warehouse: str,
) -> None:
    table = users(warehouse, rows=5)
    with table.writer("w") as writer:
        writer.write([("-D", {"id": 3, "name": "user-3"})])
        writer.commit()
    out, _ = run("tail", "db.users", "--scan-mode", "earliest", "--idle-timeout", "0.3", "--format", "json")
    docs = [json.loads(line) for line in out.splitlines()]
    assert len(docs) == 6
    assert all(set(d) == {"partition", "position", "snapshot", "kind", "key", "row"} for d in docs)
    deleted = docs[-1]
    assert deleted["kind"] == "-D" and deleted["key"] == {"id": 3} and deleted["snapshot"] == 2
    assert isinstance(deleted["partition"], int) and isinstance(deleted["position"], int)
    assert sorted(d["row"]["id"] for d in docs[:5]) == [0, 1, 2, 3, 4]


def test_bytes_timestamps_dates_and_decimals_print_as_json_values_in_text_and_json(warehouse: str) -> None:
    schema = pa.schema([("id", pa.int64()), ("b", pa.binary()), ("ts", pa.timestamp("us")),
                        ("day", pa.date32()), ("price", pa.decimal128(10, 2))])
    table = tablelog.create_table(warehouse, "db.values", schema, primary_key=["id"], bucket=1,
                                  options={"log.system": "filesystem"})
    row = {"id": 1, "b": b"\x00\xff", "ts": datetime.datetime(2024, 1, 2, 3, 4, 5, 600000),
           "day": datetime.date(2024, 1, 2), "price": decimal.Decimal("12.30")}
    with table.writer("w") as writer:
        writer.write([row])
        writer.commit()
    expected = {"id": 1, "b": base64.b64encode(b"\x00\xff").decode(), "ts": "2024-01-02T03:04:05.600000",
                "day": "2024-01-02", "price": "12.30"}
    for scan_mode in ("latest-full", "earliest"):  # the full scan's rows and the log's
        text, _ = run("tail", "db.values", "--scan-mode", scan_mode, "--idle-timeout", "0.3")
        kind, _, payload = text.strip().partition(" ")
        assert kind == "+I" and json.loads(payload) == expected
        out, _ = run("tail", "db.values", "--scan-mode", scan_mode, "--idle-timeout", "0.3", "--format", "json")
        assert json.loads(out)["row"] == expected


def test_describe_json_is_one_document_with_schema_redacted_options_snapshots_and_writes(warehouse: str) -> None:
    # A kafka table needs no broker to be described (auto-register off: nothing is contacted).
    tablelog.create_table(warehouse, "db.k", pa.schema([("id", pa.int64())]), primary_key=["id"], bucket=2,
                          options={"log.system": "kafka", "kafka.bootstrap.servers": "127.0.0.1:9",
                                   "log.system.auto-register": "false"})
    table = users(warehouse, rows=4)
    out, _ = run("describe", "db.k", "--format", "json", "-o", "kafka.sasl.password=SENTINEL-pw")
    doc = json.loads(out)
    assert "SENTINEL-pw" not in out and doc["options"]["kafka.sasl.password"] == "******"
    assert doc["table"] == "db.k" and doc["primary_key"] == ["id"] and doc["buckets"] == 2
    assert doc["log"] == {"system": "kafka", "topic": "db.k", "partitions": 2, "consistency": "transactional"}
    assert doc["snapshots"] == []

    doc = json.loads(run("describe", "db.users", "--format", "json")[0])
    assert [c["name"] for c in doc["schema"]][:2] == ["id", "name"]
    (snapshot,) = doc["snapshots"]
    assert snapshot["id"] == 1 and snapshot["writer"] == "w" and snapshot["file_records"] == 4
    datetime.datetime.fromisoformat(snapshot["time"])
    record = LogCommitRecord.from_properties(internals(table).files.snapshot(1).properties)  # type: ignore[union-attr]
    assert record is not None
    assert snapshot["log_end_positions"] == {str(p): e for p, e in record.end_positions.items()}
    assert sorted((w["token"], w["partition"], w["first"], w["last"], w["records"]) for w in snapshot["writes"]) \
        == sorted((r.token, r.partition, r.first, r.last, r.count) for r in record.ranges)


def test_tail_limit_leaves_a_position_that_resumes_with_no_gap_and_no_duplicate(warehouse: str) -> None:
    table = users(warehouse, rows=40)
    with table.writer("w") as writer:
        writer.write([{"id": i, "name": f"again-{i}"} for i in range(0, 40, 3)])
        writer.commit()
    everything, _ = run("tail", "db.users", "--scan-mode", "earliest", "--idle-timeout", "0.3")
    pieces: list[str] = []
    sizes: list[int] = []
    args = ["--scan-mode", "earliest"]
    for _ in range(40):
        out, err = run("tail", "db.users", *args, "-n", "7", "--idle-timeout", "0.3")
        pieces.extend(out.splitlines())
        sizes.append(len(out.splitlines()))
        if not out:
            break
        args = ["--position", position_of(err)]
    assert pieces == everything.splitlines() and len(pieces) == 40 + 14
    assert sizes == [7] * 7 + [5, 0]  # --limit prints its limit, inside a snapshot's partition too


def test_follow_on_a_table_without_a_log_says_why_it_cannot_and_what_to_set(warehouse: str) -> None:
    users(warehouse, rows=3, log="none")
    _, err = run("tail", "db.users", "--follow", code=1)
    assert "no log (log.system=none)" in err and "-o log.system=filesystem" in err
    _, err = run("tail", "db.users", "--scan-mode", "earliest", code=1)
    assert "no log" in err and "latest-full" in err
    out, _ = run("tail", "db.users", "--idle-timeout", "0.2")  # the current rows it can print
    assert len(out.splitlines()) == 3


def test_verify_of_a_table_without_a_log_is_an_error_not_inconsistent(warehouse: str) -> None:
    users(warehouse, rows=3, log="none")
    out, err = run("verify", "db.users", code=1)
    assert "INCONSISTENT" not in out + err and "cannot verify table 'db.users': it has no log" in err


def test_an_unwritable_warehouse_is_one_line_naming_the_path(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    # The warehouse is checked before the file log kept below it, which would exit 3 (unreachable).
    for log in ("none", "filesystem"):
        _, err = run("create", "-w", str(blocker / "wh"), "db.t", "--schema", "id bigint", "-o",
                     f"log.system={log}", code=2)
        assert str(blocker) in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
        assert f"'{blocker}' is a file, not a directory" in err


def test_ctrl_c_ends_follow_with_the_position_last_and_resuming_from_it_loses_and_repeats_nothing(
    warehouse: str,
) -> None:
    table = users(warehouse, rows=10)
    command = [sys.executable, "-c", "from tablelog.cli import main; main()"]
    first = subprocess.Popen([*command, "tail", "db.users", "--scan-mode", "earliest", "--follow"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy())
    try:
        _wait_for_lines(first, 10)
        with table.writer("w") as writer:
            writer.write([{"id": i, "name": f"second-{i}"} for i in range(10, 15)])
            writer.commit()
        _wait_for_lines(first, 5)
        first.send_signal(signal.SIGINT)
        rest, err = first.communicate(timeout=30)
    finally:
        first.kill()
    assert first.returncode == 0, err
    assert "Aborted" not in err and "Traceback" not in err
    seen = [json.loads(line.split(" ", 1)[1])["id"] for line in first.seen + rest.splitlines()]  # type: ignore[attr-defined]
    position = position_of(err)
    assert json.loads(position)["snapshot"] == 2
    # Written after the interrupt: resuming returns exactly these, none seen before.
    with table.writer("w") as writer:
        writer.write([{"id": i, "name": f"third-{i}"} for i in range(15, 18)])
        writer.commit()
    out, _ = run("tail", "db.users", "--position", position, "--idle-timeout", "0.3")
    resumed = [json.loads(line.split(" ", 1)[1])["id"] for line in out.splitlines()]
    assert sorted(seen) == list(range(15)) and sorted(resumed) == [15, 16, 17]


def _wait_for_lines(process: subprocess.Popen[str], count: int, timeout_s: float = 60) -> None:
    seen: list[str] = getattr(process, "seen", [])
    target = len(seen) + count
    deadline = time.monotonic() + timeout_s
    assert process.stdout is not None
    while len(seen) < target:
        assert time.monotonic() < deadline, f"only {len(seen)} of {target} lines"
        line = process.stdout.readline()
        assert line, f"tail ended early: {process.stderr.read() if process.stderr else ''}"
        seen.append(line.rstrip("\n"))
    process.seen = seen  # type: ignore[attr-defined]
