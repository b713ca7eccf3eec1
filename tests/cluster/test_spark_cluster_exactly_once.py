"""Exactly-once on a real cluster: the Spark sink and source on the standalone cluster
(master and two workers, executors in processes of their own), the warehouse on S3
(SeaweedFS), the log on Kafka (Tansu). Every change is counted on both sides: a streaming
write with a worker killed with SIGKILL in the middle of a micro-batch, then read back on
the cluster; and the driver killed with SIGKILL between the table commit and Spark's
commit log."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import attrs
import pytest

from tablelog.table import Table
from tablelog.tables import open_table
from tablelog.testing.processes import start_python
from tablelog.testing.s3_server import S3Endpoint
from tablelog.testing.spark_cluster import StandaloneCluster, spark_environment
from tablelog.testing.spark_inputs import (
    BATCHES,
    FILES_PER_BATCH,
    assert_committed_records,
    committed_identifiers,
    eventual_count,
    expected_log,
    expected_rows,
    input_batches,
    log_snapshots,
    replay,
    table_rows,
    write_input,
)
from tablelog.verify import verify

pytestmark = [pytest.mark.cluster, pytest.mark.kafka, pytest.mark.spark]

DRIVER = Path(__file__).parent / "drivers" / "streaming_pipeline.py"


@attrs.frozen
class Pipeline:
    """One table in an S3 warehouse with its log on Kafka, and the input of three micro-batches."""

    master: str
    warehouse: str
    name: str
    options: dict[str, str]
    work: Path

    @property
    def checkpoint(self) -> Path:
        return self.work / "checkpoint"

    def start_driver(self, testing: dict[str, str] | None = None, read: bool = False,
                     executors: bool = False) -> subprocess.Popen[str]:
        config = {"master": self.master, "warehouse": self.warehouse, "table": self.name,
                  "inputs": str(self.work / "in"), "checkpoint": str(self.checkpoint), "options": self.options,
                  "testing": testing or {}, "read": str(self.work / "read") if read else None,
                  "executors": executors}
        return start_python(
            DRIVER, config, stdout=subprocess.PIPE,
            stderr=open(self.work / "driver.log", "a"), text=True, start_new_session=True,
            env=spark_environment(self.work / "driver", log_level="error"))

    def finish(self, driver: subprocess.Popen[str], timeout_s: float = 300) -> dict[str, Any]:
        out, _ = driver.communicate(timeout=timeout_s)
        assert driver.returncode == 0, f"the driver failed ({driver.returncode}):\n{self.driver_log()}"
        return dict(json.loads(out.strip().splitlines()[-1]))

    def driver_log(self) -> str:
        return (self.work / "driver.log").read_text(errors="replace")[-4000:]

    def table(self) -> Table:
        return open_table(self.warehouse, self.name, self.options)


@pytest.fixture
def pipeline(spark_cluster: StandaloneCluster, s3_server: S3Endpoint, kafka_bootstrap: str,
             tmp_path: Path) -> Pipeline:
    write_input(tmp_path / "in")
    options = {"log.system": "kafka", "kafka.bootstrap.servers": kafka_bootstrap,
               "s3.endpoint": s3_server.endpoint, "s3.access-key": s3_server.access_key,
               "s3.secret-key": s3_server.secret_key}
    return Pipeline(master=spark_cluster.master_url, warehouse=s3_server.url(f"cluster-{uuid.uuid4().hex[:8]}"),
                    name="db.orders", options=options, work=tmp_path)


def transactional_changes(table: Table) -> Counter[tuple[str, int, str]]:
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        return Counter((c.kind.value, c.row["id"], c.row["name"]) for c in reader.read_all(idle_timeout_s=0.5))


def assert_each_change_committed_once(table: Table) -> None:
    snapshots = log_snapshots(table)
    assert [s.commit_identifier for s in snapshots] == list(range(1, BATCHES + 1))
    assert_committed_records(table, snapshots)
    assert table_rows(table) == expected_rows()
    assert transactional_changes(table) == expected_log()
    assert verify(table).consistent


def test_a_worker_killed_in_the_middle_of_a_micro_batch_leaves_orphans_no_reader_sees(
        pipeline: Pipeline, spark_cluster: StandaloneCluster) -> None:
    # The same driver then reads the table back on the cluster through the Spark source.
    if not spark_cluster.workers:
        pytest.fail("this test kills a worker: it needs the cluster the fixtures start, not the one "
                    "TABLELOG_TEST_SPARK_MASTER names", pytrace=False)
    marker = pipeline.work / "paused-task.json"
    # Attempt 0 of partition 0 of micro-batch 1 produces its rows, then sleeps before finish().
    driver = pipeline.start_driver({"testing.pause-mid-write": "1:0:600", "testing.paused-task-file": str(marker)},
                                   read=True)
    killed: list[int] = []
    victim = -1
    try:
        deadline = time.monotonic() + 240
        while not marker.exists():
            assert driver.poll() is None and time.monotonic() < deadline, \
                f"no task attempt paused; driver log:\n{pipeline.driver_log()}"
            time.sleep(0.1)
        time.sleep(0.5)  # the marker is written before the sleep starts
        paused = json.loads(marker.read_text())
        victim = next(i for i in range(len(spark_cluster.workers))
                      if paused["cwd"].startswith(f"{spark_cluster.worker_dir(i)}/"))
        killed = spark_cluster.kill_worker(victim)
        read = pipeline.finish(driver)
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
        if victim >= 0:
            spark_cluster.restart_worker(victim)
    assert paused["pid"] in killed  # the paused attempt died with its worker, it never finished

    table = pipeline.table()
    # Spark ran the lost task again elsewhere: every micro-batch committed the receipts of
    # two tasks, none from the dead attempt.
    assert [len(s.tokens()) for s in log_snapshots(table)] == [FILES_PER_BATCH] * BATCHES
    assert_each_change_committed_once(table)
    # The dead attempt's records are in the topic, read by eventual readers only.
    assert eventual_count(table) > sum(expected_log().values())
    # What the executors read through the Spark source: each committed change once ...
    assert Counter((c["_kind"], c["id"], c["name"]) for c in read["transactional"]) == expected_log()
    # ... and the eventual read (the dead attempt's records too), normalized, gives the table's rows.
    assert read["eventual"] == eventual_count(table)
    assert replay(read["normalized"]) == table_rows(table) == expected_rows()


# In `tox -e matrix`: CI's time budget keeps the worker kill above on the cluster, and the
# same driver kill on local[2] (tests/spark/test_spark_exactly_once.py).
@pytest.mark.matrix
def test_a_driver_killed_between_the_table_commit_and_sparks_commit_log_commits_nothing_twice_after_restart(
        pipeline: Pipeline, spark_cluster: StandaloneCluster) -> None:
    # The driver commits micro-batch 1 to the table, then sleeps before Spark's commit log
    # records it; the whole driver (Python and JVM) is killed there. The log holds ``arrow``
    # records (many rows each): the worker-kill test above runs with Debezium JSON.
    pipeline = attrs.evolve(pipeline, options={**pipeline.options, "log.format": "arrow"})
    driver = pipeline.start_driver({"testing.pause-after-commit": "1:600"})
    try:
        deadline, why = time.monotonic() + 240, ""
        while True:
            assert driver.poll() is None and time.monotonic() < deadline, \
                f"micro-batch 1 was never committed ({why}); driver log:\n{pipeline.driver_log()}"
            committed, why = committed_identifiers(pipeline.warehouse, pipeline.name, pipeline.options)
            if 2 in committed:
                break
            time.sleep(0.2)
        assert not (pipeline.checkpoint / "commits" / "1").exists()
    finally:
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait(timeout=30)
    assert driver.returncode == -signal.SIGKILL
    table = pipeline.table()
    assert [s.commit_identifier for s in log_snapshots(table)] == [1, 2]
    before_restart = eventual_count(table)

    restarted = pipeline.finish(pipeline.start_driver(executors=True))

    assert (pipeline.checkpoint / "commits" / "2").exists()
    # Batch 1 was replayed: its tasks produced again, its commit found its snapshot and
    # committed nothing.
    produced_again = sum(1 for b in input_batches()[1:] for c in b if c["_kind"] != "-U")
    assert eventual_count(table) == before_restart + produced_again
    assert_each_change_committed_once(table)
    # The tasks ran in two executor processes of their own, one under each worker.
    tasks = restarted["executors"]
    assert sorted(t["partition"] for t in tasks) == list(range(8))
    assert len({t["executor_pid"] for t in tasks}) == 2 and os.getpid() not in {t["executor_pid"] for t in tasks}
    if spark_cluster.workers:  # started here: each executor is a child of its own worker's dir
        assert {Path(t["executor_dir"]).parent.parent.name for t in tasks} == {"worker-0", "worker-1"}
