"""Compaction as a Spark job (tablelog.spark.compact): one Spark task per (partition,
bucket), one COMPACT snapshot; a writer committing meanwhile loses nothing (every row and
every change counted), and the table reads and verifies as before."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
from click.testing import CliRunner

import tablelog
import tablelog.spark
from tablelog.cli import cli
from tablelog.table import Table
from tablelog.testing import NO_COMPACTION
from tablelog.verify import verify

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])


def _table(warehouse: Path) -> Table:
    table = tablelog.create_table(str(warehouse), "db.t", SCHEMA, primary_key=["dt", "id"], bucket=2,
                                  partition_keys=["dt"], options={**NO_COMPACTION, "log.system": "filesystem"})
    for commit in range(3):  # three sorted runs in each of 2 partitions x 2 buckets
        with table.writer("load") as writer:
            writer.write([{"dt": f"d{k % 2}", "id": k, "v": f"c{commit}"} for k in range(commit * 20, commit * 20 + 60)])
            writer.commit()
    return table


def _expected(table: Table) -> dict[tuple[str, int], str]:
    return {(r["dt"], r["id"]): r["v"] for r in table.rows().to_pylist()}


def test_a_spark_compaction_racing_a_writer_commits_every_pair_and_loses_nothing(spark: Any, tmp_path: Path) -> None:
    table = _table(tmp_path)
    expected = _expected(table)
    racing = threading.Event()

    def write_meanwhile() -> None:
        with table.writer("racer") as writer:
            for commit in range(5):
                rows = [{"dt": f"d{k % 2}", "id": k, "v": f"r{commit}"} for k in range(commit * 7, commit * 7 + 30)]
                writer.write(rows)
                writer.commit()
                expected.update({(r["dt"], r["id"]): r["v"] for r in rows})
                racing.set()

    writer = threading.Thread(target=write_meanwhile)
    writer.start()
    racing.wait(30)
    result = tablelog.spark.compact(spark, "db.t", warehouse=str(tmp_path))
    writer.join()

    assert result.snapshot_id is not None and len(result.pairs) == 4 and not result.dropped
    assert result.rewrite_seconds > 0 and result.seconds > 0  # the tasks timed their rewrites, the driver the job
    assert _expected(table) == expected
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        changes = reader.read_all(idle_timeout_s=0.3)
    assert len(changes) == 3 * 60 + 5 * 30  # every write once; the COMPACT snapshot brings none
    assert verify(table).consistent



def test_tablelog_compact_on_spark_rewrites_the_chosen_partition(spark: Any, tmp_path: Path) -> None:
    table = _table(tmp_path)
    expected = _expected(table)
    result = CliRunner().invoke(cli, ["compact", "-w", str(tmp_path), "db.t", "--spark", "local[2]", "-p", "dt=d1"])
    assert result.exit_code == 0, result.output
    assert "compacted" in result.output
    compacted = [s for s in table.snapshots() if s.commit_kind == "COMPACT"]
    assert len(compacted) == 1 and _expected(table) == expected
    refused = CliRunner().invoke(cli, ["compact", "-w", str(tmp_path), "db.t", "--spark", "local[2]", "--follow"])
    assert refused.exit_code != 0 and "--spark compacts once" in refused.output
