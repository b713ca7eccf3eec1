"""What ``tablelog ui`` shows of a table, for any log system and warehouse.

Subclass :class:`DashboardScenarios` in a test module and provide a fixture
``log_options`` (the table options selecting the log system, as for
:class:`tablelog.testing.scenarios.ExactlyOnceScenarios`); override the fixture
``warehouse`` for a warehouse that is not a local directory (an ``s3://`` one, whose
settings then belong in ``log_options`` too). The figures are the dashboard's own
(:class:`tablelog.ui.state.Dashboard`, which the page and the JSON endpoints serve);
no web framework or browser is needed: ``tests/ui`` drives the page itself.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

from tablelog.commit import log_commits
from tablelog.table import internals
from tablelog.tables import create_table
from tablelog.testing.processes import free_port
from tablelog.testing.scenarios import SCHEMA, LogSystemFixtures, rows

#: Seconds the dashboard may take to read a log that answers.
LOG_ANSWER_S = 20.0


@contextlib.contextmanager
def serving(dashboard: Any, token: str | None = None, certificate: Any = None) -> Iterator[str]:
    """``dashboard`` (a :class:`tablelog.ui.state.Dashboard`) served by uvicorn on a free
    loopback port in a thread of this process, as ``tablelog ui`` serves it (with ``token``;
    over HTTPS with ``certificate``, a :class:`tablelog.testing.tls.ServerCertificate`);
    yields its base URL and stops it on leaving. Needs the ``ui`` extra."""
    import uvicorn

    from tablelog.ui.app import create_app

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(
        create_app(dashboard, token), host="127.0.0.1", port=port, log_level="warning", lifespan="on",
        ssl_certfile=None if certificate is None else str(certificate.certificate),
        ssl_keyfile=None if certificate is None else str(certificate.key)))
    thread = threading.Thread(target=server.run, name=f"uvicorn-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the dashboard did not start"
        time.sleep(0.02)
    try:
        yield f"{'http' if certificate is None else 'https'}://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=5)


def settled_table_document(dashboard: Any, identifier: str) -> dict[str, Any]:
    """The table document once the log has answered with every figure (right after start,
    what the retained snapshots need is still being read)."""
    deadline = time.monotonic() + LOG_ANSWER_S
    while True:
        doc: dict[str, Any] = dashboard.table_document(identifier, 10)
        log = doc.get("log") or {}
        retention = log.get("retention") or []
        if log.get("reachable") and retention and all(r.get("needed") is not None for r in retention):
            return doc
        assert time.monotonic() < deadline, f"the dashboard never read the log: {log}"
        time.sleep(0.1)


class DashboardScenarios(LogSystemFixtures):
    """The dashboard's figures of a table on this log system."""

    def test_the_dashboard_shows_each_partitions_log_end_against_the_latest_snapshot(
        self, warehouse: str, log_options: dict[str, str]
    ) -> None:
        from tablelog.ui.state import Dashboard

        name = f"db.ui_{uuid.uuid4().hex[:8]}"
        table = create_table(warehouse, name, SCHEMA, primary_key=["id"], bucket=2, options=log_options)
        for start in (0, 40):
            with table.writer("loader") as writer:
                writer.write(rows(40, start=start))
                writer.commit()
        latest = internals(table).files.latest_snapshot()
        assert latest is not None
        committed_ends = [r for _, r in log_commits(internals(table).files, newest_first=True)][0].end_positions

        dashboard = Dashboard(warehouse, log_options, log_timeout_s=LOG_ANSWER_S)
        try:
            doc = settled_table_document(dashboard, name)
            listed = {t["table"]: t for t in dashboard.warehouse_document()["tables"]}
        finally:
            dashboard.close()
        assert [s["id"] for s in doc["snapshots"]][:1] == [latest.id]
        assert doc["snapshots"][0]["writer"] == "loader" and doc["snapshots"][0]["commit_ms"] is not None
        ends = {r["partition"]: r for r in doc["log"]["retention"]}
        assert {p: r["committed_end"] for p, r in ends.items()} == dict(committed_ends)
        assert all(r["uncommitted"] == 0 and r["end"] == r["committed_end"] for r in ends.values())
        assert doc["health"]["mark"] == "ok", doc["health"]
        assert listed[name]["log"]["reachable"] and listed[name]["latest_snapshot"] == latest.id
