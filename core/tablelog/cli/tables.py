"""`tablelog create | describe | tail | verify`."""

from __future__ import annotations

import json
import re
import time

import click
import pyarrow as pa
from rich.progress import Progress, SpinnerColumn, TextColumn
from rich.table import Table as RichTable

from tablelog.cli.common import (
    console,
    friendly_errors,
    options_option,
    parse_options,
    table_argument,
    warehouse_option,
)
from tablelog.errors import OptionError
from tablelog.options import redact
from tablelog.protocol import LogCommitRecord
from tablelog.table import create_table, open_table
from tablelog.verify import verify

_TYPES = {
    "tinyint": pa.int8(), "int8": pa.int8(), "smallint": pa.int16(), "int16": pa.int16(),
    "int": pa.int32(), "int32": pa.int32(), "bigint": pa.int64(), "int64": pa.int64(),
    "float": pa.float32(), "float32": pa.float32(), "double": pa.float64(), "float64": pa.float64(),
    "boolean": pa.bool_(), "bool": pa.bool_(), "string": pa.string(), "binary": pa.binary(),
    "date": pa.date32(), "timestamp": pa.timestamp("us"),
}


def parse_schema(text: str) -> pa.Schema:
    """``"id bigint, name string, price decimal(10,2)"`` -> an Arrow schema."""
    fields = []
    for part in re.split(r",(?![^()]*\))", text):
        if not part.strip():
            continue
        name, _, type_name = part.strip().partition(" ")
        type_name = type_name.strip().lower()
        decimal = re.fullmatch(r"decimal\((\d+),\s*(\d+)\)", type_name)
        if decimal:
            fields.append(pa.field(name, pa.decimal128(int(decimal[1]), int(decimal[2]))))
        elif type_name in _TYPES:
            fields.append(pa.field(name, _TYPES[type_name]))
        else:
            raise OptionError(
                f"column {name!r}: unknown type {type_name!r}; known: {', '.join(_TYPES)}, decimal(p,s)"
            )
    if not fields:
        raise OptionError("the schema has no columns; e.g. --schema 'id bigint, name string'")
    return pa.schema(fields)


@click.command()
@warehouse_option
@table_argument
@click.option("--schema", "schema_text", required=True, help="Columns, e.g. 'id bigint, name string'.")
@click.option("--primary-key", "-k", default="", help="Primary key columns, comma-separated.")
@click.option("--bucket", "-b", type=int, default=None, help="Number of buckets (log partitions).")
@options_option
@friendly_errors
def create(warehouse: str, table: str, schema_text: str, primary_key: str, bucket: int | None,
           raw_options: tuple[str, ...]) -> None:
    """Create a table."""
    options = parse_options(raw_options, **{
        "primary-key": ("-k/--primary-key", primary_key or None),
        "bucket": ("-b/--bucket", None if bucket is None else str(bucket)),
    })
    created = create_table(warehouse, table, parse_schema(schema_text), options=options)
    console.print(f"created {created.identifier} in {created.warehouse.path} (log.system={created.options.log_system})")


@click.command()
@warehouse_option
@table_argument
@options_option
@click.option("--limit", default=20, show_default=True, help="How many of the newest snapshots to show.")
@click.option("--tokens", is_flag=True, help="Also list each committed write: token, partition, positions.")
@friendly_errors
def describe(warehouse: str, table: str, raw_options: tuple[str, ...], limit: int, tokens: bool) -> None:
    """Show a table: schema, options, snapshots with their log positions and committed writes."""
    t = open_table(warehouse, table, parse_options(raw_options))
    console.print(f"[bold]{t.identifier}[/]  warehouse {t.warehouse.path}")
    console.print(f"primary key: {', '.join(t.primary_key) or '(none)'}   buckets: {t.store.bucket}")
    schema = RichTable("column", "type", title="schema")
    for field in t.schema:
        schema.add_row(field.name, str(field.type))
    console.print(schema)
    opts = RichTable("option", "value", title="options")
    for key, value in sorted(redact({**t.store.properties, **t.system_options}).items()):
        opts.add_row(key, str(value))
    console.print(opts)
    if t.options.log_enabled:
        console.print(f"log: {t.options.log_system} topic {t.topic!r}, {t.log_partitions} partition(s)")
    snaps = RichTable("snapshot", "time", "kind", "rows", "writer", "commit", "writes", "records",
                      "log end positions", title="snapshots (newest first)")
    for i, snapshot in enumerate(t.snapshots(newest_first=True)):
        if i >= limit:
            break
        record = LogCommitRecord.from_properties(snapshot.properties)
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
    if tokens:
        writes = RichTable("snapshot", "writer token", "partition", "first position", "last position",
                           "records", title="committed writes (newest first)")
        for i, snapshot in enumerate(t.snapshots(newest_first=True)):
            record = LogCommitRecord.from_properties(snapshot.properties) if i < limit else None
            for r in record.ranges if record else ():
                writes.add_row(str(snapshot.id), r.token, str(r.partition), str(r.first), str(r.last), str(r.count))
        console.print(writes)


