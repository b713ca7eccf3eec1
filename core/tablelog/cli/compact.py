"""`tablelog compact`: rewrite (partition, bucket)s' files into one sorted run each (a
COMPACT snapshot), once or following the table (:mod:`tablelog.compaction_job`)."""

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
from tablelog.cli.stop_signals import stop_on_signals
from tablelog.commit import compaction
from tablelog.option_values import InvalidValue, parse_duration_ms
from tablelog.table import internals
from tablelog.tables import open_table


def _partition(text: str) -> dict[str, str]:
    """``dt=2026-11-24,hh=3``: one table partition, its values by column."""
    spec: dict[str, str] = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"--partition {text!r}: expected COLUMN=VALUE[,COLUMN=VALUE...]")
        spec[key.strip()] = value.strip()
    return spec


def _interval_s(text: str) -> float:
    try:
        return parse_duration_ms(text) / 1000
    except InvalidValue as err:
        raise click.BadParameter(f"--interval {text!r}: {err}") from None


@click.command("compact")
@warehouse_option
@table_argument
@options_option
@click.option("--bucket", "-b", "buckets", type=int, multiple=True, metavar="N",
              help="Compact only this bucket (repeatable); default every bucket.")
@click.option("--partition", "-p", "partitions", multiple=True, metavar="COL=VALUE[,COL=VALUE]",
              help="Compact only this table partition (repeatable); default every partition.")
@click.option("--follow", is_flag=True,
              help="Keep following the table: compact what new snapshots wrote, expire, sleep --interval; "
              "until SIGTERM or Ctrl-C.")
@click.option("--interval", "interval", default="10 s", show_default=True, metavar="DURATION",
              help="With --follow: the sleep between rounds (`30 s`, `5 min`).")
@click.option("--full", is_flag=True,
              help="With --follow: rewrite every run of each pair written (default: the runs Paimon's "
              "universal compaction picks past num-sorted-run.compaction-trigger). Without --follow "
              "compaction is always full.")
@click.option("--threads", type=click.IntRange(min=1), default=compaction.DEFAULT_THREADS, show_default=True, metavar="N",
              help="Pairs rewritten at once in this process (each holds its runs' batches in memory). "
              "Not with --spark: there each pair is a Spark task.")
@click.option("--spark", "spark_master", default=None, metavar="MASTER",
              help="Rewrite the pairs as Spark tasks, one per (partition, bucket), on this master "
              "(`local[2]`, `spark://host:7077`); one COMPACT snapshot. Not with --follow.")
@friendly_errors
def compact_command(warehouse: str, table: str, raw_options: tuple[str, ...], buckets: tuple[int, ...],
                    partitions: tuple[str, ...], follow: bool, interval: str, full: bool,
                    spark_master: str | None, threads: int) -> None:
    """Rewrite each (partition, bucket) that has more than one sorted run into one, in one COMPACT snapshot.

    The table's rows do not change and log readers pass over the snapshot; writers may
    commit meanwhile. Writers compact in the background past num-sorted-run.compaction-trigger,
    unless the table is write-only: then run `tablelog compact --follow` beside them.
    """
    specs = [_partition(text) for text in partitions] or None
    interval_s = _interval_s(interval)
    if spark_master is not None:
        if follow:
            raise click.UsageError("--spark compacts once: it cannot --follow (run --follow in a process of its own)")
        _compact_on_spark(warehouse, table, parse_options(raw_options), spark_master, buckets, specs)
        return
    t = open_table(warehouse, table, parse_options(raw_options))
    # SIGTERM stops between steps: a rewrite in progress ends and its files are deleted
    with stop_on_signals() as stop:
        if follow:
            from tablelog.compaction_job import follow as follow_table

            console.print(f"following table {t.identifier} (every {interval}); SIGTERM or Ctrl-C stops", markup=False)
            follow_table(internals(t), stop, interval_s=interval_s, full=full, buckets=buckets or None,
                         partitions=specs, report=lambda line: console.print(line, markup=False),
                         threads=threads)
            console.print(f"table {t.identifier}: stopped", markup=False)
            return
        result = compaction.compact(internals(t), buckets or None, partitions=specs, cancelled=stop.is_set,
                                    threads=threads)
        console.print(result.summary(), markup=False)


def _compact_on_spark(warehouse: str, table: str, options: dict[str, str], master: str,
                      buckets: tuple[int, ...], partitions: list[dict[str, str]] | None) -> None:
    from tablelog.spark.compaction import compact
    from tablelog.spark.session import local_session

    spark = local_session(master=master, app_name=f"tablelog compact {table}")
    result = compact(spark, table, warehouse=warehouse, options=options, buckets=buckets or None,
                     partitions=partitions)
    console.print(result.summary(), markup=False)
