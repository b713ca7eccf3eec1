"""Brokers of the reliability tests' own, which the tests pause, kill, restart and cut off.

The broker helpers come from ``tests/kafka/conftest.py`` and
``tests/pulsar/conftest.py`` (imported by path: conftest fixtures of sibling
directories are not visible here). Every fixture here starts a dedicated
process, never the session brokers other tests share, and stops it at the end.

* ``tansu_factory(storage=..., advertised_port=...)`` -> :class:`TansuBroker`
  (memory storage by default; ``advertised_port`` makes it advertise another
  port, e.g. a proxy's);
* ``s3_storage`` -> an ``s3://BUCKET/`` URL plus env on a local ``moto_server``
  (durable storage: records survive a broker kill);
* ``pulsar_broker`` -> a ``PulsarBroker`` on its own data directory;
* ``tcp_proxy_factory(upstream_port)`` -> a :class:`proxy.TcpProxy`.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tablelog.testing.processes import die_with_parent, free_port
from tablelog.testing.pulsar_server import PulsarBroker, pulsar_lite_binary

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # `import proxy`, `import helpers` from the test modules

from tablelog.testing.fault_proxy import TcpProxy  # noqa: E402


def _load(name: str, path: Path) -> ModuleType:
    """Import a sibling directory's conftest under a unique module name."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


kafka_helpers = _load("tablelog_tests_kafka_conftest", HERE.parent / "kafka" / "conftest.py")



class TansuBroker:
    """One Tansu process on a fixed port; kill/start keeps port and storage, so a
    broker on ``s3://`` storage comes back with its records."""

    def __init__(self, workdir: Path, storage: str = "memory://tansu/", env: dict[str, str] | None = None,
                 advertised_port: int | None = None):
        self.binary = kafka_helpers.tansu_binary()
        self.workdir = workdir
        self.storage = storage
        self.env = env or {}
        self.port = free_port()
        self.advertised_port = advertised_port or self.port
        self.log_path = workdir / "tansu.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        """The address clients are given (the advertised one)."""
        return f"127.0.0.1:{self.advertised_port}"

    def start(self, timeout_s: float = 30.0) -> None:
        assert self.process is None or self.process.poll() is not None, "already running"
        listener = f"tcp://127.0.0.1:{self.port}"
        advertised = f"tcp://127.0.0.1:{self.advertised_port}"
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [str(self.binary), "broker", "--listener-url", listener,
                 "--advertised-listener-url", advertised, "--storage-engine", self.storage],
                cwd=self.workdir, stdout=log, stderr=subprocess.STDOUT,
                env={**os.environ, **self.env},
                preexec_fn=die_with_parent,
            )
        # Ask the broker itself (the advertised address may be a proxy not up yet).
        kafka_helpers.wait_until_answers(f"127.0.0.1:{self.port}", timeout_s, self.process, self.log_path)

    def pause(self) -> None:
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGCONT)

    def kill(self) -> None:
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            os.kill(process.pid, signal.SIGCONT)  # a stopped process dies as well, but be sure
            process.kill()
            process.wait(timeout=10)

    def restart(self) -> None:
        self.kill()
        self.start()

    def log_tail(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-3000:]
        except OSError:
            return "(no log)"


@pytest.fixture
def tansu_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., TansuBroker]]:
    brokers: list[TansuBroker] = []

    def start(storage: str = "memory://tansu/", env: dict[str, str] | None = None,
              advertised_port: int | None = None) -> TansuBroker:
        broker = TansuBroker(tmp_path_factory.mktemp("tansu"), storage, env, advertised_port)
        brokers.append(broker)
        broker.start()
        return broker

    yield start
    for broker in brokers:
        broker.kill()


@pytest.fixture
def tansu(tansu_factory: Callable[..., TansuBroker]) -> TansuBroker:
    """A dedicated Tansu broker on memory storage."""
    return tansu_factory()


class S3Storage:
    """A local S3 server (moto_server) with one bucket, for Tansu's s3:// storage engine."""

    def __init__(self, workdir: Path):
        moto = Path(sys.executable).parent / "moto_server"
        if not moto.exists():
            pytest.fail('moto_server is missing: pip install "moto[server]" (it is in the test extra)',
                        pytrace=False)
        self.port = free_port()
        self.bucket = f"tansu-{uuid.uuid4().hex[:8]}"
        self.log_path = workdir / "moto.log"
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                [str(moto), "-H", "127.0.0.1", "-p", str(self.port)],
                cwd=workdir, stdout=log, stderr=subprocess.STDOUT,
                preexec_fn=die_with_parent,
            )
        self.env = {
            "AWS_ENDPOINT": f"http://127.0.0.1:{self.port}",
            "AWS_ALLOW_HTTP": "true",
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
            "AWS_DEFAULT_REGION": "eu-west-1",
        }
        self._create_bucket()

    @property
    def url(self) -> str:
        return f"s3://{self.bucket}/"

    def _create_bucket(self) -> None:
        import boto3

        client = boto3.client(
            "s3", endpoint_url=self.env["AWS_ENDPOINT"], region_name=self.env["AWS_DEFAULT_REGION"],
            aws_access_key_id="test", aws_secret_access_key="test",
        )
        deadline = time.monotonic() + 30
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"moto_server exited: {self.log_path.read_text(errors='replace')[-2000:]}")
            try:
                client.create_bucket(
                    Bucket=self.bucket,
                    CreateBucketConfiguration={"LocationConstraint": self.env["AWS_DEFAULT_REGION"]},
                )
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)


@pytest.fixture
def s3_storage(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Storage]:
    storage = S3Storage(tmp_path_factory.mktemp("moto"))
    yield storage
    storage.stop()


@pytest.fixture
def durable_tansu(tansu_factory: Callable[..., TansuBroker], s3_storage: S3Storage) -> TansuBroker:
    """A dedicated Tansu broker on s3:// storage: it may be killed and restarted with its data."""
    return tansu_factory(storage=s3_storage.url, env=s3_storage.env)


@pytest.fixture
def tcp_proxy_factory() -> Iterator[Callable[..., TcpProxy]]:
    proxies: list[TcpProxy] = []

    def make(upstream_port: int, port: int | None = None) -> TcpProxy:
        proxy = TcpProxy(upstream_port, port)
        proxies.append(proxy)
        return proxy

    yield make
    for proxy in proxies:
        proxy.close()


@pytest.fixture
def proxied_tansu(tansu_factory: Callable[..., TansuBroker],
                  tcp_proxy_factory: Callable[..., TcpProxy]) -> tuple[TansuBroker, TcpProxy]:
    """A Tansu broker that advertises a proxy's address: every client connection
    (bootstrap and the ones learnt from metadata) goes through the proxy."""
    proxy_port = free_port()
    broker = tansu_factory(advertised_port=proxy_port)
    proxy = tcp_proxy_factory(broker.port, proxy_port)
    return broker, proxy


@pytest.fixture
def pulsar_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A pulsar-lite broker of this test's own (restartable on its data directory)."""
    broker = PulsarBroker(pulsar_lite_binary(), tmp_path_factory.mktemp("pulsar-lite"))
    broker.start()
    yield broker
    broker.stop()
