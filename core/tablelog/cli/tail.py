"""`tablelog tail`: print the changelog; the last line is the position to resume from.

The position printed last is exact: every change before it was printed, none
after it. Changes are printed a polled batch at a time and the position is taken
between batches, so ``--limit`` polls no more than it prints, and Ctrl-C (SIGINT)
under ``--follow`` takes effect between batches too (a second Ctrl-C while the
reader waits stops at once; the position is still the last batch's).

To print no more than ``--limit``, tail lets a poll stop inside any snapshot's partition
(the reader's ``split_partitions``); a position there whose partition the log then loses
gets that partition again whole from the table (at least once, with a warning).
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Callable, Iterator
from typing import Any

import click

from tablelog.cli.common import (
    friendly_errors,
    options_option,
    parse_options,
    table_argument,
    warehouse_option,
)
from tablelog.documents import FORMATS, change_document, dumps
from tablelog.errors import OptionError
from tablelog.reading import Change, ChangelogReader
from tablelog.reading.table_partitions import parse_partition_specs
from tablelog.table import Table
from tablelog.tables import open_table

#: Changes per poll: the most a batch holds before it is printed.
_BATCH = 10_000
#: How long one poll waits under --follow: how soon Ctrl-C is noticed while idle.
_FOLLOW_WAIT_S = 0.25


class _Interrupts:
    """SIGINT as a request to stop after the batch being printed; while the reader
    waits (``waiting``), a second SIGINT stops at once."""

    def __init__(self) -> None:
        self.requested = False
        self.waiting = False

    def __call__(self, signum: int, frame: Any) -> None:
        if self.requested and self.waiting:
            raise KeyboardInterrupt
        self.requested = True


@contextlib.contextmanager
def _stop_on_interrupt() -> Iterator[_Interrupts]:
    interrupts = _Interrupts()
    try:
        previous = signal.signal(signal.SIGINT, interrupts)
    except ValueError:  # not the main thread (an embedding application): leave SIGINT alone
        yield interrupts
        return
    try:
        yield interrupts
    finally:
        signal.signal(signal.SIGINT, previous)


def _line_printer(table: Table, output_format: str) -> Callable[[Change], str]:
    if output_format == "json":
        key = tuple(table.primary_key)
        return lambda change: dumps(change_document(change, key))
    return lambda change: f"{change.kind.value} {dumps(change.row)}"


def _check_followable(table: Table, follow: bool, scan_mode: str | None) -> None:
    """A table without a log keeps no changelog: it has current rows, nothing to follow."""
    if table.options.log_enabled:
        return
    if follow:
        raise OptionError(
            f"table {table.identifier!r} has no log (log.system=none), so there are no changes to "
            "follow: its snapshots keep rows, not changes. `tablelog tail` without --follow prints "
            "the current rows; to follow changes, create the table with a log "
            "(-o log.system=filesystem, kafka or pulsar)"
        )
    mode = scan_mode or table.options.scan_mode.value
    if mode != "latest-full":
        raise OptionError(
            f"table {table.identifier!r} has no log (log.system=none): --scan-mode {mode} reads "
            "changes from the log; only latest-full (the current rows) can be read"
        )


@click.command()
@warehouse_option
@table_argument
@click.option("--consistency", type=click.Choice(["transactional", "eventual"]), default=None,
              help="Override the table's log.consistency.")
@click.option("--scan-mode", type=click.Choice(["latest-full", "latest", "earliest", "from-timestamp"]),
              default=None, help="Where to start (default: the table's scan.mode).")
@click.option("--timestamp-millis", type=int, default=None, help="Start time for --scan-mode from-timestamp.")
@click.option("--position", default=None, help="Resume from a position printed by an earlier tail.")
@click.option("--follow", "-f", is_flag=True, help="Keep waiting for new changes; Ctrl-C ends.")
@click.option("--limit", "-n", type=int, default=None, help="Stop after this many changes.")
@click.option("--idle-timeout", type=float, default=1.0, show_default=True,
              help="Without --follow, stop after this many idle seconds.")
@click.option("--format", "output_format", type=click.Choice(FORMATS), default="text", show_default=True,
              help="text: `KIND {row}` per change; json: one JSON object per change with partition, "
                   "position, snapshot, kind, key and row.")
@click.option("--columns", default=None,
              help="Print only these columns (comma-separated) and the primary key's; an arrow log "
                   "decodes only those.")
@click.option("--partitions", "table_partitions", default=None,
              help="Only these partitions of a partitioned table: 'dt=2026-11-24;dt=2026-11-25'.")
@options_option
@friendly_errors
def tail(warehouse: str, table: str, consistency: str | None, scan_mode: str | None,
         timestamp_millis: int | None, position: str | None, follow: bool, limit: int | None,
         idle_timeout: float, output_format: str, columns: str | None, table_partitions: str | None,
         raw_options: tuple[str, ...]) -> None:
    """Print the changelog, one change per line; the last line is the position to resume from.

    The position goes to stderr as `# N change(s); position: JSON`, also when Ctrl-C
    ends --follow: pass the JSON to --position to go on with no change lost or repeated.
    With log.format=arrow a record holds many changes and is printed whole: --limit may
    print more changes, fewer than one record's more. A --limit position inside a
    snapshot's partition whose rest the log later loses gets the partition again whole.
    """
    if limit is not None and limit < 0:
        raise click.BadParameter(f"must be >= 0, got {limit}", param_hint="--limit")
    given = parse_options(raw_options, **{
        "log.consistency": ("--consistency", consistency),
        "scan.mode": ("--scan-mode", scan_mode),
        "scan.timestamp-millis": ("--timestamp-millis", None if timestamp_millis is None else str(timestamp_millis)),
    })
    t = open_table(warehouse, table, given)
    _check_followable(t, follow, scan_mode)
    line_of = _line_printer(t, output_format)
    shown = 0
    with _stop_on_interrupt() as interrupts, t.reader(
        position=position, consistency=consistency, scan_mode=scan_mode, timestamp_millis=timestamp_millis,
        columns=None if columns is None else [c.strip() for c in columns.split(",") if c.strip()],
        table_partitions=None if table_partitions is None else parse_partition_specs(table_partitions, "--partitions"),
        split_partitions=limit is not None,
    ) as reader:
        resume_at = reader.position
        try:
            while not interrupts.requested and (limit is None or shown < limit):
                budget = _BATCH if limit is None else min(_BATCH, limit - shown)
                batch = _poll(reader, interrupts, budget, _FOLLOW_WAIT_S if follow else idle_timeout)
                if not batch and not follow:
                    break
                # One write per batch: a SIGINT now only sets the flag, so the batch is
                # printed whole and the position below is right after it.
                if batch:
                    click.echo("\n".join(map(line_of, batch)))
                shown += len(batch)
                resume_at = reader.position
        except KeyboardInterrupt:
            pass  # a second Ctrl-C while waiting: nothing of that poll was printed
        click.echo(f"# {shown} change(s); position: {resume_at.to_json()}", err=True)


def _poll(reader: ChangelogReader, interrupts: _Interrupts, budget: int, timeout_s: float) -> list[Change]:
    interrupts.waiting = True
    try:
        return reader.poll(max_records=budget, timeout_s=timeout_s)
    finally:
        interrupts.waiting = False
