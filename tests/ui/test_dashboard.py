"""`tablelog ui` in headless Chromium against real tables: a filesystem log and a Kafka
(Tansu) log, with writers committing while the page is open."""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

import tablelog
from tablelog.table import Table, internals
from tablelog.testing.kafka_server import tansu_broker
from tablelog.ui import state
from tablelog.ui.state import Dashboard
from tablelog.verify import VerifyReport

from .conftest import REFRESH_MS, ROOT, SCHEMA, SENTINEL, get_json, page

WAIT_S = 10


def wait_until(browser: Any, condition: Callable[[Any], Any], timeout: float = WAIT_S) -> Any:
    return WebDriverWait(browser, timeout, poll_frequency=0.1).until(condition)


def text_of(browser: Any, css: str) -> str:
    """The element's text, read in one script run (the page replaces its rows on each
    refresh: an element found first and read after may be gone)."""
    return str(browser.execute_script(
        "const e = document.querySelector(arguments[0]); return e ? e.innerText.trim() : '';", css))


def partition_ends(browser: Any) -> dict[str, int]:
    """Each log partition's end as the positions table shows it."""
    ends = browser.execute_script(
        "const ends = {};"
        "for (const r of document.querySelectorAll('#positions tbody tr')) {"
        "  const e = r.querySelector('td.end').textContent; if (/^[0-9]+$/.test(e)) ends[r.dataset.partition] = +e; }"
        "return ends;")
    return {str(k): int(v) for k, v in ends.items()}


def test_the_warehouse_page_lists_a_filesystem_log_table_with_its_log_and_health(
    browser: Any, dashboard_url: str, file_table: Table
) -> None:
    browser.get(page(dashboard_url))
    row = '#tables tr[data-table="db.users"]'
    wait_until(browser, lambda b: text_of(b, f"{row} td.log-state") == "reachable")
    assert text_of(browser, f"{row} td.log-system") == "filesystem"
    assert text_of(browser, f"{row} td.latest") == str(internals(file_table).files.latest_snapshot().id)  # type: ignore[union-attr]
    assert text_of(browser, f"{row} td.health") == "ok"


def test_the_table_page_shows_a_new_kafka_snapshot_and_advancing_partition_positions(
    browser: Any, dashboard_url: str, kafka_table: Table
) -> None:
    browser.get(page(dashboard_url, "table/db.events"))
    wait_until(browser, lambda b: len(partition_ends(b)) == 2)
    before_snapshot = int(text_of(browser, "#latest-snapshot"))
    before = partition_ends(browser)
    with kafka_table.writer("ingest") as writer:
        writer.write([{"id": 100 + i, "name": "late", "score": i} for i in range(6)])
        writer.commit()
    wait_until(browser, lambda b: text_of(b, "#latest-snapshot") == str(before_snapshot + 1))
    wait_until(browser, lambda b: (ends := partition_ends(b)) and all(ends[p] > before[p] for p in before))
    assert text_of(browser, f'#snapshots tr[data-snapshot="{before_snapshot + 1}"]')


def test_the_changelog_view_shows_a_change_written_after_the_page_opened(
    browser: Any, dashboard_url: str, kafka_table: Table
) -> None:
    browser.get(page(dashboard_url, "changes/db.events"))
    wait_until(browser, lambda b: int(text_of(b, "#change-count") or 0) > 0)
    with kafka_table.writer("ingest") as writer:
        writer.write([{"id": 555, "name": "written-after-opening", "score": 1}])
        writer.commit()
    wait_until(browser, lambda b: "written-after-opening" in text_of(b, "#changes tbody"))


def test_the_changes_endpoint_returns_only_the_chosen_columns_and_the_key(
    dashboard_url: str, file_table: Table
) -> None:
    _, doc = get_json(f"{dashboard_url}/api/tables/db.users/changes?limit=5&columns=score")
    assert len(doc["changes"]) == 5
    assert all(set(c["row"]) == {"id", "score"} for c in doc["changes"])


def test_verify_on_demand_shows_its_result_on_the_table_page(browser: Any, dashboard_url: str) -> None:
    browser.get(page(dashboard_url, "table/db.users"))
    wait_until(browser, lambda b: text_of(b, "#table-name") == "db.users")
    browser.find_element(By.ID, "verify").click()
    wait_until(browser, lambda b: text_of(b, "#verify-summary").startswith("verify: consistent: table db.users"))


