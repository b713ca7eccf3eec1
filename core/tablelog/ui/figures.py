"""A table's figures as JSON-ready documents: what ``tablelog describe --format json``
prints and what ``tablelog ui``'s endpoints answer, built by the same functions so the
terminal and the dashboard never disagree.

The snapshot part reads only the newest snapshots (a window of at least
:data:`RECENT_SNAPSHOTS`) and is cached per table and latest snapshot id: a table with
10,000 snapshots costs the reads of its new snapshots, not of all of them, per request.
The log part (:func:`probe_log`) asks the log system; callers that must not wait on a
broker run it elsewhere and pass its answer in (:mod:`tablelog.ui.probes`).
"""

from __future__ import annotations

import collections
import contextlib
import datetime
import itertools
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa

from tablelog.commit import LogCommitRecord, snapshot_commits, written_by
from tablelog.commit.retention import held_positions, needed_positions, retention_against
from tablelog.errors import TablelogError
from tablelog.logs.client import LogClient
from tablelog.options import redact
from tablelog.store import SnapshotInfo
from tablelog.table import Table, internals

#: Snapshots the rates, the writers and the timeline are computed over.
RECENT_SNAPSHOTS = 200
#: A consumer this many snapshots behind the latest makes the health mark a warning.
CONSUMER_LAG_WARNING = 100

Commit = tuple[SnapshotInfo, LogCommitRecord | None]

# (table path, table id) -> (latest snapshot id, earliest snapshot id, newest commits):
# after a commit only the new snapshots are read.
_windows: dict[tuple[str, str], tuple[int, int, list[Commit]]] = {}
_windows_lock = threading.Lock()


def newest_commits(t: Table, limit: int) -> list[Commit]:
    """The ``limit`` newest snapshots, newest first, each with its log part."""
    limit = max(limit, 0)
    store = internals(t).files
    latest = store.latest_snapshot()
    if latest is None or limit == 0:
        return []
    earliest = store.earliest_snapshot_id(latest_known=True) or 1
    key = (store.path, t.table_id)
    with _windows_lock:
        cached = _windows.get(key)
    if cached is not None and cached[0] == latest.id and cached[1] == earliest and len(cached[2]) >= limit:
        return cached[2][:limit]
    size = max(limit, RECENT_SNAPSHOTS)
    if cached is not None and cached[1] == earliest and cached[0] < latest.id and _covers(cached[2], size, earliest):
        fresh = list(itertools.islice(snapshot_commits(store, newest_first=True, after=cached[0]), size))
        window = (fresh + cached[2])[:size]
    else:
        window = list(itertools.islice(snapshot_commits(store, newest_first=True), size))
    with _windows_lock:
        _windows[key] = (latest.id, earliest, window)
    return window[:limit]


def _covers(window: list[Commit], size: int, earliest: int) -> bool:
    """Whether ``window`` holds ``size`` snapshots or every one down to the earliest."""
    return len(window) >= size or not window or window[-1][0].id <= earliest


def iso_time(millis: int) -> str:
    when = datetime.datetime.fromtimestamp(millis / 1000, datetime.timezone.utc)
    return when.isoformat(timespec="milliseconds")


def snapshot_entry(snapshot: SnapshotInfo, record: LogCommitRecord | None) -> dict[str, Any]:
    """One snapshot as the documents show it; ``file_records``: the records in its data
    files, before the merge (Paimon's record count: in a primary-key table each version
    of a key until a compaction merges them, so not its rows: :func:`known_rows`);
    ``log_records``: the records its commit put in the log (a change each with the JSON
    formats, many with ``arrow``; None: a snapshot tablelog did not write, such as a
    compaction); ``written_by``: :func:`~tablelog.commit.written_by` (``"another writer"``:
    a commit with no log records, whose changes readers take from the table files);
    ``relayed_snapshots``: a relay's commit, the snapshots whose changes it carries."""
    entry: dict[str, Any] = {
        "id": snapshot.id,
        "time": iso_time(snapshot.time_millis),
        "time_millis": snapshot.time_millis,
        "kind": snapshot.commit_kind,
        "file_records": snapshot.total_record_count,
        "schema_id": snapshot.schema_id,
        "writer": None, "commit_identifier": None, "log_end_positions": None, "writes": [], "log_records": None,
        "commit_ms": None,
        "written_by": written_by(snapshot, record),
        "relayed_snapshots": list(record.relayed_snapshots) if record is not None else [],
    }
    if record is not None:
        entry.update(
            writer=record.writer,
            commit_identifier=record.commit_identifier,
            log_end_positions={str(p): e for p, e in sorted(record.end_positions.items())},
            writes=[
                {"token": r.token, "partition": r.partition, "first": r.first, "last": r.last, "records": r.count}
                for r in record.ranges
            ],
            log_records=sum(r.count for r in record.ranges),
            commit_ms=commit_latency_ms(snapshot, record),
        )
    return entry


