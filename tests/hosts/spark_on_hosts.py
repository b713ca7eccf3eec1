"""A Spark standalone cluster whose master, workers and driver are separate hosts, with
the S3 server and the broker on two more (:func:`spark_hosts`); a streaming write's driver
started on its host (:meth:`SparkHosts.start_driver`) and what it wrote counted on both
sides (:func:`assert_each_change_counted_once`)."""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs

from tablelog.tables import open_table
from tablelog.testing.hosts import Network
from tablelog.testing.kafka_server import tansu_broker
from tablelog.testing.s3_server import S3Endpoint, seaweedfs
from tablelog.testing.spark_cluster import StandaloneCluster, spark_environment, spark_standalone
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

DRIVER = Path(__file__).parents[1] / "cluster" / "drivers" / "streaming_pipeline.py"


@attrs.frozen
class SparkHosts:
    net: Network  # hosts s3, broker, master, w0, w1, driver
    s3: S3Endpoint
    bootstrap: str
    cluster: StandaloneCluster
    inputs: Path

    def new_write(self, workdir: Path) -> StreamingWrite:
        """A streaming write of the scenarios' input into a new table (its own warehouse
        and topic), its checkpoint and logs in ``workdir``."""
        workdir.mkdir(parents=True, exist_ok=True)
        token = uuid.uuid4().hex[:8]
        options = {"log.system": "kafka", "kafka.bootstrap.servers": self.bootstrap, "kafka.topic": f"orders-{token}",
                   **self.s3.tablelog_options(), **QUICK_FAILURE, "log.flush-timeout-ms": "8000",
                   # Key columns in the data files: pypaimon's Python writer (pyarrow, with the
                   # S3 timeouts), not pypaimon-rust's, which has no request timeout and waits
                   # out a partition (docs/reliability.md)
                   "data-file.thin-mode": "false"}
        return StreamingWrite(self, self.s3.url(f"spark-{token}"), "db.orders", options, workdir)


@attrs.define
class StreamingWrite:
    hosts: SparkHosts
    warehouse: str
    table: str
    options: dict[str, str]
    workdir: Path
    drivers: list[subprocess.Popen[str]] = attrs.field(factory=list)

    @property
    def driver_log(self) -> Path:
        return self.workdir / "driver.log"

    def start_driver(self, testing: Mapping[str, str] | None = None,
                     spark_conf: Mapping[str, str] | None = None) -> subprocess.Popen[str]:
        """The driver, on host ``driver``, streaming the input into the table from the
        checkpoint (a second driver goes on where the first stopped)."""
        host = self.hosts.net["driver"]
        config = {"master": self.hosts.cluster.master_url, "warehouse": self.warehouse, "table": self.table,
                  "inputs": str(self.hosts.inputs), "checkpoint": str(self.workdir / "checkpoint"),
                  "options": self.options, "read": None, "executors": False, "driver_host": host.address,
                  "testing": dict(testing or {}), "spark_conf": dict(spark_conf or {})}
        env = spark_environment(self.workdir / f"driver-{len(self.drivers)}",
                                {"SPARK_LOCAL_IP": host.address, "SPARK_LOCAL_HOSTNAME": host.address},
                                log_level="error")
        with open(self.driver_log, "a") as log:
            self.drivers.append(host.start_python(DRIVER, config, stdout=subprocess.PIPE, stderr=log, text=True,
                                                  env=env))
        return self.drivers[-1]

    def wait_for(self, marker: Path, timeout_s: float = 240) -> dict[str, Any]:
        """What the paused task wrote to ``marker`` (``testing.paused-task-file``)."""
        deadline = time.monotonic() + timeout_s
        driver = self.drivers[-1]
        while not marker.exists():
            assert driver.poll() is None and time.monotonic() < deadline, self.driver_log.read_text()[-4000:]
            time.sleep(0.05)
        time.sleep(0.2)
        return json.loads(marker.read_text())  # type: ignore[no-any-return]

    def finish(self, driver: subprocess.Popen[str], timeout_s: float = 300) -> int:
        """The driver's exit code once it ended; one that did not end in time is killed
        and fails the test."""
        try:
            driver.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            driver.kill()
            driver.communicate()
            raise AssertionError(f"the driver did not end in {timeout_s:g} s: "
                                 f"{self.driver_log.read_text()[-4000:]}") from None
        return driver.returncode

    def finish_unless_orphaned(self, driver: subprocess.Popen[str], timeout_s: float = 300) -> str:
        """``"finished"``, ``"failed"``, or ``"orphaned"``: the master removed the driver's
        application (it lost the driver), which the driver is never told of and waits for
        executors forever, so it is killed, as a supervisor would."""
        deadline = time.monotonic() + timeout_s
        seen_without_app = 0
        while driver.poll() is None:
            assert time.monotonic() < deadline, f"the driver did not end in {timeout_s:g} s: " \
                                                f"{self.driver_log.read_text()[-4000:]}"
            seen_without_app = 0 if self.hosts.cluster.status()["activeapps"] else seen_without_app + 1
            if seen_without_app >= 3:
                driver.kill()
                driver.communicate()
                return "orphaned"
            time.sleep(1.0)
        driver.communicate()
        return "finished" if driver.returncode == 0 else "failed"

    def stop(self) -> None:
        for driver in self.drivers:
            if driver.poll() is None:
                driver.kill()
                driver.communicate()


def assert_each_change_counted_once(write: StreamingWrite) -> None:
    """Every micro-batch committed once, with the receipts of its tasks' successful
    attempts only; the table holds the expected rows; a transactional reader reads each
    change once; verify finds the table and the log consistent."""
    table = open_table(write.warehouse, write.table, write.options)
    assert [len(s.tokens()) for s in log_snapshots(table)] == [FILES_PER_BATCH] * BATCHES
    assert [s.commit_identifier for s in log_snapshots(table)] == list(range(1, BATCHES + 1))
    assert_committed_records(table, log_snapshots(table))
    assert table_rows(table) == expected_rows()
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        changes = Counter((c.kind.value, c.row["id"], c.row["name"]) for c in reader.read_all(idle_timeout_s=0.5))
    assert changes == expected_log()
    assert verify(table).consistent


@contextlib.contextmanager
def spark_hosts(workdir: Path) -> Iterator[SparkHosts]:
    (workdir / "tansu").mkdir(parents=True)
    with contextlib.ExitStack() as stack:
        net = stack.enter_context(Network(["s3", "broker", "master", "w0", "w1", "driver"]))
        s3 = stack.enter_context(seaweedfs(workdir / "s3", address=net["s3"].address, launch=net["s3"].popen))
        bootstrap = stack.enter_context(tansu_broker(workdir / "tansu", address=net["broker"].address,
                                                     launch=net["broker"].popen))
        cluster = stack.enter_context(spark_standalone(workdir / "spark", workers=2,
                                                       hosts=[net["master"], net["w0"], net["w1"]]))
        s3.client().put_object(Bucket=s3.bucket, Key="warm-up", Body=b"x")
        yield SparkHosts(net, s3, bootstrap, cluster, write_input(workdir / "in"))
