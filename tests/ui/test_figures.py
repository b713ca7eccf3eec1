"""The dashboard's figures and its guards, without a browser."""

from __future__ import annotations

import ast
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import tablelog
from tablelog.cli.ui import is_loopback
from tablelog.commit import LogCommitRecord
from tablelog.store import SnapshotInfo
from tablelog.table import internals
from tablelog.ui.figures import (
    commit_latency_ms,
    health,
    newest_commits,
    snapshot_entry,
    snapshots_per_minute,
)
from tablelog.ui.probes import LogProbes

from .conftest import SCHEMA


def snapshot(snapshot_id: int, millis: int) -> SnapshotInfo:
    return SnapshotInfo(snapshot_id, millis, "user", snapshot_id, "APPEND", 0, {})


def test_after_a_commit_only_the_new_snapshot_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = tablelog.create_table(str(tmp_path), "db.t", SCHEMA, primary_key=["id"],
                                  options={"log.system": "filesystem", "num-sorted-run.compaction-trigger": "100"})
    for i in range(5):
        with table.writer() as writer:
            writer.write([{"id": i, "name": "n", "score": i}])
            writer.commit()
    assert [s.id for s, _ in newest_commits(table, 3)] == [5, 4, 3]
    with table.writer() as writer:
        writer.write([{"id": 9, "name": "n", "score": 9}])
        writer.commit()
    read: list[int] = []
    original = type(internals(table).files).snapshot
    monkeypatch.setattr(type(internals(table).files), "snapshot",
                        lambda self, snapshot_id: read.append(snapshot_id) or original(self, snapshot_id))
    assert [s.id for s, _ in newest_commits(table, 3)] == [6, 5, 4]
    assert set(read) <= {6}  # the new snapshot (also read as the latest); none of the older ones again


def test_a_commit_records_when_it_began_and_its_latency_is_measured_to_the_snapshot_time(tmp_path: Path) -> None:
    table = tablelog.create_table(str(tmp_path), "db.t", SCHEMA, primary_key=["id"],
                                  options={"log.system": "filesystem"})
    before = time.time_ns() // 1_000_000
    with table.writer() as writer:
        writer.write([{"id": 1, "name": "n", "score": 1}])
        writer.commit()
    after = time.time_ns() // 1_000_000
    [(latest, record)] = newest_commits(table, 1)
    assert record is not None and record.commit_started_ms is not None
    assert before <= record.commit_started_ms <= latest.time_millis <= after
    assert snapshot_entry(latest, record)["commit_ms"] == latest.time_millis - record.commit_started_ms


def test_a_snapshot_of_an_older_version_has_no_commit_latency() -> None:
    properties = {"tablelog.version": "1", "tablelog.writing.writer": "w", "tablelog.commit-identifier": "1"}
    record = LogCommitRecord.from_properties(properties)
    assert record is not None and record.commit_started_ms is None
    assert commit_latency_ms(snapshot(1, 1_000), record) is None


def test_snapshots_per_minute_is_the_commit_rate_over_the_window() -> None:
    commits: list[Any] = [(snapshot(i, 1_000_000 + i * 15_000), None) for i in range(9, 0, -1)]
    assert snapshots_per_minute(commits) == 4.0
    assert snapshots_per_minute(commits[:1]) is None


def test_an_unreachable_log_marks_the_table_in_error() -> None:
    marked = health({"reachable": False, "error": "down"}, [], None)
    assert marked == {"mark": "error", "reasons": ["log unreachable: down"]}


def test_a_stranded_consumer_marks_the_table_with_a_warning() -> None:
    consumer = {"id": "job", "snapshots_behind": 3, "stranded": True}
    assert health(None, [consumer], None)["mark"] == "warning"


def test_a_log_that_does_not_answer_costs_one_bounded_wait_then_none() -> None:
    release = threading.Event()
    probes = LogProbes(timeout_s=0.2, max_age_s=0.0)

    def hanging() -> dict[str, Any]:
        release.wait(10)
        return {"partitions": []}

    began = time.monotonic()
    assert probes.get("t", hanging) == {"error": "no answer within 0.2 s"}
    assert probes.get("t", hanging) == {"error": "no answer within 0.2 s"}
    assert time.monotonic() - began < 1.0
    release.set()
    probes.close()


def test_a_refresh_shows_its_first_step_only_until_a_complete_answer_is_known() -> None:
    second_steps = threading.Semaphore(0)  # each release lets one query past its first step
    probes = LogProbes(timeout_s=5.0, max_age_s=0.0)
    runs = [0]

    def in_two_steps() -> Iterator[dict[str, Any]]:
        runs[0] += 1
        run = runs[0]
        yield {"ends": run, "needed_pending": True}
        second_steps.acquire(timeout=10)
        yield {"ends": run, "needed": 0}

    assert probes.get("t", in_two_steps) == {"ends": 1, "needed_pending": True}  # nothing known yet: the first step
    second_steps.release()
    wait_for(lambda: probes.get("t", in_two_steps) == {"ends": 1, "needed": 0})
    wait_for(lambda: runs[0] == 2)  # a refresh, held after its first step
    time.sleep(0.1)
    assert probes.get("t", in_two_steps) == {"ends": 1, "needed": 0}  # the complete answer stays
    second_steps.release()
    wait_for(lambda: probes.get("t", in_two_steps) == {"ends": 2, "needed": 0})
    second_steps.release()
    probes.close()