def known_rows(t: Table) -> dict[str, Any] | None:
    """The table's rows at its latest snapshot, as ``{"snapshot": id, "count": rows}``, when
    the snapshot tells them: an empty table, or one without a primary key (each record is
    a row). None for a table with a primary key: its files hold every version of a key
    until a compaction merges them, so only :func:`count_rows` tells."""
    latest = internals(t).files.latest_snapshot()
    if latest is None:
        return {"snapshot": None, "count": 0}
    return None if t.primary_key else {"snapshot": latest.id, "count": latest.total_record_count}


def count_rows(t: Table) -> dict[str, Any]:
    """:func:`known_rows`, or the rows counted by a merge read of the table files."""
    latest = internals(t).files.latest_snapshot()
    if latest is None or not t.primary_key:
        return known_rows(t) or {"snapshot": None, "count": 0}
    return {"snapshot": latest.id, "count": internals(t).files.count_rows(latest)}


def commit_latency_ms(snapshot: SnapshotInfo, record: LogCommitRecord) -> int | None:
    """From the committer's start (its lock wait, the commit identifier's check, the log's
    end positions, the manifests) to the snapshot's own time; None for snapshots of versions
    that did not record the start."""
    if record.commit_started_ms is None:
        return None
    return max(snapshot.time_millis - record.commit_started_ms, 0)


def snapshots_per_minute(commits: list[Commit]) -> float | None:
    """The commit rate over ``commits`` (newest first): None with fewer than two."""
    if len(commits) < 2:
        return None
    span_ms = commits[0][0].time_millis - commits[-1][0].time_millis
    if span_ms <= 0:
        return None
    return round((len(commits) - 1) * 60_000 / span_ms, 2)


def writer_rows(commits: list[Commit]) -> list[dict[str, Any]]:
    """Each writer that committed in ``commits`` (newest first) with its last commit."""
    rows: dict[str, dict[str, Any]] = {}
    for snapshot, record in commits:
        if record is not None and record.writer not in rows:
            rows[record.writer] = {"writer": record.writer, "last_commit_identifier": record.commit_identifier,
                                   "snapshot": snapshot.id, "time": iso_time(snapshot.time_millis)}
    return list(rows.values())


def consumer_rows(t: Table) -> list[dict[str, Any]]:
    """The table's Paimon consumers: next snapshot, how many snapshots behind the latest,
    when last seen, and whether expiry removed snapshots it still needed."""
    latest = internals(t).files.latest_snapshot()
    latest_id = latest.id if latest is not None else 0
    earliest = (internals(t).files.earliest_snapshot_id(latest_known=True) if latest is not None else None) or 1
    rows = []
    for consumer in internals(t).files.consumers().all():
        seen = None
        if consumer.modified_millis is not None:
            seen = datetime.datetime.fromtimestamp(consumer.modified_millis / 1000, datetime.timezone.utc)
        rows.append({
            "id": consumer.consumer_id,
            "next_snapshot": consumer.next_snapshot,
            "snapshots_behind": max(latest_id - consumer.next_snapshot + 1, 0),
            "last_seen": None if seen is None else seen.isoformat(timespec="seconds"),
            "stranded": consumer.next_snapshot < earliest,
        })
    return rows


def schema_history(t: Table) -> list[dict[str, Any]]:
    """Every schema the table has had, oldest first (one entry until it is altered)."""
    history = []
    for schema_id in range(internals(t).files.latest_schema_id() + 1):
        try:
            version = internals(t).files.schema_version(schema_id)
        except LookupError:
            continue
        history.append({"id": schema_id, "fields": schema_fields(version.schema)})
    return history


def schema_fields(schema: pa.Schema) -> list[dict[str, Any]]:
    return [{"name": f.name, "type": str(f.type), "nullable": f.nullable} for f in schema]


def probe_log_steps(t: Table, log: LogClient | None = None) -> Iterator[dict[str, Any] | None]:
    """:func:`probe_log`'s answer in two steps: first what the log says (its earliest and
    end positions, ``needed_pending``), then with what the retained snapshots need, which
    on a first call walks every retained snapshot (cached after: new snapshots only).
    ``log``: an open client to ask (a dashboard keeps one per table), else one is opened
    and closed."""
    if not t.options.log_enabled or internals(t).files.latest_snapshot() is None:
        yield None
        return
    try:
        with contextlib.nullcontext(log) if log is not None else internals(t).open_log() as client:
            held = held_positions(internals(t), client)
    except TablelogError as err:
        yield {"error": str(err)}
        return

    def rows(needed: Mapping[int, int]) -> list[dict[str, Any]]:
        return [{"partition": r.partition, "earliest": r.earliest, "needed": r.needed, "end": r.end,
                 "short": r.short} for r in retention_against(held, needed)]

    yield {"partitions": rows({}), "needed_pending": True}
    yield {"partitions": rows(needed_positions(internals(t).files))}


def probe_log(t: Table) -> dict[str, Any] | None:
    """What the log says now, per partition: the earliest position it holds, the earliest
    the retained snapshots need, its end; or ``{"error": why}`` when it cannot be asked;
    None for a table without a log or without a snapshot (nothing needs the log yet, and
    describing a new table contacts no broker)."""
    answers = collections.deque(probe_log_steps(t), maxlen=1)
    return answers[0] if answers else None


