"""How fast `tablelog ui` answers for a long-lived table:
``python -m bench.ui [--snapshots 10000] [--repeats 30] [--warehouse DIR]``.

Builds a filesystem-log table with ``--snapshots`` real commits (one small write each,
through one writer; printing progress; with ``--warehouse`` an existing table of enough
snapshots is reused), serves the dashboard on a free loopback port in this process, and
times every endpoint and the page over HTTP: the first request (cold caches) and the
median and p95 of ``--repeats`` more. Writes ``bench/results/ui.json``. The target
(issue #18): every answer within 300 ms.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

import tablelog
from tablelog.table import Table
from tablelog.testing.dashboard import serving
from tablelog.ui.state import Dashboard

RESULTS = Path(__file__).resolve().parent / "results"
TABLE = "bench.ui"
SCHEMA = pa.schema([("id", pa.int64()), ("seq", pa.int64()), ("payload", pa.string())])
TARGET_MS = 300.0


def build_table(warehouse: str, snapshots: int) -> Table:
    """The table with at least ``snapshots`` snapshots, one small commit at a time."""
    try:
        table = tablelog.open_table(warehouse, TABLE)
    except tablelog.TablelogError:
        table = tablelog.create_table(warehouse, TABLE, SCHEMA, primary_key=["id"], bucket=2,
                                      options={"log.system": "filesystem"})
    latest = table.store.latest_snapshot()
    have = latest.id if latest is not None else 0
    began, report_at = time.monotonic(), have + 500
    with table.writer("bench-writer") as writer:
        while have < snapshots:
            writer.write([{"id": have % 500, "seq": have, "payload": f"row {have}"},
                          {"id": 500 + have % 500, "seq": have, "payload": "x" * 40}])
            writer.commit()
            have = table.store.latest_snapshot().id  # type: ignore[union-attr]
            if have >= report_at:
                report_at += 500
                print(f"  {have} snapshots ({time.monotonic() - began:.0f} s)", flush=True)
    return table


def snapshot_count(warehouse: str) -> int:
    try:
        latest = tablelog.open_table(warehouse, TABLE).store.latest_snapshot()
    except tablelog.TablelogError:
        return 0
    return latest.id if latest is not None else 0


def figures_line(name: str, f: dict[str, Any]) -> str:
    return f"{name:<52} first {f['first_ms']:7.1f} ms  median {f['median_ms']:6.1f} ms  p95 {f['p95_ms']:6.1f} ms"


def timed_get(url: str) -> tuple[float, bytes]:
    began = time.perf_counter()
    with urllib.request.urlopen(url, timeout=60) as response:
        body = response.read()
    return (time.perf_counter() - began) * 1000, body


def measure(url: str, repeats: int, min_seconds: float = 0.0) -> dict[str, float]:
    """The first request, then ``repeats`` more (and more until ``min_seconds`` passed)."""
    first, _ = timed_get(url)
    ends = time.monotonic() + min_seconds
    times = [timed_get(url)[0] for _ in range(repeats)]
    while time.monotonic() < ends:
        times.append(timed_get(url)[0])
        time.sleep(0.05)  # a page polls; it does not hammer
    times.sort()
    return {"first_ms": round(first, 1), "median_ms": round(statistics.median(times), 1),
            "p95_ms": round(times[min(len(times) - 1, int(len(times) * 0.95))], 1), "max_ms": round(times[-1], 1),
            "requests": len(times)}


_LIVE_WRITER = """
import os, sys, tablelog
table = tablelog.open_table(sys.argv[1], sys.argv[2])
with table.writer("bench-live-writer") as writer:
    n = 0
    while not os.path.exists(sys.argv[3]):
        writer.write([{"id": 2000 + n % 100, "seq": n, "payload": "live"}])
        writer.commit()
        n += 1
