"""Separate hosts (network namespaces on a private bridge, :mod:`tablelog.testing.hosts`)
and the servers tests run on them. Every test here needs root and iproute2: without them
it fails with what to install (``check_capabilities``), it is never skipped.

``hosts``: ``hosts("a", "b", ...)`` makes a network of those hosts for one test.
``cluster`` (module): hosts ``s3`` (SeaweedFS), ``broker`` (Tansu) and ``a``, ``b`` for
the committers, readers and drivers a test starts; each test starts healed, with every
host's processes but the servers' gone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import attrs
import pytest

from tablelog.testing.hosts import Network
from tablelog.testing.kafka_server import tansu_broker
from tablelog.testing.s3_server import S3Endpoint, seaweedfs


@pytest.fixture
def hosts() -> Iterator[Callable[..., Network]]:
    """``hosts("a", "b", ...)``: a network of those hosts, removed at the end of the test
    (also when it fails)."""
    made: list[Network] = []

    def make(*names: str) -> Network:
        made.append(Network(names))
        return made[-1]

    yield make
    for network in made:
        network.close()


@attrs.frozen
class Cluster:
    network: Network
    s3: S3Endpoint  # on host "s3", at its address
    bootstrap: str  # the broker on host "broker"


@pytest.fixture(scope="module")
def cluster_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Network(["s3", "broker", "a", "b"]) as network:
        s3_host, broker = network["s3"], network["broker"]
        with seaweedfs(tmp_path_factory.mktemp("s3"), address=s3_host.address, launch=s3_host.popen) as s3, \
                tansu_broker(tmp_path_factory.mktemp("tansu"), address=broker.address, launch=broker.popen) as bootstrap:
            # SeaweedFS makes its volumes at the first write, which takes seconds: not in a test's timeouts
            s3.client().put_object(Bucket=s3.bucket, Key="warm-up", Body=b"x")
            yield Cluster(network, s3, bootstrap)


@pytest.fixture
def cluster(cluster_servers: Cluster) -> Iterator[Cluster]:
    yield cluster_servers
    network = cluster_servers.network
    network.heal()
    for name in ("a", "b"):
        network[name].resume()
        network[name].kill()
    for name in ("s3", "broker"):
        network[name].resume()
        network[name].link_up()


DRIVERS = Path(__file__).parent / "drivers"
