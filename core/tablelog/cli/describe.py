"""`tablelog describe`: schema, options, snapshots with their log positions and committed writes,
and the table's consumers."""

from __future__ import annotations

import datetime
import itertools
import json
import time
from typing import Any

import click
from rich.markup import escape
from rich.table import Table as RichTable

from tablelog.cli.common import (
    console,
    friendly_errors,
    options_option,
    parse_options,
    table_argument,
    warehouse_option,
)
from tablelog.cli.output import FORMATS, dumps
from tablelog.commit import LogCommitRecord, snapshot_commits
from tablelog.commit.retention import PartitionRetention, retention_report
from tablelog.errors import TablelogError
from tablelog.options import redact
from tablelog.store import SnapshotInfo
from tablelog.table import Table, open_table


def newest_commits(t: Table, limit: int) -> list[tuple[SnapshotInfo, LogCommitRecord | None]]:
    """The ``limit`` newest snapshots, each with its log part."""
    return list(itertools.islice(snapshot_commits(t.store, newest_first=True), max(limit, 0)))


def consumer_rows(t: Table) -> list[dict[str, Any]]:
    """The table's Paimon consumers: next snapshot, how many snapshots behind the latest,
    when last seen, and whether expiry removed snapshots it still needed."""
    latest = t.store.latest_snapshot()
    latest_id = latest.id if latest is not None else 0
    earliest = t.store.earliest_snapshot_id() or 1
    rows = []
    for consumer in t.store.consumers().all():
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


def describe_document(t: Table, limit: int) -> dict[str, Any]:
    """Everything ``describe`` shows, as one JSON-ready document (secrets redacted)."""
    snapshots = []
    for snapshot, record in newest_commits(t, limit):
        when = datetime.datetime.fromtimestamp(snapshot.time_millis / 1000, datetime.timezone.utc)
        entry: dict[str, Any] = {
            "id": snapshot.id,
            "time": when.isoformat(timespec="milliseconds"),
            "kind": snapshot.commit_kind,
            "rows": snapshot.total_record_count,
            "schema_id": snapshot.schema_id,
            "writer": None, "commit_identifier": None, "log_end_positions": None, "writes": [],
        }
        if record is not None:
            entry.update(
                writer=record.writer,
                commit_identifier=record.commit_identifier,
                log_end_positions={str(p): e for p, e in sorted(record.end_positions.items())},
                writes=[
                    {"token": r.token, "partition": r.partition, "first": r.first, "last": r.last,
                     "records": r.count}
                    for r in record.ranges
                ],
            )
        snapshots.append(entry)
    log: dict[str, Any] | None = None
    if t.options.log_enabled:
        log = {"system": t.options.log_system, "topic": t.topic, "partitions": t.log_partitions}
    if log is not None and t.store.latest_snapshot() is not None:  # else nothing needs the log yet
        retention, error = log_retention(t)
        log["retention"] = [
            {"partition": r.partition, "earliest": r.earliest, "needed": r.needed, "end": r.end, "short": r.short}
            for r in retention
        ]
        if error:
            log["retention_error"] = error
    return {
        "table": t.identifier,
        "warehouse": t.warehouse.path,
        "primary_key": list(t.primary_key),
        "buckets": t.store.bucket,
        "schema_id": t.schema_id,
        "schema": [{"name": f.name, "type": str(f.type), "nullable": f.nullable} for f in t.schema],
        "options": dict(sorted(redact({**t.store.properties, **t.system_options}).items())),
        "log": log,
        "consumers": consumer_rows(t),
        "snapshots": snapshots,
    }


def log_retention(t: Table) -> tuple[list[PartitionRetention], str | None]:
    """Each log partition's earliest retained position against what the retained snapshots
    need; (nothing, why) when the log cannot be asked."""
    try:
        with t.open_log() as log:
            return retention_report(t, log), None
    except TablelogError as err:
        return [], str(err)


