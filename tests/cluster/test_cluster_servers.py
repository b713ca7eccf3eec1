"""The cluster fixtures serve: S3 with conditional creates, a Spark Connect server. (That
the standalone cluster runs tasks in two executors of their own, one under each worker,
is checked by the driver-kill test of test_spark_cluster_exactly_once.py, which runs a
driver on it anyway.)"""

from __future__ import annotations

import uuid

import pytest
from botocore.exceptions import ClientError

from tablelog.testing.s3_server import S3Endpoint

pytestmark = pytest.mark.cluster


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


def test_a_spark_connect_session_runs_a_query(spark_connect_url: str) -> None:
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.remote(spark_connect_url).getOrCreate()
    try:
        assert spark.range(10).count() == 10
    finally:
        spark.stop()
