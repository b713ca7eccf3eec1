"""The dashboard under test: `tablelog ui`'s application served by uvicorn on a free
loopback port in this process, and one headless Chromium (Debian's) for the session."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import tablelog
from tablelog.table import Table
from tablelog.testing.dashboard import serving
from tablelog.ui.state import Dashboard

ROOT = Path(__file__).resolve().parents[2]
#: A secret given to the dashboard as an option: no page or response may show it.
SENTINEL = "SENTINEL-ui-9d41c7"
#: The page's refresh interval in the tests (?refresh=MS).
REFRESH_MS = 150
SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("score", pa.int64())])


def _ensure_chromium() -> tuple[str, str]:
    spec = importlib.util.spec_from_file_location("ensure_chromium", ROOT / "tools" / "ensure_chromium.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    try:
        return module.ensure_chromium()  # type: ignore[no-any-return]
    except module.ChromiumMissing as err:
        pytest.fail(f"the browser tests need Debian's chromium and chromium-driver: {err}", pytrace=False)


@pytest.fixture(scope="session")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One headless Chromium for the whole session; missing Chromium fails, never skips."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium, chromedriver = _ensure_chromium()
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1400,1000",
                 f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(chromedriver), options=options)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="session")
def serve() -> Iterator[Callable[[Dashboard], str]]:
    """Serves a dashboard on a free loopback port in a thread; returns its base URL.
    Every server started is stopped at the end of the session."""
    with contextlib.ExitStack() as servers:
        yield lambda dashboard: servers.enter_context(serving(dashboard))


@pytest.fixture(scope="session")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("ui-warehouse"))


@pytest.fixture(scope="session")
def file_table(warehouse: str) -> Table:
    """A filesystem-log table with three commits of one writer."""
    table = tablelog.create_table(warehouse, "db.users", SCHEMA, primary_key=["id"], bucket=2,
                                  options={"log.system": "filesystem"})
    for commit in range(3):
        with table.writer("loader") as writer:
            writer.write([{"id": i, "name": f"user-{i}", "score": commit} for i in range(commit * 4, commit * 4 + 6)])
            writer.commit()
    return table


@pytest.fixture(scope="session")
def kafka_table(warehouse: str, kafka_bootstrap: str) -> Table:
    """A Kafka-backed table with one commit."""
    table = tablelog.create_table(
        warehouse, "db.events", SCHEMA, primary_key=["id"], bucket=2,
        options={"log.system": "kafka", "kafka.bootstrap.servers": kafka_bootstrap,
                 "kafka.topic": f"ui-events-{int(time.time() * 1000)}"},
    )
    with table.writer("ingest") as writer:
        writer.write([{"id": i, "name": f"e{i}", "score": i} for i in range(4)])
        writer.commit()
    return table


@pytest.fixture(scope="session")
def dashboard_url(serve: Callable[[Dashboard], str], warehouse: str, file_table: Table, kafka_table: Table) -> str:
    """The dashboard of the session's warehouse, given a secret option (SENTINEL)."""
    dashboard = Dashboard(warehouse, {"kafka.sasl.password": SENTINEL}, refresh_s=REFRESH_MS / 1000,
                          log_timeout_s=2.0)
    return serve(dashboard)


def get_json(url: str) -> tuple[str, Any]:
    """The body of a GET (text, parsed)."""
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode("utf-8")
    return text, json.loads(text)


def page(base: str, hash_route: str = "") -> str:
    return f"{base}/?refresh={REFRESH_MS}#/{hash_route}"