def log_section(t: Table, latest: LogCommitRecord | None, probed: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The table's log: system, topic, partitions and, from ``probed`` (:func:`probe_log`'s
    answer, None: not asked yet), each partition's positions against the end positions the
    latest log commit recorded (``uncommitted``: records past them)."""
    if not t.options.log_enabled:
        return None
    log: dict[str, Any] = {"system": t.options.log_system, "topic": t.topic, "partitions": t.log_partitions,
                           "consistency": t.options.log_consistency.value}
    if t.projection:
        log["projection"] = {"topic": internals(t).projection_log_config().topic, "columns": list(t.projection)}
    committed = dict(latest.end_positions) if latest is not None else {}
    if probed is None:
        return log
    if "error" in probed:
        log.update(reachable=False, error=probed["error"], retention_error=probed["error"], retention=[])
        return log
    rows = []
    for row in probed["partitions"]:
        end_committed = committed.get(row["partition"])
        rows.append({**row, "committed_end": end_committed,
                     "uncommitted": None if end_committed is None else max(row["end"] - end_committed, 0)})
    log.update(reachable=True, retention=rows)
    if probed.get("needed_pending"):
        log["needed_pending"] = True
    return log


def health(log: Mapping[str, Any] | None, consumers: list[dict[str, Any]],
           verified: Mapping[str, Any] | None) -> dict[str, Any]:
    """``ok``, ``warning`` or ``error``, with the reasons: an unreachable log or a failed
    verify is an error; a log that lost what snapshots need, a stranded or far-behind
    consumer is a warning."""
    errors, warnings = [], []
    if log is not None and log.get("reachable") is False:
        errors.append(f"log unreachable: {log.get('error')}")
    if verified is not None and verified.get("consistent") is False:
        errors.append(f"verify: {verified.get('summary')}")
    if log is not None and any(r.get("short") for r in log.get("retention", [])):
        warnings.append("the log no longer holds records the retained snapshots need")
    for c in consumers:
        if c["stranded"]:
            warnings.append(f"consumer {c['id']} needs expired snapshots")
        elif c["snapshots_behind"] >= CONSUMER_LAG_WARNING:
            warnings.append(f"consumer {c['id']} is {c['snapshots_behind']} snapshots behind")
    mark = "error" if errors else "warning" if warnings else "ok"
    return {"mark": mark, "reasons": errors + warnings}


def table_document(t: Table, limit: int, probed: Mapping[str, Any] | None,
                   verified: Mapping[str, Any] | None = None,
                   counting: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Everything known of a table, as one JSON-ready document (secrets redacted):
    ``describe --format json`` and the dashboard's table endpoint. ``counting``: a count
    of the rows made on request (``{"state": "done", "snapshot", "count"}`` when done, as
    :func:`count_rows`), for a table whose rows :func:`known_rows` cannot tell."""
    window = newest_commits(t, max(limit, RECENT_SNAPSHOTS))
    rows = known_rows(t)
    if rows is None and counting is not None and counting.get("state") == "done":
        rows = {"snapshot": counting["snapshot"], "count": counting["count"]}
    log, consumers, marked = _log_and_health(t, window, probed, verified)
    return {
        "table": t.identifier,
        "warehouse": t.warehouse.path,
        "primary_key": list(t.primary_key),
        "partition_keys": list(internals(t).files.partition_keys),
        "buckets": internals(t).files.bucket,
        "schema_id": t.schema_id,
        "rows": rows,
        "row_count": counting,
        "schema": schema_fields(t.schema),
        "schema_history": schema_history(t),
        "options": dict(sorted(redact({**internals(t).files.properties, **internals(t).system_options}).items())),
        "log": log,
        "consumers": consumers,
        "writers": writer_rows(window),
        "snapshots_per_minute": snapshots_per_minute(window),
        "health": marked,
        "verify": verified,
        "snapshots": [snapshot_entry(s, r) for s, r in window[:limit]],
    }


def table_summary(t: Table, probed: Mapping[str, Any] | None,
                  verified: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One row of the warehouse page: the table's log, last commit, rate and health."""
    window = newest_commits(t, RECENT_SNAPSHOTS)
    log, _, marked = _log_and_health(t, window, probed, verified)
    return {
        "table": t.identifier,
        "log": log,
        "latest_snapshot": window[0][0].id if window else None,
        "last_commit_time": iso_time(window[0][0].time_millis) if window else None,
        "snapshots_per_minute": snapshots_per_minute(window),
        "health": marked,
        "verify": verified,
    }


def _log_and_health(
    t: Table, window: list[Commit], probed: Mapping[str, Any] | None, verified: Mapping[str, Any] | None,
) -> tuple[dict[str, Any] | None, list[dict[str, Any]], dict[str, Any]]:
    """The log section (against the newest log commit in ``window``), the consumers, and
    the health mark they make with ``verified``."""
    latest_record = next((record for _, record in window if record is not None), None)
    log = log_section(t, latest_record, probed)
    consumers = consumer_rows(t)
    return log, consumers, health(log, consumers, verified)
