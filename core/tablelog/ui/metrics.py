"""The dashboard's figures as Prometheus metrics (``GET /metrics``, the text exposition
format), for operators who scrape rather than watch a page. Every figure comes from the
same documents the page shows (:mod:`tablelog.ui.figures`): one table document per table
at each scrape, so a scrape costs what a refresh of each table's page costs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

#: The health marks as numbers (a gauge): what an alert compares.
HEALTH_LEVELS = {"ok": 0, "warning": 1, "error": 2}

#: name -> (type, help): every metric /metrics serves, in this order.
METRICS: dict[str, tuple[str, str]] = {
    "tablelog_table_health": ("gauge", "The table's health: 0 ok, 1 warning, 2 error (the page's mark)."),
    "tablelog_table_latest_snapshot": ("gauge", "The id of the table's latest snapshot."),
    "tablelog_table_snapshots_per_minute": ("gauge", "Snapshots committed per minute, over the newest ones."),
    "tablelog_table_commit_latency_seconds": (
        "gauge", "The newest tablelog commit's latency: from its first write to its snapshot."),
    "tablelog_log_reachable": ("gauge", "1 when the table's log system answered, else 0."),
    "tablelog_log_end_offset": ("gauge", "The log partition's end position."),
    "tablelog_log_committed_end_offset": ("gauge", "The end position the latest snapshot recorded."),
    "tablelog_log_uncommitted_records": (
        "gauge", "Log records after the committed end: written, not committed yet (or never to be)."),
    "tablelog_consumer_snapshots_behind": ("gauge", "How many snapshots a registered consumer-id is behind."),
}


def metrics_text(warehouse: Mapping[str, Any], tables: Iterable[Mapping[str, Any]]) -> str:
    """The exposition of the warehouse document's tables and their table documents."""
    samples: dict[str, list[tuple[dict[str, str], float]]] = {name: [] for name in METRICS}
    for row in warehouse.get("tables", []):
        mark = (row.get("health") or {}).get("mark", "error")
        samples["tablelog_table_health"].append(({"table": row["table"]}, HEALTH_LEVELS.get(mark, 2)))
    for doc in tables:
        _table_samples(doc, samples)
    lines = []
    for name, (kind, text) in METRICS.items():
        lines += [f"# HELP {name} {text}", f"# TYPE {name} {kind}"]
        lines += [f"{name}{{{_labels(labels)}}} {_number(value)}" for labels, value in samples[name]]
    return "\n".join(lines) + "\n"


def _table_samples(doc: Mapping[str, Any], samples: dict[str, list[tuple[dict[str, str], float]]]) -> None:
    table = {"table": str(doc["table"])}
    snapshots = doc.get("snapshots") or []
    if snapshots:
        samples["tablelog_table_latest_snapshot"].append((table, snapshots[0]["id"]))
        latency = next((s["commit_ms"] for s in snapshots if s.get("commit_ms") is not None), None)
        if latency is not None:
            samples["tablelog_table_commit_latency_seconds"].append((table, latency / 1000.0))
    if doc.get("snapshots_per_minute") is not None:
        samples["tablelog_table_snapshots_per_minute"].append((table, doc["snapshots_per_minute"]))
    log = doc.get("log")
    if log is not None and "reachable" in log:
        samples["tablelog_log_reachable"].append((table, 1 if log["reachable"] else 0))
    topic = str((log or {}).get("topic", ""))
    for row in (log or {}).get("retention", []):
        labels = {**table, "topic": topic, "partition": str(row["partition"])}
        for name, key in (("tablelog_log_end_offset", "end"), ("tablelog_log_committed_end_offset", "committed_end"),
                          ("tablelog_log_uncommitted_records", "uncommitted")):
            if row.get(key) is not None:
                samples[name].append((labels, row[key]))
    for consumer in doc.get("consumers") or []:
        samples["tablelog_consumer_snapshots_behind"].append(
            ({**table, "consumer": str(consumer["id"])}, consumer["snapshots_behind"]))


def _labels(labels: Mapping[str, str]) -> str:
    return ",".join(f'{key}="{_escaped(value)}"' for key, value in labels.items())


def _escaped(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    return repr(float(value)) if isinstance(value, float) else str(int(value))
