"""What the dashboard keeps between requests: the open tables, the log probes, the
changelog readers, the verify runs and the row counts. No web framework here: the
routes (:mod:`tablelog.ui.app`) call these methods."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tablelog.documents import json_value
from tablelog.errors import TablelogError
from tablelog.logs.client import LogClient
from tablelog.options import GivenOptions
from tablelog.store import Warehouse
from tablelog.table import Table, internals
from tablelog.tables import open_table
from tablelog.ui.changes import ChangelogFollowers
from tablelog.ui.figures import (
    count_rows,
    probe_log_steps,
    table_document,
    table_summary,
)
from tablelog.ui.probes import LogProbes
from tablelog.verify import VerifyReport, verify

#: Differing rows a verify result keeps per kind of difference.
VERIFY_ROWS_SHOWN = 20


class UnknownTable(LookupError):
    """The warehouse has no such table."""


class Dashboard:
    """One warehouse's tables, as the dashboard's endpoints show them."""

    def __init__(self, warehouse: str, options: Mapping[str, str] | None = None, *, refresh_s: float = 2.0,
                 log_timeout_s: float = 3.0, exposed: bool = False, authenticated: bool = False) -> None:
        self.warehouse = warehouse
        self.options = dict(options or {})
        self.refresh_s = refresh_s
        self.exposed = exposed
        self.authenticated = authenticated
        self.probes = LogProbes(timeout_s=log_timeout_s, max_age_s=min(refresh_s, 1.0))
        self.changelogs = ChangelogFollowers()
        self._tables: dict[str, Table] = {}
        self._probe_tables: dict[str, Table] = {}
        self._probe_logs: dict[str, LogClient] = {}
        self._verifies: dict[str, dict[str, Any]] = {}
        self._row_counts: dict[str, dict[str, Any]] = {}
        # Verify runs and row counts, one at a time: each reads the whole table.
        self._verify_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tablelog-ui-verify")
        self._lock = threading.Lock()
        self._given = GivenOptions.parse(self.options)  # once: every table is opened with it
        self._warehouse = Warehouse(warehouse, self._given.warehouse)

    def close(self) -> None:
        self.probes.close()
        for log in self._probe_logs.values():
            log.close()
        self.changelogs.close()
        self._verify_pool.shutdown(wait=False, cancel_futures=True)

    # -- tables --------------------------------------------------------------

    def identifiers(self) -> list[str]:
        return sorted(self._warehouse.tables())

    def table(self, identifier: str) -> Table:
        """The open table ``identifier`` at its latest schema."""
        with self._lock:
            t = self._tables.get(identifier)
        if t is None:
            if identifier not in self.identifiers():
                raise UnknownTable(identifier)
            t = open_table(self.warehouse, identifier, self._given)
            with self._lock:
                self._tables[identifier] = t
        else:
            internals(t).refresh_schema()
        return t

    def _probe(self, identifier: str) -> Any:
        """The log query of ``identifier``, on a table object of its own (the probe thread
        must not share the request threads' object) and a log client kept open between
        queries (a Kafka client is slow to start); a client that failed is replaced."""

        def run() -> Iterator[dict[str, Any] | None]:
            t = self._probe_tables.get(identifier)
            if t is None:
                t = self._probe_tables[identifier] = open_table(self.warehouse, identifier, self._given)
            else:
                internals(t).refresh_schema()
            log = self._probe_logs.get(identifier)
            if log is None and t.options.log_enabled:
                try:
                    log = self._probe_logs[identifier] = internals(t).open_log()
                except TablelogError as err:
                    yield {"error": str(err)}
                    return
            for answer in probe_log_steps(t, log):
                if answer is not None and "error" in answer and log is not None:
                    self._probe_logs.pop(identifier, None)  # a new client next time
                    log.close()
                yield answer

        return run

    # -- documents -----------------------------------------------------------

    def warehouse_document(self) -> dict[str, Any]:
        """Every table's row of the warehouse page; a table that cannot be opened shows
        its error instead of failing the page."""
        names = self.identifiers()
        deadline = time.monotonic() + self.probes.timeout_s
        for name in names:
            self.probes.start(name, self._probe(name))
        rows = []
        for name in names:
            try:
                t = self.table(name)
                probed = self.probes.get(name, self._probe(name), deadline)
                rows.append(table_summary(t, probed, self.verify_result(name)))
            except (TablelogError, OSError, LookupError, ValueError) as err:
                rows.append({"table": name, "error": f"{type(err).__name__}: {err}",
                             "health": {"mark": "error", "reasons": [str(err)]}})
        return {**self.settings(), "tables": rows}

    def settings(self) -> dict[str, Any]:
        return {"warehouse": self.warehouse, "exposed": self.exposed, "authentication": self.authenticated,
                "refresh_ms": int(self.refresh_s * 1000)}

    def table_document(self, identifier: str, limit: int) -> dict[str, Any]:
        t = self.table(identifier)
        probed = self.probes.get(identifier, self._probe(identifier))
        return table_document(t, limit, probed, self.verify_result(identifier), self.row_count_result(identifier))

    # -- verify and row counts -------------------------------------------------

    def start_verify(self, identifier: str) -> dict[str, Any]:
        """Run ``verify`` on the table in the background (once at a time per table)."""
        return self._start(self._verifies, identifier, lambda t: verify_document(verify(t)))

    def verify_result(self, identifier: str) -> dict[str, Any] | None:
        with self._lock:
            return self._verifies.get(identifier)

    def start_row_count(self, identifier: str) -> dict[str, Any]:
        """Count the table's rows at its latest snapshot in the background (a merge read
        of its files; once at a time per table)."""
        return self._start(self._row_counts, identifier, lambda t: {"state": "done", **count_rows(t)})

    def row_count_result(self, identifier: str) -> dict[str, Any] | None:
        with self._lock:
            return self._row_counts.get(identifier)

    def _start(self, runs: dict[str, dict[str, Any]], identifier: str,
               work: Callable[[Table], dict[str, Any]]) -> dict[str, Any]:
        t = self.table(identifier)
        with self._lock:
            current = runs.get(identifier)
            if current is not None and current["state"] == "running":
                return current
            started = {"state": "running", "started": time.time()}
            runs[identifier] = started
        self._verify_pool.submit(self._run, runs, identifier, t, work)
        return started

    def _run(self, runs: dict[str, dict[str, Any]], identifier: str, t: Table,
             work: Callable[[Table], dict[str, Any]]) -> None:
        began = time.time()
        try:
            result = work(t)
        except Exception as err:  # noqa: BLE001 -- shown on the page
            result = {"state": "error", "error": f"{type(err).__name__}: {err}"}
        result.update(started=began, finished=time.time())
        with self._lock:
            runs[identifier] = result


def verify_document(report: VerifyReport) -> dict[str, Any]:
    """A verify report as the page shows it: the summary and the first differing rows."""
    return {
        "state": "done",
        "consistent": report.consistent,
        "summary": report.summary(),
        "snapshot_id": report.snapshot_id,
        "changes_replayed": report.changes_replayed,
        "table_rows": report.table_rows,
        "log_rows": report.log_rows,
        "missing_from_log": json_value(list(report.missing_from_log[:VERIFY_ROWS_SHOWN])),
        "unexpected_in_log": json_value(list(report.unexpected_in_log[:VERIFY_ROWS_SHOWN])),
        "differing": [{"table": json_value(a), "log": json_value(b)} for a, b in report.differing[:VERIFY_ROWS_SHOWN]],
        "error": report.error,
    }
