"""Quick throughput check of the pulsar log system against the raw pulsar-client.

    /work/venv/bin/python bench/pulsar_quick.py [N]

Starts a pulsar-lite broker (or uses TABLELOG_TEST_PULSAR_URL), then measures on
the same pre-encoded 80-byte values: producing through the plugin (produce +
flush) vs a raw batching producer (send_async + flush), and fetching through the
plugin vs a raw reader. Not part of the test suite.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pulsar

from tablelog.logs.discovery import load_log_system
from tablelog.records import LogConfig, ProduceBatch


def start_broker(data_dir: Path) -> tuple[subprocess.Popen[bytes], str]:
    spec = importlib.util.find_spec("pulsar_lite")
    assert spec is not None and spec.submodule_search_locations, "pip install pulsar-lite"
    binary = Path(list(spec.submodule_search_locations)[0]) / "bin" / "pulsar-lite"
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = data_dir / "pulsar-lite.toml"
    config.write_text("default_partitions = 0\n\n[metrics]\nenabled = false\n")
    process = subprocess.Popen(
        [str(binary), "--config", str(config), "--addr", f"127.0.0.1:{port}", "--db-path", str(data_dir / "db")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "RUST_LOG": "warn"},
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return process, f"pulsar://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise SystemExit("pulsar-lite did not start")


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    values = [(b"%08d" % i).ljust(80, b"x") for i in range(n)]
    keys: list[bytes | None] = [b"%d" % (i % 1000) for i in range(n)]
    process = None
    url = os.environ.get("TABLELOG_TEST_PULSAR_URL")
    tmp = tempfile.TemporaryDirectory()
    if not url:
        process, url = start_broker(Path(tmp.name))
    try:
        client = pulsar.Client(url, operation_timeout_seconds=30)
        # raw producer, batching, same settings as the plugin's defaults
        raw_topic = f"persistent://public/default/bench-raw-{uuid.uuid4().hex[:8]}"
        producer = client.create_producer(raw_topic, batching_enabled=True, batching_max_messages=1000,
                                          batching_max_publish_delay_ms=10, max_pending_messages=10000,
                                          block_if_queue_full=True)
        acked = [0]
        last_id: list[object] = [None]

        def on_ack(result: object, message_id: object) -> None:
            acked[0] += 1
            last_id[0] = message_id

        began = time.perf_counter()
        for key, value in zip(keys, values, strict=True):
            producer.send_async(value, on_ack, partition_key=key.decode() if key else None)
        producer.flush()
        raw_produce = n / (time.perf_counter() - began)
        assert acked[0] == n

        reader = client.create_reader(raw_topic, pulsar.MessageId.earliest, receiver_queue_size=1000)
        # pulsar-lite re-sends entries now and then: read until the last id, count re-reads.
        last = last_id[0]
        last_key = (last.ledger_id(), last.entry_id(), last.batch_index())  # type: ignore[attr-defined]
        reads = 0
        began = time.perf_counter()
        while True:
            message = reader.read_next(10_000)
            message.data()
            reads += 1
            mid = message.message_id()
            if (mid.ledger_id(), mid.entry_id(), mid.batch_index()) == last_key:
                break
        raw_fetch = n / (time.perf_counter() - began)
        reader.close()
        producer.close()

        system = load_log_system("pulsar")
        config = LogConfig(system="pulsar", table="bench.t", topic=f"bench-plugin-{uuid.uuid4().hex[:8]}",
                           partitions=1, auto_register=True, options={"service-url": url})
        with system.open(config) as log:
            log.ensure_topic()
            began = time.perf_counter()
            step = 10_000
            for start in range(0, n, step):
                log.produce(ProduceBatch("bench-token", 0, keys[start:start + step], values[start:start + step],
                                         int(time.time() * 1000), first_seq=start))
            (produced,) = log.flush(120)
            plugin_produce = n / (time.perf_counter() - began)
            assert produced.count == n

        with system.open(config) as log:
            began = time.perf_counter()
            position, got = 0, 0
            while got < n:
                result = log.fetch(0, position, 10_000, 10)
                got += len(result.records)
                position = result.next_position
            plugin_fetch = n / (time.perf_counter() - began)
        client.close()
    finally:
        if process is not None:
            process.terminate()
            process.wait(timeout=10)
        tmp.cleanup()
    print(f"records: {n} x 80 bytes, 1 partition")
    print(f"produce  raw pulsar-client: {raw_produce:>10,.0f} rec/s   plugin: {plugin_produce:>10,.0f} rec/s"
          f"   ratio {plugin_produce / raw_produce:.2f}")
    print(f"raw reader read {reads} messages for {n} records (broker redeliveries)")
    print(f"fetch    raw reader:        {raw_fetch:>10,.0f} rec/s   plugin: {plugin_fetch:>10,.0f} rec/s"
          f"   ratio {plugin_fetch / raw_fetch:.2f}")


if __name__ == "__main__":
    main()
