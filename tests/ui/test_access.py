"""Who may see the dashboard: with a token, nothing but the login page is served until a
browser logs in (in headless Chromium) or a client sends the token as a bearer header;
the figures as Prometheus metrics behind the same token, parsed with prometheus_client's
parser; HTTPS with a given certificate; and `tablelog ui` refusing a non-loopback address
without a token."""

from __future__ import annotations

import http.client
import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from selenium.webdriver.common.by import By

from tablelog.cli import cli
from tablelog.table import Table, internals
from tablelog.testing.dashboard import serving
from tablelog.testing.tls import certificate_authority
from tablelog.ui.state import Dashboard

from .conftest import REFRESH_MS, page
from .test_dashboard import text_of, wait_until

TOKEN = "tok-7f3a9c1e5b"


@pytest.fixture(scope="module")
def guarded_url(warehouse: str, file_table: Table) -> Iterator[str]:
    with serving(Dashboard(warehouse, refresh_s=REFRESH_MS / 1000, log_timeout_s=2.0, authenticated=True),
                 token=TOKEN) as url:
        yield url


def fetch(url: str, token: str | None = None, context: ssl.SSLContext | None = None) -> tuple[int, str, str]:
    """The status, content type and body of a GET (an error status is returned, not raised)."""
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=20, context=context) as response:
            return response.status, response.headers.get("content-type", ""), response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.headers.get("content-type", ""), err.read().decode()


@pytest.mark.parametrize("path", ["/api/warehouse", "/api/tables/db.users", "/api/tables/db.users/changes",
                                  "/metrics", "/docs", "/openapi.json", "/static/ui.js", "/api/settings"])
def test_without_the_token_every_path_but_the_login_is_refused(guarded_url: str, path: str) -> None:
    status, _, body = fetch(guarded_url + path)
    assert status == 401 and "db.users" not in body and "authentication required" in body
    assert fetch(guarded_url + path, token="not-it")[0] == 401
    assert fetch(guarded_url + path, token=TOKEN)[0] == 200


def test_without_the_token_the_page_is_the_login_form_alone(guarded_url: str) -> None:
    status, content_type, body = fetch(guarded_url + "/")
    assert status == 401 and content_type.startswith("text/html")
    assert '<form method="post" action="/login">' in body and "db.users" not in body and "ui.js" not in body


def test_a_browser_logs_in_once_with_the_token_and_the_page_works(browser: Any, guarded_url: str) -> None:
    browser.delete_all_cookies()
    browser.get(page(guarded_url))
    assert browser.find_elements(By.ID, "token") and "db.users" not in browser.page_source
    browser.find_element(By.ID, "token").send_keys("not-it")
    browser.find_element(By.ID, "login").click()
    wait_until(browser, lambda b: "not this dashboard's" in b.page_source)
    browser.find_element(By.ID, "token").send_keys(TOKEN)
    browser.find_element(By.ID, "login").click()
    # The click returns before the form's POST is answered: navigating at once could
    # cancel it before its cookie is set.
    wait_until(browser, lambda b: b.get_cookie("tablelog_ui_session") is not None)
    browser.get(page(guarded_url))
    row = '#tables tr[data-table="db.users"]'
    wait_until(browser, lambda b: text_of(b, f"{row} td.log-state") == "reachable")
    cookie = browser.get_cookie("tablelog_ui_session")
    assert cookie is not None and TOKEN not in cookie["value"] and cookie["httpOnly"]
    browser.delete_all_cookies()


def test_the_metrics_parse_and_give_the_pages_figures(guarded_url: str, file_table: Table) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    status, content_type, body = fetch(guarded_url + "/metrics", token=TOKEN)
    assert status == 200 and content_type.startswith("text/plain")
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(body) for s in family.samples}
    users = (("table", "db.users"),)
    latest = internals(file_table).files.latest_snapshot()
    assert latest is not None
    assert samples[("tablelog_table_health", users)] == 0
    assert samples[("tablelog_table_latest_snapshot", users)] == latest.id
    assert samples[("tablelog_log_reachable", users)] == 1
    assert samples[("tablelog_table_commit_latency_seconds", users)] >= 0
    _, _, document = fetch(guarded_url + "/api/tables/db.users", token=TOKEN)
    retention = json.loads(document)["log"]["retention"]
    for row in retention:
        labels = tuple(sorted({"table": "db.users", "topic": "db.users", "partition": str(row["partition"])}.items()))
        assert samples[("tablelog_log_end_offset", labels)] == row["end"]
        assert samples[("tablelog_log_uncommitted_records", labels)] == row["uncommitted"]


def test_https_serves_the_dashboard_with_the_given_certificate(warehouse: str, file_table: Table,
                                                               tmp_path: Path) -> None:
    ca = certificate_authority(tmp_path / "ca")
    with serving(Dashboard(warehouse, log_timeout_s=2.0), token=TOKEN,
                 certificate=ca.server(tmp_path, "ui")) as url:
        assert url.startswith("https://")
        trusting = ssl.create_default_context(cafile=str(ca.ca_file))
        status, _, body = fetch(url + "/api/warehouse", token=TOKEN, context=trusting)
        assert status == 200 and "db.users" in body
        with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
            fetch(url + "/api/warehouse", token=TOKEN, context=ssl.create_default_context())
        with pytest.raises((urllib.error.URLError, http.client.HTTPException, ConnectionError)):
            fetch(url.replace("https://", "http://") + "/api/warehouse", token=TOKEN)  # no plaintext


@pytest.mark.parametrize(("args", "message"), [
    (["--host", "0.0.0.0"], "--host 0.0.0.0 serves every table of the warehouse to anyone who reaches it: give "
                            "a token (set TABLELOG_UI_TOKEN, or --token), or --no-auth"),
    (["--token", TOKEN, "--no-auth"], "contradict each other"),
    (["--token", " "], "is empty"),
])
def test_tablelog_ui_refuses_an_open_or_contradictory_setup(tmp_path: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(cli, ["ui", "-w", str(tmp_path), *args], env={"TABLELOG_UI_TOKEN": None})
    assert result.exit_code == 2 and message in " ".join(result.output.split()), result.output


def test_tablelog_ui_needs_the_certificate_and_its_key_together(tmp_path: Path) -> None:
    ca = certificate_authority(tmp_path / "ca")
    served = ca.server(tmp_path, "ui")
    result = CliRunner().invoke(cli, ["ui", "-w", str(tmp_path), "--certfile", str(served.certificate)])
    assert result.exit_code == 2 and "--certfile and --keyfile go together" in result.output
