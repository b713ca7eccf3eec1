"""`tablelog compact`: rewrite buckets' files into one sorted run each (a COMPACT snapshot)."""

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
from tablelog.tables import open_table


@click.command("compact")
@warehouse_option
@table_argument
@options_option
@click.option("--bucket", "-b", "buckets", type=int, multiple=True, metavar="N",
              help="Compact only this bucket (repeatable); default every bucket.")
@friendly_errors
def compact_command(warehouse: str, table: str, raw_options: tuple[str, ...], buckets: tuple[int, ...]) -> None:
    """Rewrite each bucket that has more than one sorted run into one, in one COMPACT snapshot.

    The table's rows do not change and log readers pass over the snapshot; writers may
    commit meanwhile. Commits compact on their own past num-sorted-run.compaction-trigger.
    """
    t = open_table(warehouse, table, parse_options(raw_options))
    result = t.compact(buckets or None)
    console.print(result.summary(), markup=False)
