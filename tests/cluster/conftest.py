"""A real cluster on loopback for the cluster tests, started once per session and shared.

- ``s3_server`` (session): the S3 server every test directory shares (``tests/conftest.py``).
- ``spark_cluster`` (session): a :class:`~tablelog.testing.spark_cluster.StandaloneCluster`:
  a master and two workers (1 core, 1g each) as separate JVMs from the pyspark wheel, or
  the master ``TABLELOG_TEST_SPARK_MASTER`` names (``spark://host:7077``; then no JVM is
  ours to kill).
- ``connect`` (module): a Connect client session of that server, with tablelog registered.
- ``spark_connect_url`` (session): ``sc://127.0.0.1:PORT`` of a Spark Connect server from the
  pyspark wheel (``local[2]``: an application on the standalone cluster would hold every
  worker core that the tests' own applications need), or ``TABLELOG_TEST_SPARK_CONNECT``.

A missing binary or Java fails the tests; it never skips them. Every test here is marked
``cluster``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tablelog.spark.session import java_available
from tablelog.testing.spark_cluster import StandaloneCluster, spark_connect_server, spark_standalone

ENV_SPARK_MASTER = "TABLELOG_TEST_SPARK_MASTER"
ENV_SPARK_CONNECT = "TABLELOG_TEST_SPARK_CONNECT"

#: Seconds each fixture took to start, for the report at the end of the session.
STARTUP_SECONDS: dict[str, float] = {}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/cluster/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.cluster)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if STARTUP_SECONDS:
        started = ", ".join(f"{name} {seconds:.1f}s" for name, seconds in STARTUP_SECONDS.items())
        terminalreporter.write_line(f"cluster fixtures started in: {started}")


#: What a Spark Connect client sets in the process's environment (pyspark's builder sets
#: ``SPARK_CONNECT_MODE_ENABLED`` for good): left there, every later classic session of the
#: test process would try to be a Connect client.
_CONNECT_ENVIRONMENT = ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE", "SPARK_API_MODE")


@pytest.fixture(autouse=True)
def _classic_spark_after_each_test() -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in _CONNECT_ENVIRONMENT}
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def require_java() -> None:
    if java_available() is None:
        pytest.fail("the cluster tests need Java 17: no java on PATH or in JAVA_HOME", pytrace=False)


@pytest.fixture(scope="module")
def connect(spark_connect_url: str) -> Iterator[Any]:
    """One Connect client session for this module, with tablelog registered. PySpark's
    builder marks the whole process a Connect client in its environment: that is undone
    afterwards, or later classic sessions of the test process would be Connect clients too."""
    from pyspark.sql import SparkSession

    import tablelog.spark

    before = dict(os.environ)
    spark = SparkSession.builder.remote(spark_connect_url).create()
    try:
        tablelog.spark.register(spark)
        yield spark
    finally:
        spark.stop()
        for name in set(os.environ) - set(before):
            del os.environ[name]
        os.environ.update(before)


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    """TABLELOG_TEST_SPARK_MASTER, else a standalone master with two workers started for
    this session."""
    external = os.environ.get(ENV_SPARK_MASTER)
    if external:
        yield StandaloneCluster(master_url=external)
        return
    require_java()
    started = time.monotonic()
    with spark_standalone(tmp_path_factory.mktemp("spark-standalone"), workers=2) as cluster:
        STARTUP_SECONDS["spark standalone (master + 2 workers)"] = time.monotonic() - started
        yield cluster


@pytest.fixture(scope="session")
def spark_connect_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """TABLELOG_TEST_SPARK_CONNECT, else a Spark Connect server started for this session."""
    external = os.environ.get(ENV_SPARK_CONNECT)
    if external:
        yield external
        return
    require_java()
    started = time.monotonic()
    with spark_connect_server(tmp_path_factory.mktemp("spark-connect")) as url:
        STARTUP_SECONDS["spark connect server (port open)"] = time.monotonic() - started
        yield url
