"""`tablelog demo`: the main job on the embedded defaults."""

from __future__ import annotations

import tempfile

import click

from tablelog.cli.common import console, friendly_errors


@click.command()
@click.option("--warehouse", "-w", envvar="TABLELOG_WAREHOUSE", default=None,
              help="Warehouse directory (default: a new temporary directory).")
@click.option("--log-system", type=click.Choice(["filesystem", "kafka", "pulsar"]), default="filesystem",
              show_default=True, help="Where the changelog goes.")
@click.option("--log-path", default=None, metavar="DIR",
              help="The file log's directory (log.system filesystem; default: in the warehouse, or a new "
                   "temporary directory when the warehouse is on an object store).")
@click.option("--kafka-bootstrap", default=None, metavar="HOST:PORT", help="Kafka bootstrap servers.")
@click.option("--pulsar-url", default=None, metavar="pulsar://HOST:PORT", help="Pulsar service URL.")
@click.option("--engine", type=click.Choice(["spark", "python"]), default="spark", show_default=True,
              help="spark: a PySpark streaming pipeline (local[2]); python: the same in plain Python (fast).")
@click.option("--batches", default=5, show_default=True, help="How many commits to write.")
@click.option("--rows", default=200, show_default=True, help="New rows per commit.")
@friendly_errors
def demo(warehouse: str | None, log_system: str, log_path: str | None, kafka_bootstrap: str | None, pulsar_url: str | None,
         engine: str, batches: int, rows: int) -> None:
    """Write inserts, updates and deletes; read the changelog back live; verify.

    Needs no arguments: a local warehouse and the built-in `filesystem` log, on local
    Spark (a streaming write, a streaming read printed live). `--engine python` runs
    the same pipeline without Spark.
    """
    from tablelog.demo_pipeline import demo_options, run_demo
    from tablelog.store.warehouse import is_object_store

    if log_system == "kafka" and not kafka_bootstrap:
        raise click.UsageError("--log-system kafka needs --kafka-bootstrap HOST:PORT")
    if log_system == "pulsar" and not pulsar_url:
        raise click.UsageError("--log-system pulsar needs --pulsar-url pulsar://HOST:PORT")
    def say(line: str) -> None:
        console.print(line, markup=False, soft_wrap=True)

    if log_system == "filesystem" and log_path is None and warehouse and is_object_store(warehouse):
        # The demo runs on this machine only, so a local directory is a log every part of it shares.
        log_path = tempfile.mkdtemp(prefix="tablelog-demo-log-")
        say(f"the warehouse is on an object store: the file log goes to {log_path} (this machine only; "
            "a pipeline on a cluster uses Kafka or Pulsar)")
    options = demo_options(log_system, kafka_bootstrap, pulsar_url, log_path)
    if engine == "spark":
        try:
            from tablelog.spark.demo_pipeline import run_spark_demo
        except ImportError as err:
            raise click.ClickException(f"{err}; or run `tablelog demo --engine python`") from None
        result = run_spark_demo(warehouse, options, batches, rows, say=say)
    else:
        result = run_demo(warehouse, options, batches, rows, say=say)
    ok = (result.report is not None and result.report.consistent and result.normalized_matches_table
          and result.changes_read == result.committed_changes)
    if not ok:
        raise SystemExit(1)