@click.command()
@warehouse_option
@table_argument
@click.option("--consistency", type=click.Choice(["transactional", "eventual"]), default=None,
              help="Override the table's log.consistency.")
@click.option("--scan-mode", type=click.Choice(["latest-full", "latest", "earliest", "from-timestamp"]),
              default=None, help="Where to start (default: the table's scan.mode).")
@click.option("--timestamp-millis", type=int, default=None, help="Start time for --scan-mode from-timestamp.")
@click.option("--position", default=None, help="Resume from a position printed by an earlier tail.")
@click.option("--follow", "-f", is_flag=True, help="Keep waiting for new changes.")
@click.option("--limit", "-n", type=int, default=None, help="Stop after this many changes.")
@click.option("--idle-timeout", type=float, default=1.0, show_default=True,
              help="Without --follow, stop after this many idle seconds.")
@options_option
@friendly_errors
def tail(warehouse: str, table: str, consistency: str | None, scan_mode: str | None,
         timestamp_millis: int | None, position: str | None, follow: bool, limit: int | None,
         idle_timeout: float, raw_options: tuple[str, ...]) -> None:
    """Print the changelog, one change per line; the last line is the position to resume from."""
    t = open_table(warehouse, table, parse_options(raw_options))
    shown = 0
    with t.reader(position=position, consistency=consistency, scan_mode=scan_mode,
                  timestamp_millis=timestamp_millis) as reader:
        for change in reader.changes(follow=follow, idle_timeout_s=idle_timeout):
            click.echo(f"{change.kind.value} {json.dumps(change.row, default=str)}")
            shown += 1
            if limit is not None and shown >= limit:
                break
        click.echo(f"# {shown} change(s); position: {reader.position.to_json()}", err=True)


@click.command("verify")
@warehouse_option
@table_argument
@options_option
@click.option("--show", default=10, show_default=True, help="How many differing rows to print.")
@friendly_errors
def verify_command(warehouse: str, table: str, raw_options: tuple[str, ...], show: int) -> None:
    """Replay the log up to the latest snapshot and compare with the table's rows.

    Exits 0 when consistent, 1 when not (and shows the differences).
    """
    t = open_table(warehouse, table, parse_options(raw_options))
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), console=console, transient=True) as bar:
        task = bar.add_task("replaying the log", total=None)
        replayed = 0

        def progress(n: int) -> None:
            nonlocal replayed
            replayed += n
            bar.update(task, description=f"replaying the log: {replayed} changes")

        report = verify(t, progress)
    color = "green" if report.consistent else "red"
    console.print(f"[bold {color}]{report.summary()}[/]")
    for title, rows in (("in the table, not in the log", report.missing_from_log),
                        ("in the log, not in the table", report.unexpected_in_log)):
        for row in rows[:show]:
            console.print(f"  {title}: {json.dumps(row, default=str)}")
    for table_row, log_row in report.differing[:show]:
        console.print(f"  differs: table {json.dumps(table_row, default=str)} log {json.dumps(log_row, default=str)}")
    if not report.consistent:
        raise SystemExit(1)