def wait_for(condition: Callable[[], bool], timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "the condition did not come true in time"
        time.sleep(0.01)


@pytest.mark.parametrize(("host", "loopback"), [("127.0.0.1", True), ("::1", True), ("localhost", True),
                                                 ("0.0.0.0", False), ("192.168.1.5", False)])
def test_only_loopback_addresses_count_as_private(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_only_the_ui_app_imports_the_web_framework_at_import_time() -> None:
    """``import tablelog`` (and the CLI) works without the ui extra: FastAPI and uvicorn
    are imported at module level by tablelog.ui.app alone, which no module imports at
    module level."""
    web = ("fastapi", "uvicorn", "starlette", "tablelog.ui.app")
    offenders = []
    for path in sorted(Path(tablelog.__file__).parent.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:  # module level only
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if any(n == w or n.startswith(w + ".") for n in names for w in web) and path.name != "app.py":
                offenders.append(f"{path.name}: {names}")
    assert offenders == []


def test_ui_on_a_non_loopback_host_without_a_token_warns_and_marks_the_dashboard_exposed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import uvicorn
    from click.testing import CliRunner

    from tablelog.cli import cli

    served: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kwargs: served.update(app=app, **kwargs))
    result = CliRunner().invoke(cli, ["ui", "-w", str(tmp_path), "--host", "0.0.0.0", "--port", "8999", "--no-auth"])
    assert result.exit_code == 0, result.output
    assert "without a token (--no-auth)" in result.output
    assert served["host"] == "0.0.0.0" and served["port"] == 8999 and served["ssl_certfile"] is None
    assert served["app"].state.dashboard.exposed is True


def test_ui_on_a_non_loopback_host_with_a_token_is_not_marked_exposed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import uvicorn
    from click.testing import CliRunner

    from tablelog.cli import cli

    served: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kwargs: served.update(app=app, **kwargs))
    result = CliRunner().invoke(cli, ["ui", "-w", str(tmp_path), "--host", "0.0.0.0"],
                                env={"TABLELOG_UI_TOKEN": "from-the-environment"})
    assert result.exit_code == 0, result.output
    assert "a token is required" in result.output and "warning" not in result.output
    settings = served["app"].state.dashboard.settings()
    assert settings["exposed"] is False and settings["authentication"] is True


def test_a_log_that_stops_answering_turns_unreachable_after_the_timeout() -> None:
    release = threading.Event()
    calls = [0]
    probes = LogProbes(timeout_s=0.2, max_age_s=0.0)

    def answers_once() -> dict[str, Any]:
        calls[0] += 1
        if calls[0] > 1:
            release.wait(10)
        return {"partitions": []}

    assert probes.get("t", answers_once) == {"partitions": []}
    probes.get("t", answers_once)  # starts the query that hangs
    time.sleep(0.3)
    assert probes.get("t", answers_once) == {"error": "no answer within 0.2 s"}
    release.set()
    probes.close()


def test_rows_are_the_tables_rows_and_file_records_count_every_version_of_a_key(
    tmp_path: Path, serve: Any
) -> None:
    # 3 inserts, an update and a delete: 2 rows, and 5 records in the files until a
    # compaction; `describe` and the dashboard called the 5 "rows".
    import json
    import urllib.request

    from click.testing import CliRunner

    from tablelog.cli import cli
    from tablelog.ui.state import Dashboard

    warehouse = str(tmp_path / "wh")
    table = tablelog.create_table(warehouse, "db.t", SCHEMA, primary_key=["id"], options={"log.system": "filesystem"})
    with table.writer("w") as writer:
        writer.write([{"id": i, "name": "a", "score": 0} for i in range(3)])
        writer.commit()
        writer.write([{"id": 0, "name": "b", "score": 1}])
        writer.commit()
        writer.write([("-D", {"id": 1, "name": "a", "score": 0})])
        writer.commit()
    appended = tablelog.create_table(warehouse, "db.events", SCHEMA, options={"log.system": "filesystem"})
    with appended.writer("w") as writer:
        writer.write([{"id": 0, "name": "a", "score": 0}] * 3)
        writer.commit()

    def describe(*args: str) -> Any:
        result = CliRunner().invoke(cli, ["describe", "-w", warehouse, *args])
        assert result.exit_code == 0, result.output
        return json.loads(result.output) if "json" in args else result.output

    plain = describe("db.t", "--format", "json")
    assert [s["file_records"] for s in plain["snapshots"]] == [5, 4, 3] and plain["rows"] is None
    assert "rows" not in plain["snapshots"][0]
    assert describe("db.t", "--count-rows", "--format", "json")["rows"] == {"snapshot": 3, "count": 2}
    assert "rows: 2 (snapshot 3)" in describe("db.t", "--count-rows")
    assert "rows: not counted" in describe("db.t") and "file records" in describe("db.t")
    # without a primary key each record is a row: known without a count
    assert describe("db.events", "--format", "json")["rows"] == {"snapshot": 1, "count": 3}

    base = serve(Dashboard(warehouse, log_timeout_s=5.0))
    before = json.loads(urllib.request.urlopen(f"{base}/api/tables/db.t").read())
    assert before["rows"] is None and before["row_count"] is None and before["snapshots"][0]["file_records"] == 5
    post = urllib.request.Request(f"{base}/api/tables/db.t/rows", method="POST")
    assert json.loads(urllib.request.urlopen(post).read())["state"] in ("running", "done")
    deadline = time.monotonic() + 30
    while (counted := json.loads(urllib.request.urlopen(f"{base}/api/tables/db.t/rows").read()))["state"] != "done":
        assert counted["state"] == "running" and time.monotonic() < deadline, counted
        time.sleep(0.05)
    assert (counted["snapshot"], counted["count"]) == (3, 2)
    after = json.loads(urllib.request.urlopen(f"{base}/api/tables/db.t").read())
    assert after["rows"] == {"snapshot": 3, "count": 2} and after["row_count"]["state"] == "done"
    table.compact()  # a full compaction merges the versions: the files hold the rows alone
    assert internals(table).files.latest_snapshot().total_record_count == 2  # type: ignore[union-attr]
