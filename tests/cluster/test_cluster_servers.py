"""The cluster fixtures serve: S3 with conditional creates, a standalone Spark cluster whose
tasks run in two executors of their own, a Spark Connect server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from tablelog.testing.s3_server import S3Endpoint
from tablelog.testing.spark_cluster import StandaloneCluster, spark_environment

pytestmark = pytest.mark.cluster

DRIVERS = Path(__file__).parent / "drivers"


def test_the_s3_server_stores_objects_and_refuses_a_second_conditional_create(s3_server: S3Endpoint) -> None:
    client = s3_server.client()
    key = f"smoke/{uuid.uuid4().hex}"
    client.put_object(Bucket=s3_server.bucket, Key=f"{key}/plain", Body=b"hello")
    assert client.get_object(Bucket=s3_server.bucket, Key=f"{key}/plain")["Body"].read() == b"hello"

    client.put_object(Bucket=s3_server.bucket, Key=f"{key}/once", Body=b"first", IfNoneMatch="*")
    with pytest.raises(ClientError) as refused:
        client.put_object(Bucket=s3_server.bucket, Key=f"{key}/once", Body=b"second", IfNoneMatch="*")
    assert refused.value.response["Error"]["Code"] == "PreconditionFailed"
    assert client.get_object(Bucket=s3_server.bucket, Key=f"{key}/once")["Body"].read() == b"first"


def test_a_job_on_the_standalone_cluster_runs_in_two_executor_processes(
        spark_cluster: StandaloneCluster, tmp_path: Path) -> None:
    # The driver is a process of its own, as spark-submit's would be: a test process may
    # already hold a local SparkContext, and there is one per process.
    driver = subprocess.run(
        [sys.executable, str(DRIVERS / "executor_pids.py"), spark_cluster.master_url, "8"],
        env=spark_environment(tmp_path, log_level="error"), capture_output=True, text=True, timeout=240,
    )
    assert driver.returncode == 0, driver.stderr[-3000:]
    tasks = json.loads(driver.stdout.strip().splitlines()[-1])

    assert sorted(t["partition"] for t in tasks) == list(range(8))
    executors = {t["executor_pid"] for t in tasks}
    assert len(executors) == 2, tasks
    assert len({t["executor_dir"] for t in tasks}) == 2, tasks
    assert os.getpid() not in executors
    if spark_cluster.workers:  # started here: each executor is a child of its own worker's dir
        assert {Path(t["executor_dir"]).parent.parent.name for t in tasks} == {"worker-0", "worker-1"}


def test_a_spark_connect_session_runs_a_query(spark_connect_url: str) -> None:
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.remote(spark_connect_url).getOrCreate()
    try:
        assert spark.range(10).count() == 10
    finally:
        spark.stop()
