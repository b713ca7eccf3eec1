"""`tablelog describe`: schema, options, snapshots with their log positions and committed writes,
and the table's consumers."""

from __future__ import annotations

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
from tablelog.commit import written_by
from tablelog.commit.history import ANOTHER_WRITER
from tablelog.documents import FORMATS, dumps
from tablelog.options import redact
from tablelog.table import Table, internals
from tablelog.tables import open_table
from tablelog.ui.figures import (
    commit_latency_ms,
    consumer_rows,
    count_rows,
    known_rows,
    newest_commits,
    probe_log,
    table_document,
)


def describe_document(t: Table, limit: int, counted: bool = False) -> dict[str, Any]:
    """Everything ``describe`` shows, as one JSON-ready document (secrets redacted): the
    document ``tablelog ui`` serves for the table, with the log asked now (and with
    ``counted``, the rows counted by a merge read)."""
    return table_document(t, limit, probe_log(t), counting={"state": "done", **count_rows(t)} if counted else None)


def rows_line(rows: dict[str, Any] | None) -> str:
    if rows is None:
        return ("rows: not counted (the table files hold each version of a key until a compaction; "
                "--count-rows merge-reads them)")
    return f"rows: {rows['count']}" + (f" (snapshot {rows['snapshot']})" if rows["snapshot"] is not None else "")


def print_retention(probed: dict[str, Any] | None) -> None:
    """The log's retention as :func:`probe_log` found it (None: nothing needs the log yet)."""
    if probed is None:
        return
    if "error" in probed:
        console.print(f"[yellow]log retention not checked: {escape(probed['error'])}[/]")
        return
    rows = RichTable("partition", "earliest held", "needed by the oldest snapshot", "end",
                     title="log retention")
    retention = probed["partitions"]
    for r in retention:
        needed = "-" if r["needed"] is None else str(r["needed"])
        rows.add_row(str(r["partition"]), str(r["earliest"]), needed, str(r["end"]),
                     style="red" if r["short"] else None)
    console.print(rows)
    short = [r for r in retention if r["short"]]
    if short:
        lost = ", ".join(f"{r['partition']} (holds from {r['earliest']}, needed from {r['needed']})" for r in short)
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
@click.option("--count-rows", "counted", is_flag=True,
              help="Count the rows of a table with a primary key: a merge read of its files.")
@click.option("--format", "output_format", type=click.Choice(FORMATS), default="text", show_default=True,
              help="json: one JSON document (schema, options, log, snapshots with their writes).")
@friendly_errors
def describe(warehouse: str, table: str, raw_options: tuple[str, ...], limit: int, tokens: bool,
             counted: bool, output_format: str) -> None:
    """Show a table: schema, options, snapshots with their log positions and committed writes, consumers."""
    t = open_table(warehouse, table, parse_options(raw_options))
    if output_format == "json":
        click.echo(dumps(describe_document(t, limit, counted)))
        return
    console.print(f"[bold]{t.identifier}[/]  warehouse {t.warehouse.path}")
    files = internals(t).files
    console.print(f"primary key: {', '.join(t.primary_key) or '(none)'}   "
                  f"partitioned by: {', '.join(files.partition_keys) or '(none)'}   buckets: {_buckets_text(t)}")
    console.print(rows_line(count_rows(t) if counted else known_rows(t)))
    schema = RichTable("column", "type", title=f"schema {t.schema_id}")
    for field in t.schema:
        schema.add_row(field.name, str(field.type))
    console.print(schema)
    opts = RichTable("option", "value", title="options")
    for key, value in sorted(redact({**internals(t).files.properties, **internals(t).system_options}).items()):
        opts.add_row(key, str(value))
    console.print(opts)
    if t.options.log_enabled:
        console.print(f"log: {t.options.log_system} topic {t.topic!r}, {t.log_partitions} partition(s)")
        if t.projection:
            console.print(f"projection stream: topic {internals(t).projection_log_config().topic!r}, "
                          f"columns {', '.join(t.projection)}")
        print_retention(probe_log(t))
    snaps = RichTable("snapshot", "time", "kind", "file records", "writer", "commit", "writes", "log records",
                      "commit ms", "log end positions", title="snapshots (newest first)")
    commits = newest_commits(t, limit)
    for snapshot, record in commits:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(snapshot.time_millis / 1000))
        if record is None:
            # Another writer's commit: no log records; readers take its changes from the table files.
            foreign = written_by(snapshot, record) == ANOTHER_WRITER
            snaps.add_row(str(snapshot.id), when, snapshot.commit_kind, str(snapshot.total_record_count),
                          ANOTHER_WRITER if foreign else "-", "-", "-",
                          "- (read from the files)" if foreign else "-", "-", "-")
            continue
        relayed = ", ".join(map(str, record.relayed_snapshots))
        snaps.add_row(
            str(snapshot.id), when, snapshot.commit_kind, str(snapshot.total_record_count),
            f"relay of {relayed}" if relayed else f"(log {record.system} attached)" if record.attached
            else record.writer[:12],
            str(record.commit_identifier), str(len(record.tokens())),
            str(sum(r.count for r in record.ranges)),
            _or_dash(commit_latency_ms(snapshot, record)),
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


def _or_dash(value: int | None) -> str:
    return "-" if value is None else str(value)


def _buckets_text(t: Table) -> str:
    """The bucket count, or what dynamic buckets mean for the log."""
    bucket = internals(t).files.bucket
    if bucket > 0:
        return str(bucket)
    return f"dynamic (-1; log partition = key hash mod {t.log_partitions})"
