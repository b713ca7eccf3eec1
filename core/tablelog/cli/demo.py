"""`tablelog demo`: the main job on the embedded defaults."""

from __future__ import annotations

import click

from tablelog.cli.common import console, friendly_errors


@click.command()
@click.option("--warehouse", "-w", envvar="TABLELOG_WAREHOUSE", default=None,
              help="Warehouse directory (default: a new temporary directory).")
@click.option("--log-system", type=click.Choice(["filesystem", "kafka", "pulsar"]), default="filesystem",
              show_default=True, help="Where the changelog goes.")
@click.option("--kafka-bootstrap", default=None, metavar="HOST:PORT", help="Kafka bootstrap servers.")
@click.option("--pulsar-url", default=None, metavar="pulsar://HOST:PORT", help="Pulsar service URL.")
@click.option("--batches", default=5, show_default=True, help="How many commits to write.")
@click.option("--rows", default=200, show_default=True, help="New rows per commit.")
@friendly_errors
def demo(warehouse: str | None, log_system: str, kafka_bootstrap: str | None, pulsar_url: str | None,
         batches: int, rows: int) -> None:
    """Write inserts, updates and deletes; read the changelog back live; verify.

    Needs no arguments: a local warehouse and the built-in `filesystem` log.
    """
    from tablelog.demo import demo_options, run_demo

    if log_system == "kafka" and not kafka_bootstrap:
        raise click.UsageError("--log-system kafka needs --kafka-bootstrap HOST:PORT")
    if log_system == "pulsar" and not pulsar_url:
        raise click.UsageError("--log-system pulsar needs --pulsar-url pulsar://HOST:PORT")
    result = run_demo(warehouse, demo_options(log_system, kafka_bootstrap, pulsar_url), batches, rows,
                      say=lambda line: console.print(line, markup=False, soft_wrap=True))
    ok = (result.report is not None and result.report.consistent and result.normalized_matches_table
          and result.changes_read == result.committed_changes)
    if not ok:
        raise SystemExit(1)
