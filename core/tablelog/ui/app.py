"""The dashboard's routes: one page (``/``), its static files, the JSON endpoints under
``/api`` that the page polls (documented by FastAPI at ``/docs``) and the Prometheus
metrics at ``/metrics``; with a token, every route but the login page needs it
(:mod:`tablelog.ui.access`). Needs the ``ui`` extra (FastAPI)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from importlib import resources
from typing import Any

from fastapi import FastAPI, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse
from fastapi.staticfiles import StaticFiles

from tablelog.documents import dumps
from tablelog.errors import TablelogError
from tablelog.ui.access import TokenAccess
from tablelog.ui.metrics import metrics_text
from tablelog.ui.state import Dashboard, UnknownTable

STATIC = resources.files("tablelog.ui") / "static"


class TablelogJSON(JSONResponse):
    """JSON as the CLI prints it (:func:`tablelog.documents.dumps`): every table value
    (bytes, decimals, timestamps, NaN) as valid JSON."""

    def render(self, content: Any) -> bytes:
        return dumps(content).encode("utf-8")


#: Snapshots of each table a scrape of /metrics reads (the newest commit's latency is among them).
METRICS_SNAPSHOTS = 20


def create_app(dashboard: Dashboard, token: str | None = None) -> FastAPI:
    """The dashboard of ``dashboard``'s warehouse as an ASGI application; with ``token``,
    only for clients that give it (:mod:`tablelog.ui.access`)."""
    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        dashboard.close()

    app = FastAPI(
        lifespan=lifespan,
        title="tablelog ui",
        description="The figures behind the tablelog dashboard: tables, snapshots, log positions, "
                    "consumers, the live changelog and verify. With a token: send "
                    "'Authorization: Bearer <token>'.",
        default_response_class=TablelogJSON,
    )
    app.state.dashboard = dashboard
    if token is not None:
        app.middleware("http")(TokenAccess(token))
    app.mount("/static", StaticFiles(directory=str(STATIC)), name="static")

    @app.exception_handler(UnknownTable)
    def unknown_table(request: Request, err: UnknownTable) -> TablelogJSON:
        return TablelogJSON({"detail": f"no table {err.args[0]!r} in warehouse {dashboard.warehouse!r}"},
                            status_code=404)

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def page() -> str:
        return (STATIC / "index.html").read_text(encoding="utf-8")

    @app.get("/metrics", response_class=PlainTextResponse, summary="The figures as Prometheus metrics "
             "(health, latest snapshot, snapshots per minute, commit latency, log ends and lag, consumers)")
    def metrics() -> PlainTextResponse:
        warehouse = dashboard.warehouse_document()
        documents = []
        for row in warehouse["tables"]:
            if "error" not in row:
                with contextlib.suppress(TablelogError, UnknownTable):
                    documents.append(dashboard.table_document(row["table"], METRICS_SNAPSHOTS))
        return PlainTextResponse(metrics_text(warehouse, documents), media_type="text/plain; version=0.0.4")

    @app.get("/api/settings", summary="The dashboard's settings: warehouse, refresh interval, exposure")
    def settings() -> dict[str, Any]:
        return dashboard.settings()

    @app.get("/api/warehouse", summary="Every table of the warehouse with its log, last commit and health")
    def warehouse() -> dict[str, Any]:
        return dashboard.warehouse_document()

    @app.get("/api/tables/{name}", summary="A table: schema, options, snapshots, log positions, writers, "
                                           "consumers (the document of `tablelog describe --format json`)")
    def table(name: str, limit: int = Query(50, ge=0, le=1000, description="Newest snapshots listed")) -> Any:
        try:
            return dashboard.table_document(name, limit)
        except TablelogError as err:
            return TablelogJSON({"table": name, "error": str(err)}, status_code=500)

    @app.get("/api/tables/{name}/changes", summary="The live changelog: the newest changes, or those after "
                                                   "`position`, and the position to ask from next")
    def changes(
        name: str,
        limit: int = Query(100, ge=1, le=10_000, description="Changes returned at most"),
        columns: str | None = Query(None, description="Comma-separated columns (the key's are added)"),
        position: str | None = Query(None, description="A position this endpoint returned"),
        consistency: str = Query("transactional", pattern="^(transactional|eventual)$"),
        wait: float = Query(0.0, ge=0, le=5, description="Seconds to wait for a change after `position`"),
    ) -> Any:
        chosen = [c.strip() for c in columns.split(",") if c.strip()] if columns else None
        try:
            return dashboard.changelogs.changes(dashboard.table(name), limit, chosen, position, consistency, wait)
        except TablelogError as err:
            return TablelogJSON({"table": name, "error": str(err)}, status_code=409)

    @app.post("/api/tables/{name}/verify", summary="Start `verify` on the table (replay the log, compare)")
    def start_verify(name: str) -> dict[str, Any]:
        return dashboard.start_verify(name)

    @app.get("/api/tables/{name}/verify", summary="The table's last verify run: running, done or error")
    def verify_result(name: str) -> dict[str, Any]:
        dashboard.table(name)  # an unknown table: 404
        return dashboard.verify_result(name) or {"state": "never"}

    @app.post("/api/tables/{name}/rows", summary="Start counting the table's rows (a merge read of its files)")
    def start_row_count(name: str) -> dict[str, Any]:
        return dashboard.start_row_count(name)

    @app.get("/api/tables/{name}/rows", summary="The table's last row count: running, done (with snapshot and "
                                                "count) or error")
    def row_count_result(name: str) -> dict[str, Any]:
        dashboard.table(name)  # an unknown table: 404
        return dashboard.row_count_result(name) or {"state": "never"}

    return app
