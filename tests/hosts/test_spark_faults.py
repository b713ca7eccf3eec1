"""The Spark sink on a standalone cluster whose master, workers and driver are separate
hosts, the S3 server and the broker two more (:mod:`.spark_on_hosts`, one cluster for the
module): a worker cut off from the broker or S3, or frozen (SIGSTOP, its executor with it)
and resumed, while one of its tasks is between producing and ``finish()``, and the driver
cut off from its cluster in the middle of a micro-batch. Spark runs tasks again, or a
restarted driver goes on from the checkpoint; every change is counted on both sides,
every iteration.

``TABLELOG_FAULT_ITERATIONS`` (default 20) and ``TABLELOG_FAULT_SEED`` (default 0)
choose how many random iterations and which."""

from __future__ import annotations

import os
import random
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tablelog.testing.spark_inputs import BATCHES, FILES_PER_BATCH

from .spark_on_hosts import SparkHosts, StreamingWrite, assert_each_change_counted_once, spark_hosts

# In `tox -e faults`: CI's time budget keeps Spark's exactly-once under a killed worker on the
# loopback cluster (tests/cluster), and the committer and reader scenarios across hosts.
# An iteration whose driver is orphaned runs a second driver: past the suite's 300 s.
pytestmark = [pytest.mark.spark, pytest.mark.kafka, pytest.mark.faults, pytest.mark.timeout(600)]

ITERATIONS = int(os.environ.get("TABLELOG_FAULT_ITERATIONS", "20"))
SEED = int(os.environ.get("TABLELOG_FAULT_SEED", "0"))
#: How long the cut worker stays cut off after its task wakes, in the test that checks how
#: its attempt fails: past the task's timeouts (QUICK_FAILURE's on S3, the log's flush timeout).
CUT_S = 15.0
#: The driver's side of Spark's failure detection in the driver scenario: an executor not
#: heard from for spark.network.timeout is lost, and its tasks run again elsewhere.
QUICK_DETECTION = {"spark.network.timeout": "10s", "spark.network.timeoutInterval": "2s",
                   "spark.executor.heartbeatInterval": "1s"}


@pytest.fixture(scope="module")
def cluster_of_hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkHosts]:
    with spark_hosts(tmp_path_factory.mktemp("spark-hosts")) as hosts:
        yield hosts


@pytest.fixture
def write(cluster_of_hosts: SparkHosts, tmp_path: Path) -> Iterator[StreamingWrite]:
    """A new streaming write on the module's cluster; afterwards its drivers are gone and
    the network healed."""
    write = cluster_of_hosts.new_write(tmp_path)
    yield write
    cluster_of_hosts.net.heal()
    write.stop()


def pause_mid_write(marker: Path, batch: int, partition: int, seconds: float) -> dict[str, str]:
    """The ``testing.*`` options that make attempt 0 of ``partition`` in micro-batch
    ``batch`` sleep ``seconds`` after producing its first rows, and say where it runs."""
    return {"testing.pause-mid-write": f"{batch}:{partition}:{seconds:g}", "testing.paused-task-file": str(marker)}


def random_pause(rng: random.Random, marker: Path) -> tuple[dict[str, str], str]:
    """:func:`pause_mid_write` of a task drawn from ``rng``, and what was drawn."""
    batch, partition, pause_s = rng.randrange(BATCHES), rng.randrange(FILES_PER_BATCH), rng.uniform(0.5, 4.0)
    return pause_mid_write(marker, batch, partition, pause_s), \
        f"batch {batch} partition {partition} paused {pause_s:.1f} s"


def victim_worker(write: StreamingWrite, paused: dict[str, str]) -> str:
    cluster = write.hosts.cluster
    return next(f"w{i}" for i in range(2) if paused["cwd"].startswith(f"{cluster.worker_dir(i)}/"))


def test_a_worker_cut_off_from_the_broker_and_s3_mid_batch_has_its_task_fail_in_bounded_time_and_run_again(
        write: StreamingWrite, tmp_path: Path) -> None:
    net, bootstrap = write.hosts.net, write.hosts.bootstrap
    marker = tmp_path / "paused-task.json"
    driver = write.start_driver(pause_mid_write(marker, 1, 0, 4))
    paused = write.wait_for(marker)
    net.partition([net[victim_worker(write, paused)]], [net["s3"], net["broker"]])
    time.sleep(CUT_S)
    net.heal()
    assert write.finish(driver) == 0, write.driver_log.read_text()[-4000:]

    # The cut attempt failed on its host, in bounded time, naming what it could not reach
    # (the executor's log: the driver's is kept at errors only).
    executor_log = (Path(paused["cwd"]) / "stderr").read_text(errors="replace")
    assert re.search(r"Exception in task 0\.0 in stage", executor_log), executor_log[-3000:]
    assert any(why in executor_log for why in (
        "Timeout was reached",  # S3, after s3.max-attempts x (s3.connect-timeout + s3.request-timeout)
        f"not acknowledged by the Kafka brokers at {bootstrap}",  # after log.flush-timeout-ms
        f"cannot reach the Kafka brokers at {bootstrap}"))
    assert_each_change_counted_once(write)


