"""`tablelog verify`: replay the log up to the latest snapshot and compare with the table's rows."""

from __future__ import annotations

import click
from rich.progress import Progress, SpinnerColumn, TextColumn

from tablelog.cli.common import (
    console,
    friendly_errors,
    options_option,
    parse_options,
    table_argument,
    warehouse_option,
)
from tablelog.documents import dumps
from tablelog.errors import LogUnavailableError
from tablelog.tables import open_table
from tablelog.verify import verify


@click.command("verify")
@warehouse_option
@table_argument
@options_option
@click.option("--show", default=10, show_default=True, help="How many differing rows to print.")
@friendly_errors
def verify_command(warehouse: str, table: str, raw_options: tuple[str, ...], show: int) -> None:
    """Replay the log up to the latest snapshot and compare with the table's rows.

    Exits 0 when consistent, 1 when not (and shows the differences) or on an error,
    3 when the log system cannot be reached (nothing was compared).
    """
    t = open_table(warehouse, table, parse_options(raw_options))
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), console=console, transient=True) as bar:
        task = bar.add_task("replaying the log", total=None)
        replayed = 0

        def progress(n: int) -> None:
            nonlocal replayed
            replayed += n
            bar.update(task, description=f"replaying the log: {replayed} changes")

        try:
            report = verify(t, progress)
        except LogUnavailableError as err:
            raise LogUnavailableError(
                f"cannot verify table {t.identifier!r}, nothing was compared: {err}"
            ) from None
    color = "green" if report.consistent else "red"
    console.print(f"[bold {color}]{report.summary()}[/]")
    for title, rows in (("in the table, not in the log", report.missing_from_log),
                        ("in the log, not in the table", report.unexpected_in_log)):
        for row in rows[:show]:
            console.print(f"  {title}: {dumps(row)}", markup=False)
    for table_row, log_row in report.differing[:show]:
        console.print(f"  differs: table {dumps(table_row)} log {dumps(log_row)}", markup=False)
    if not report.consistent:
        raise SystemExit(1)