def print_retention(t: Table) -> None:
    retention, error = log_retention(t)
    if error:
        console.print(f"[yellow]log retention not checked: {escape(error)}[/]")
        return
    rows = RichTable("partition", "earliest held", "needed by the oldest snapshot", "end",
                     title="log retention")
    for r in retention:
        needed = "-" if r.needed is None else str(r.needed)
        rows.add_row(str(r.partition), str(r.earliest), needed, str(r.end), style="red" if r.short else None)
    console.print(rows)
    short = [r for r in retention if r.short]
    if short:
        lost = ", ".join(f"{r.partition} (holds from {r.earliest}, needed from {r.needed})" for r in short)
        console.print(
            f"[bold red]warning:[/] the log's retention is shorter than the table's snapshots: partition(s) "
            f"{lost}. Readers starting at the oldest snapshots will find records lost; keep the log longer "
            "(e.g. Kafka retention.ms) or retain fewer snapshots."
        )


@click.command()
@warehouse_option
@table_argument
@options_option
@click.option("--limit", default=20, show_default=True, help="How many of the newest snapshots to show.")
@click.option("--tokens", is_flag=True, help="Also list each committed write: token, partition, positions.")
@click.option("--format", "output_format", type=click.Choice(FORMATS), default="text", show_default=True,
              help="json: one JSON document (schema, options, log, snapshots with their writes).")
@friendly_errors
def describe(warehouse: str, table: str, raw_options: tuple[str, ...], limit: int, tokens: bool,
             output_format: str) -> None:
    """Show a table: schema, options, snapshots with their log positions and committed writes, consumers."""
    t = open_table(warehouse, table, parse_options(raw_options))
    if output_format == "json":
        click.echo(dumps(describe_document(t, limit)))
        return
    console.print(f"[bold]{t.identifier}[/]  warehouse {t.warehouse.path}")
    console.print(f"primary key: {', '.join(t.primary_key) or '(none)'}   buckets: {t.store.bucket}")
    schema = RichTable("column", "type", title=f"schema {t.schema_id}")
    for field in t.schema:
        schema.add_row(field.name, str(field.type))
    console.print(schema)
    opts = RichTable("option", "value", title="options")
    for key, value in sorted(redact({**t.store.properties, **t.system_options}).items()):
        opts.add_row(key, str(value))
    console.print(opts)
    if t.options.log_enabled:
        console.print(f"log: {t.options.log_system} topic {t.topic!r}, {t.log_partitions} partition(s)")
        if t.store.latest_snapshot() is not None:
            print_retention(t)
    snaps = RichTable("snapshot", "time", "kind", "rows", "writer", "commit", "writes", "records",
                      "log end positions", title="snapshots (newest first)")
    commits = newest_commits(t, limit)
    for snapshot, record in commits:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(snapshot.time_millis / 1000))
        if record is None:
            snaps.add_row(str(snapshot.id), when, snapshot.commit_kind, str(snapshot.total_record_count),
                          "-", "-", "-", "-", "-")
            continue
        snaps.add_row(
            str(snapshot.id), when, snapshot.commit_kind, str(snapshot.total_record_count),
            record.writer[:12], str(record.commit_identifier), str(len(record.tokens())),
            str(sum(r.count for r in record.ranges)),
            json.dumps({str(p): e for p, e in sorted(record.end_positions.items())}),
        )
    console.print(snaps)
    consumers = consumer_rows(t)
    if consumers:
        table_of_consumers = RichTable("consumer", "next snapshot", "snapshots behind", "last seen (UTC)",
                                       title="consumers (Paimon consumer-id)")
        for c in consumers:
            behind = str(c["snapshots_behind"]) + (" (its snapshots expired)" if c["stranded"] else "")
            table_of_consumers.add_row(c["id"], str(c["next_snapshot"]), behind, c["last_seen"] or "-")
        console.print(table_of_consumers)
    if tokens:
        writes = RichTable("snapshot", "writer token", "partition", "first position", "last position",
                           "records", title="committed writes (newest first)")
        for snapshot, record in commits:
            for r in record.ranges if record else ():
                writes.add_row(str(snapshot.id), r.token, str(r.partition), str(r.first), str(r.last), str(r.count))
        console.print(writes)
