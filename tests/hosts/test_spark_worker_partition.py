"""The Spark sink on a standalone cluster whose master, workers and driver are separate
hosts, the S3 server and the broker two more: a worker partitioned from the broker and
from S3 in the middle of a micro-batch, while one of its tasks is between producing and
``finish()``. Spark runs the task again; every change is counted on both sides."""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tablelog.tables import open_table
from tablelog.testing.hosts import Network
from tablelog.testing.kafka_server import tansu_broker
from tablelog.testing.s3_server import seaweedfs
from tablelog.testing.spark_cluster import spark_environment, spark_standalone
from tablelog.testing.spark_inputs import (
    BATCHES,
    FILES_PER_BATCH,
    assert_committed_records,
    expected_log,
    expected_rows,
    log_snapshots,
    table_rows,
    write_input,
)
from tablelog.verify import verify

from .committers import QUICK_FAILURE

# In `tox -e faults`: CI's time budget keeps Spark's exactly-once under a killed worker on the
# loopback cluster (tests/cluster), and the committer and reader scenarios across hosts.
pytestmark = [pytest.mark.spark, pytest.mark.kafka, pytest.mark.faults]

DRIVER = Path(__file__).parents[1] / "cluster" / "drivers" / "streaming_pipeline.py"
#: How long the cut worker stays cut off after its task wakes: past the task's timeouts
#: (QUICK_FAILURE's on S3, the log's flush timeout below), so that its attempt fails there.
CUT_S = 15.0


@pytest.fixture
def spark_hosts(tmp_path: Path) -> Iterator[dict[str, Any]]:
    (tmp_path / "tansu").mkdir()
    with contextlib.ExitStack() as stack:
        net = stack.enter_context(Network(["s3", "broker", "master", "w0", "w1", "driver"]))
        s3 = stack.enter_context(seaweedfs(tmp_path / "s3", address=net["s3"].address, launch=net["s3"].popen))
        kafka = stack.enter_context(tansu_broker(tmp_path / "tansu", address=net["broker"].address,
                                                 launch=net["broker"].popen))
        cluster = stack.enter_context(spark_standalone(tmp_path / "spark", workers=2,
                                                       hosts=[net["master"], net["w0"], net["w1"]]))
        s3.client().put_object(Bucket=s3.bucket, Key="warm-up", Body=b"x")
        yield {"net": net, "s3": s3, "bootstrap": kafka, "cluster": cluster}


def test_a_worker_cut_off_from_the_broker_and_s3_mid_batch_has_its_task_run_again_and_every_change_counted_once(
        spark_hosts: dict[str, Any], tmp_path: Path) -> None:
    net, s3, cluster = spark_hosts["net"], spark_hosts["s3"], spark_hosts["cluster"]
    write_input(tmp_path / "in")
    warehouse, name = s3.url(f"spark-{uuid.uuid4().hex[:8]}"), "db.orders"
    options = {"log.system": "kafka", "kafka.bootstrap.servers": spark_hosts["bootstrap"], **s3.tablelog_options(),
               **QUICK_FAILURE, "log.flush-timeout-ms": "8000",
               # Key columns in the data files: pypaimon's Python writer (pyarrow, with the S3
               # timeouts), not pypaimon-rust's, which has no request timeout and waits out a
               # partition (docs/reliability.md)
               "data-file.thin-mode": "false"}
    marker = tmp_path / "paused-task.json"
    driver_host = net["driver"]
    config = {"master": cluster.master_url, "warehouse": warehouse, "table": name, "inputs": str(tmp_path / "in"),
              "checkpoint": str(tmp_path / "checkpoint"), "options": options, "read": None, "executors": False,
              "driver_host": driver_host.address,
              # Attempt 0 of partition 0 of micro-batch 1 produces its first rows, then sleeps.
              "testing": {"testing.pause-mid-write": "1:0:4", "testing.paused-task-file": str(marker)}}
    with open(tmp_path / "driver.log", "a") as log:
        driver = driver_host.start_python(
            DRIVER, config, stdout=subprocess.PIPE, stderr=log, text=True,
            env=spark_environment(tmp_path / "driver", {"SPARK_LOCAL_IP": driver_host.address,
                                                        "SPARK_LOCAL_HOSTNAME": driver_host.address}, log_level="error"))
    deadline = time.monotonic() + 240
    while not marker.exists():
        assert driver.poll() is None and time.monotonic() < deadline, (tmp_path / "driver.log").read_text()[-4000:]
        time.sleep(0.05)
    time.sleep(0.2)
    paused = json.loads(marker.read_text())
    victim = next(i for i in range(2) if paused["cwd"].startswith(f"{cluster.worker_dir(i)}/"))
    net.partition([net[f"w{victim}"]], [net["s3"], net["broker"]])
    time.sleep(CUT_S)
    net.heal()
    out, _ = driver.communicate(timeout=300)
    assert driver.returncode == 0, (tmp_path / "driver.log").read_text()[-4000:]
    assert json.loads(out.strip().splitlines()[-1])["written"]

    # The cut attempt failed on its host, in bounded time, naming what it could not reach
    # (the executor's log: the driver's is kept at errors only).
    executor_log = (Path(paused["cwd"]) / "stderr").read_text(errors="replace")
    assert re.search(r"Exception in task 0\.0 in stage", executor_log), executor_log[-3000:]
    assert any(why in executor_log for why in (
        "Timeout was reached",  # S3, after s3.max-attempts x (s3.connect-timeout + s3.request-timeout)
        f"not acknowledged by the Kafka brokers at {spark_hosts['bootstrap']}",  # after log.flush-timeout-ms
        f"cannot reach the Kafka brokers at {spark_hosts['bootstrap']}"))

    table = open_table(warehouse, name, options)
    # Every micro-batch committed the receipts of its two tasks: none from the cut attempt.
    assert [len(s.tokens()) for s in log_snapshots(table)] == [FILES_PER_BATCH] * BATCHES
    assert [s.commit_identifier for s in log_snapshots(table)] == list(range(1, BATCHES + 1))
    assert_committed_records(table, log_snapshots(table))
    assert table_rows(table) == expected_rows()
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        changes = Counter((c.kind.value, c.row["id"], c.row["name"]) for c in reader.read_all(idle_timeout_s=0.5))
    assert changes == expected_log()
    assert verify(table).consistent
