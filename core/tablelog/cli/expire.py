"""`tablelog expire`: expire a table's snapshots as its options say (as every commit does);
with ``--partitions``, its expired partitions (``partition.expiration-time``)."""

from __future__ import annotations

import click

from tablelog.cli.common import (
    console,
    friendly_errors,
    options_option,
    parse_options,
    table_argument,
    warehouse_option,
)
from tablelog.documents import FORMATS, dumps
from tablelog.expiry import ExpireResult
from tablelog.table import Table
from tablelog.tables import open_table


def expire_document(result: ExpireResult) -> dict[str, object]:
    return {
        "dry_run": result.dry_run,
        "ran": result.ran,
        "expired_snapshots": list(result.expired.snapshots),
        "data_files": list(result.expired.data_files),
        "manifest_files": list(result.expired.manifest_files),
        "index_files": list(result.expired.index_files),
        "consumers_removed": list(result.consumers_removed),
        "earliest_kept": result.earliest_kept,
        "latest": result.latest,
        "held_by": result.held_by,
    }


@click.command("expire")
@warehouse_option
@table_argument
@options_option
@click.option("--dry-run", is_flag=True, help="Print what would be removed; remove nothing.")
@click.option("--partitions", "partitions", is_flag=True,
              help="Drop the partitions older than partition.expiration-time instead (their rows' -D in the log).")
@click.option("--format", "output_format", type=click.Choice(FORMATS), default="text", show_default=True,
              help="json: one JSON document of what was (or would be) removed.")
@friendly_errors
def expire_command(warehouse: str, table: str, raw_options: tuple[str, ...], dry_run: bool, partitions: bool,
                   output_format: str) -> None:
    """Expire old snapshots and the files only they reference.

    What is kept follows the table's options (snapshot.num-retained.min / .max,
    snapshot.time-retained, snapshot.expire.limit, registered consumers and
    consumer.expiration-time); -o overrides them for this run, e.g.
    -o snapshot.time-retained=10min. Commits run the same expiry after each snapshot.
    """
    t = open_table(warehouse, table, parse_options(raw_options))
    if partitions:
        _expire_partitions(t, dry_run, output_format)
        return
    result = t.expire_snapshots(dry_run=dry_run)
    if output_format == "json":
        click.echo(dumps(expire_document(result)))
        return
    verb = "would remove" if dry_run else "removed"
    if not result.ran:
        console.print(f"{t.identifier}: another process is expiring this table's snapshots; nothing done")
        return
    for consumer in result.consumers_removed:
        console.print(f"{verb} consumer {consumer!r} (not seen for consumer.expiration-time)")
    expired = result.expired
    if expired.snapshots:
        console.print(
            f"{verb} snapshots {expired.snapshots[0]}..{expired.snapshots[-1]} ({len(expired.snapshots)}), "
            f"{len(expired.data_files)} data file(s), {len(expired.manifest_files)} manifest file(s)"
            + (f", {len(expired.index_files)} key index file(s)" if expired.index_files else "")
        )
        for path in expired.data_files:
            console.print(f"  data file {path}", markup=False)
        for name in expired.manifest_files:
            console.print(f"  manifest {name}", markup=False)
        for path in expired.index_files:
            console.print(f"  key index file {path}", markup=False)
    else:
        console.print("no snapshot expired" + (f" (held by {result.held_by})" if result.held_by else ""))
    if result.latest is not None:
        console.print(f"snapshots kept: {result.earliest_kept}..{result.latest}")


def _expire_partitions(t: Table, dry_run: bool, output_format: str) -> None:
    result = t.expire_partitions(dry_run=dry_run)
    if output_format == "json":
        click.echo(dumps({
            "dry_run": result.dry_run,
            "dropped_partitions": [{"partition": partition, "rows": rows, "snapshot": snapshot}
                                   for partition, rows, snapshot in result.dropped],
        }))
        return
    if not result.dropped:
        console.print("no partition expired")
    for partition, rows, snapshot in result.dropped:
        shown = ", ".join(f"{k}={v}" for k, v in partition.items())
        if dry_run:
            console.print(f"would drop partition {shown}", markup=False)
        else:
            console.print(f"dropped partition {shown}: {rows} row(s), their -D in the log, snapshot {snapshot}",
                          markup=False)