def test_count_rows_shows_the_tables_rows_next_to_the_file_records(
    browser: Any, serve: Callable[[Dashboard], str], tmp_path: Path
) -> None:
    warehouse = str(tmp_path / "wh")
    table = tablelog.create_table(warehouse, "db.counted", SCHEMA, primary_key=["id"],
                                  options={"log.system": "filesystem"})
    with table.writer() as writer:
        for batch in ([{"id": i, "name": "a", "score": 0} for i in range(3)], [{"id": 0, "name": "b", "score": 1}]):
            writer.write(batch)
            writer.commit()
        writer.write([("-D", {"id": 1, "name": "a", "score": 0})])
        writer.commit()
    browser.get(page(serve(Dashboard(warehouse, refresh_s=REFRESH_MS / 1000)), "table/db.counted"))
    wait_until(browser, lambda b: text_of(b, "#table-rows") == "not counted")
    assert text_of(browser, '#snapshots tr[data-snapshot="3"] td:nth-child(4)') == "5"  # file records
    browser.find_element(By.ID, "count-rows").click()
    wait_until(browser, lambda b: text_of(b, "#table-rows") == "2 (snapshot 3)")


def test_verify_differences_are_listed_and_mark_the_table_in_error(
    browser: Any, serve: Callable[[Dashboard], str], warehouse: str, file_table: Table,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    report = VerifyReport("db.users", 3, 12, 10, 10, missing_from_log=[{"id": 7, "name": "lost"}],
                          differing=[({"id": 8, "score": 1}, {"id": 8, "score": 2})])
    monkeypatch.setattr(state, "verify", lambda table: report)
    url = serve(Dashboard(warehouse, refresh_s=REFRESH_MS / 1000))
    browser.get(page(url, "table/db.users"))
    wait_until(browser, lambda b: text_of(b, "#table-name") == "db.users")
    browser.find_element(By.ID, "verify").click()
    wait_until(browser, lambda b: text_of(b, "#verify-summary").startswith("verify: INCONSISTENT"))
    listed = text_of(browser, "#verify-result ul")
    assert 'in the table, not in the log: {"id":7,"name":"lost"}' in listed
    assert 'differs: table {"id":8,"score":1} log {"id":8,"score":2}' in listed
    wait_until(browser, lambda b: text_of(b, "#table-health") == "error")


def test_a_secret_option_never_appears_in_a_page_or_a_json_response(browser: Any, dashboard_url: str) -> None:
    bodies = [get_json(f"{dashboard_url}{path}")[0] for path in (
        "/api/settings", "/api/warehouse", "/api/tables/db.events", "/api/tables/db.users",
        "/api/tables/db.events/changes", "/api/tables/db.users/verify", "/openapi.json",
    )]
    with urllib.request.urlopen(f"{dashboard_url}/api/tables/db.events/verify", data=b"", timeout=10) as r:
        bodies.append(r.read().decode())
    for route in ("", "table/db.events", "changes/db.events"):
        browser.get(page(dashboard_url, route))
        wait_until(browser, lambda b: b.execute_script("return +(document.body.dataset.updates || 0)") > 0)
        bodies.append(browser.page_source)
    _, table_doc = get_json(f"{dashboard_url}/api/tables/db.events")
    assert table_doc["options"]["kafka.sasl.password"] == "******"  # the option is there, redacted
    assert all(SENTINEL not in body for body in bodies)


def complete(log: dict[str, Any]) -> bool:
    return log.get("reachable") is True and not log.get("needed_pending")


def test_describe_json_and_the_table_endpoint_give_the_same_figures(dashboard_url: str, file_table: Table) -> None:
    from click.testing import CliRunner

    from tablelog.cli import cli

    result = CliRunner().invoke(cli, ["describe", "-w", file_table.warehouse.path, "db.users", "--format", "json",
                                      "--limit", "50", "-o", f"kafka.sasl.password={SENTINEL}"])
    assert result.exit_code == 0, result.output
    described = json.loads(result.output)
    deadline = time.monotonic() + 30
    # the dashboard answers with the log's end positions first (or, on a busy machine, "no
    # answer within" its log timeout), then with what the retained snapshots need: compare
    # its complete answer
    while not complete((served := get_json(f"{dashboard_url}/api/tables/db.users?limit=50")[1])["log"]):
        assert time.monotonic() < deadline, "the dashboard never finished reading the retained snapshots"
        time.sleep(0.1)
    for doc in (served, described):
        doc.pop("verify"), doc.pop("health")
    assert described == served


def test_a_stopped_broker_shows_as_unreachable_and_the_page_still_renders(
    browser: Any, serve: Callable[[Dashboard], str], tmp_path: Path
) -> None:
    warehouse = str(tmp_path / "wh")
    (tmp_path / "tansu").mkdir()
    with tansu_broker(tmp_path / "tansu") as bootstrap:
        table = tablelog.create_table(warehouse, "db.gone", SCHEMA, primary_key=["id"],
                                      options={"log.system": "kafka", "kafka.bootstrap.servers": bootstrap})
        with table.writer() as writer:
            writer.write([{"id": 1, "name": "a", "score": 1}])
            writer.commit()
    tablelog.create_table(warehouse, "db.local", SCHEMA, primary_key=["id"], options={"log.system": "filesystem"})
    url = serve(Dashboard(warehouse, refresh_s=REFRESH_MS / 1000, log_timeout_s=1.0))
    browser.get(page(url))
    wait_until(browser, lambda b: text_of(b, '#tables tr[data-table="db.gone"] td.log-state').startswith("unreachable: "))
    assert text_of(browser, '#tables tr[data-table="db.gone"] td.health') == "error"
    assert text_of(browser, '#tables tr[data-table="db.local"]')
    browser.get(page(url, "table/db.gone"))
    wait_until(browser, lambda b: "unreachable: " in text_of(b, "#log-summary"))
    assert text_of(browser, "#latest-snapshot") == "1" and text_of(browser, "#schema tbody")


def test_a_dashboard_on_a_non_loopback_address_says_it_has_no_authentication(
    browser: Any, serve: Callable[[Dashboard], str], warehouse: str
) -> None:
    url = serve(Dashboard(warehouse, refresh_s=REFRESH_MS / 1000, exposed=True))
    browser.get(page(url))
    wait_until(browser, lambda b: "no authentication" in text_of(b, "#exposed-banner"))


def test_the_screenshots_of_the_warehouse_and_table_pages_show_the_pages(
    browser: Any, dashboard_url: str, kafka_table: Table, tmp_path: Path
) -> None:
    """With TABLELOG_UPDATE_SCREENSHOTS=1 the screenshots replace docs/images' ones."""
    target = ROOT / "docs" / "images" if os.environ.get("TABLELOG_UPDATE_SCREENSHOTS") == "1" else tmp_path
    target.mkdir(parents=True, exist_ok=True)
    for size in (3, 8, 5, 12, 6, 9):  # a few commits of varying size for the chart
        with kafka_table.writer("ingest") as writer:
            writer.write([{"id": 1000 + i, "name": f"s{size}", "score": size} for i in range(size)])
            writer.commit()
    browser.get(page(dashboard_url))
    wait_until(browser, lambda b: text_of(b, '#tables tr[data-table="db.events"] td.log-state') == "reachable")
    browser.save_screenshot(str(target / "ui-warehouse.png"))
    browser.get(page(dashboard_url, "table/db.events"))
    wait_until(browser, lambda b: len(partition_ends(b)) == 2)
    browser.save_screenshot(str(target / "ui-table.png"))
    for name in ("ui-warehouse.png", "ui-table.png"):
        assert (target / name).stat().st_size > 20_000, name


def test_an_unknown_table_is_a_404_naming_it(dashboard_url: str) -> None:
    with pytest.raises(urllib.error.HTTPError) as err:
        get_json(f"{dashboard_url}/api/tables/db.nothere")
    assert err.value.code == 404 and "db.nothere" in err.value.read().decode()


def test_the_changes_endpoint_of_a_lookup_table_shows_an_overwritten_key_as_an_update(
    serve: Callable[[Dashboard], str], tmp_path: Path
) -> None:
    """With ``changelog-producer = lookup`` the log carries the table's changelog: a second
    write of a key is ``-U`` of the row it replaced and ``+U`` of the new one, not ``+I``."""
    warehouse = str(tmp_path / "wh")
    table = tablelog.create_table(warehouse, "db.lookup", SCHEMA, primary_key=["id"],
                                  options={"log.system": "filesystem", "changelog-producer": "lookup"})
    with table.writer() as writer:
        for name in ("first", "second"):
            writer.write([{"id": i, "name": name, "score": 0} for i in range(2)])
            writer.commit()
    _, doc = get_json(f"{serve(Dashboard(warehouse, refresh_s=REFRESH_MS / 1000))}/api/tables/db.lookup/changes?limit=10")
    shown = sorted((c["kind"], c["row"]["id"], c["row"]["name"]) for c in doc["changes"])
    assert shown == [("+I", 0, "first"), ("+I", 1, "first"), ("+U", 0, "second"), ("+U", 1, "second"),
                     ("-U", 0, "first"), ("-U", 1, "first")]