@pytest.mark.parametrize("iteration", range(ITERATIONS))
def test_a_worker_cut_off_at_a_random_point_of_a_micro_batch_has_every_change_counted_once(
        write: StreamingWrite, tmp_path: Path, iteration: int, record_property: pytest.RecordProperty) -> None:
    rng = random.Random(SEED * 1_000 + iteration)
    marker = tmp_path / "paused-task.json"
    testing, paused = random_pause(rng, marker)
    cut_from, cut_s = rng.choice(["s3", "broker", "s3+broker"]), rng.uniform(1.0, 15.0)
    net = write.hosts.net
    driver = write.start_driver(testing)
    worker = victim_worker(write, write.wait_for(marker))
    record_property("fault", f"{worker} ({paused}) cut from {cut_from} for {cut_s:.1f} s")
    net.partition([net[worker]], [net[name] for name in cut_from.split("+")])
    time.sleep(cut_s)
    net.heal()
    assert write.finish(driver) == 0, write.driver_log.read_text()[-4000:]
    assert_each_change_counted_once(write)


@pytest.mark.parametrize("iteration", range(ITERATIONS))
def test_a_driver_cut_off_from_its_cluster_mid_batch_commits_every_change_once_then_or_after_a_restart(
        write: StreamingWrite, tmp_path: Path, iteration: int, record_property: pytest.RecordProperty) -> None:
    rng = random.Random(SEED * 1_000 + iteration)
    marker = tmp_path / "paused-task.json"
    testing, paused = random_pause(rng, marker)
    cut_s = rng.uniform(2.0, 20.0)  # both sides of spark.network.timeout
    net = write.hosts.net
    driver = write.start_driver(testing, QUICK_DETECTION)
    write.wait_for(marker)
    net.partition([net["driver"]], [net["master"], net["w0"], net["w1"]])
    time.sleep(cut_s)
    net.heal()
    outcome = write.finish_unless_orphaned(driver)
    if outcome != "finished":  # as a supervisor would: a new driver goes on from the checkpoint
        assert write.finish(write.start_driver(spark_conf=QUICK_DETECTION)) == 0, \
            write.driver_log.read_text()[-4000:]
    print(f"iteration {iteration}: {outcome}")
    record_property("fault", f"driver cut from the master and workers for {cut_s:.1f} s ({paused}): {outcome}"
                             + ("" if outcome == "finished" else ", and a restarted driver finished"))
    assert_each_change_counted_once(write)


@pytest.mark.parametrize("iteration", range(ITERATIONS))
def test_a_worker_frozen_at_a_random_point_of_a_micro_batch_and_resumed_has_every_change_counted_once(
        write: StreamingWrite, tmp_path: Path, iteration: int, record_property: pytest.RecordProperty) -> None:
    rng = random.Random(f"frozen worker {SEED} {iteration}")
    marker = tmp_path / "paused-task.json"
    testing, paused = random_pause(rng, marker)
    frozen_s = rng.uniform(2.0, 20.0)  # both sides of spark.network.timeout
    net = write.hosts.net
    driver = write.start_driver(testing, QUICK_DETECTION)
    worker = net[victim_worker(write, write.wait_for(marker))]
    record_property("fault", f"{worker.name} ({paused}) frozen for {frozen_s:.1f} s")
    worker.pause()  # the worker and its executor, as a frozen VM: sockets open, state kept
    try:
        time.sleep(frozen_s)
    finally:
        worker.resume()
    assert write.finish(driver) == 0, write.driver_log.read_text()[-4000:]
    lost = "Lost executor" in write.driver_log.read_text()  # past spark.network.timeout: its task ran elsewhere
    print(f"iteration {iteration}: {'executor lost' if lost else 'carried on'}")
    record_property("outcome", "executor lost, its task ran again" if lost else "the task carried on")
    assert_each_change_counted_once(write)