"""


@contextlib.contextmanager
def committing(warehouse: str) -> Iterator[Callable[[], int]]:
    """A writer process committing small writes (as a pipeline does beside the
    dashboard), from its first commit on; yields a function giving the latest snapshot."""
    stop = Path(tempfile.mkdtemp()) / "stop"
    latest = functools.partial(snapshot_count, warehouse)
    before = latest()
    writer = subprocess.Popen([sys.executable, "-c", _LIVE_WRITER, warehouse, TABLE, str(stop)])
    while latest() == before and writer.poll() is None:  # its start is not what is measured
        time.sleep(0.05)
    try:
        yield latest
    finally:
        stop.touch()
        writer.wait(timeout=60)


def full_walk_seconds(table: Table) -> float:
    """How long the one full walk of the retained snapshots takes (what they need of the
    log, which the dashboard computes in the background after its start)."""
    from tablelog.commit import retention

    with retention._walked_lock:
        retention._walked.clear()
    began = time.monotonic()
    retention.needed_positions(table.store)
    return time.monotonic() - began


def describe_seconds(warehouse: str) -> float:
    began = time.monotonic()
    subprocess.run([sys.executable, "-c", "from tablelog.cli import main; main()", "describe", "-w", warehouse, TABLE, "--format", "json"],
                   check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--snapshots", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--warehouse", default=None, help="Reuse (or build) the table here.")
    args = parser.parse_args()
    warehouse = args.warehouse or tempfile.mkdtemp(prefix="bench-ui-")
    print(f"building {TABLE} with {args.snapshots} snapshots in {warehouse}", flush=True)
    began = time.monotonic()
    before = snapshot_count(warehouse)
    table = build_table(warehouse, args.snapshots)
    built_s = time.monotonic() - began
    latest = table.store.latest_snapshot().id  # type: ignore[union-attr]
    print(f"built: {latest} snapshots in {built_s:.0f} s; timing the endpoints", flush=True)
    served = contextlib.ExitStack()
    base = served.enter_context(serving(Dashboard(warehouse, refresh_s=2.0)))
    quoted = urllib.parse.quote(TABLE)
    # In the order a browser asks, so that each "first" is that request on a new server.
    endpoints = {
        "page /": "/",
        "/static/ui.js": "/static/ui.js",
        "/api/settings": "/api/settings",
        "/api/warehouse": "/api/warehouse",
        "/api/tables/{name}?limit=50": f"/api/tables/{quoted}?limit=50",
        "/api/tables/{name}/changes?limit=100 (newest)": f"/api/tables/{quoted}/changes?limit=100",
        "/api/tables/{name}/changes?position=... (follow)": None,
        "/api/tables/{name}/verify": f"/api/tables/{quoted}/verify",
    }
    figures = {}
    for name, path in endpoints.items():
        if path is None:
            _, changes = timed_get(f"{base}/api/tables/{quoted}/changes?limit=100")
            path = f"/api/tables/{quoted}/changes?position={urllib.parse.quote(json.loads(changes)['position'])}"
        figures[name] = measure(base + path, args.repeats)
        print(figures_line(name, figures[name]), flush=True)
    for name, path in (("/api/warehouse while a writer commits", "/api/warehouse"),
                       ("/api/tables/{name}?limit=50 while a writer commits", f"/api/tables/{quoted}?limit=50")):
        with committing(warehouse) as latest_snapshot:
            made = latest_snapshot()
            figures[name] = measure(base + path, args.repeats, min_seconds=10.0)
            made = latest_snapshot() - made
        print(f"{figures_line(name, figures[name])}  ({made} snapshots meanwhile)", flush=True)
    needed_s = full_walk_seconds(table)
    print(f"what the retained snapshots need of the log, the one full walk (in the background): {needed_s:.1f} s",
          flush=True)
    described = describe_seconds(warehouse)
    print(f"tablelog describe --format json (a new process, reads them all): {described:.1f} s", flush=True)
    served.close()
    worst = max(f["p95_ms"] for f in figures.values())
    result = {
        "command": f"python -m bench.ui --snapshots {args.snapshots} --repeats {args.repeats}",
        "snapshots": latest, "snapshots_built_now": latest - before, "build_seconds": round(built_s, 1),
        "repeats": args.repeats,
        "machine": {"cpus": __import__("os").cpu_count(), "python": platform.python_version(),
                    "platform": platform.platform()},
        "endpoints": figures, "needed_positions_full_walk_s": round(needed_s, 1),
        "describe_json_process_s": round(described, 1), "worst_p95_ms": worst, "target_ms": TARGET_MS, "met": worst <= TARGET_MS,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "ui.json").write_text(json.dumps(result, indent=2) + "\n")
    print(f"worst p95 {worst:.1f} ms (target {TARGET_MS:.0f} ms): {'met' if result['met'] else 'NOT met'}; "
          f"written to {RESULTS / 'ui.json'}")


if __name__ == "__main__":
    main()
