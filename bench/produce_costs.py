"""What one record costs raw confluent-kafka, by call form: ``python -m bench.produce_costs [N] [ROUNDS]``.

The bounds in docs/performance.md: each variant produces the same N pre-encoded
100-byte values to a fresh 4-partition topic of the benchmarks' Tansu with the
plugin's producer settings, warm (started, a first record acknowledged). Printed per
record: wall time, this process's CPU (the Python loop and librdkafka's threads) and
the broker's CPU (nan against an external cluster).

* ``plain``        ``produce(topic, value, key, partition)``
* ``1 header``     plus the timestamp and one header
* ``2 headers``    plus tablelog's two headers (token, sequence number): what the plugin sends
* ``2 headers, no compression``  the same with ``compression.type=none`` (the plugin: lz4)
* ``produce_batch`` confluent-kafka's batch call (no headers: it takes none), dicts built per record
"""

from __future__ import annotations

import sys
import time
from typing import Any

import psutil
from confluent_kafka import Producer

from bench import brokers
from bench.throughput import KafkaRaw

TOKEN = b"0123456789abcdef"
STAMP = 1_795_322_444_169


def _loop(producer: Producer, topic: str, variant: str, keys: list[bytes], values: list[bytes]) -> None:
    produce = producer.produce
    n = len(values)
    if variant == "produce_batch":
        for part in range(4):
            messages = [{"value": values[i], "key": keys[i]} for i in range(part, n, 4)]
            for start in range(0, len(messages), 10_000):
                chunk = messages[start:start + 10_000]
                while chunk:
                    try:
                        sent = producer.produce_batch(topic, chunk, partition=part)
                    except BufferError:
                        sent = 0
                    if sent < len(chunk):
                        chunk = [m for m in chunk if m.pop("_error", None) is not None] or chunk[sent:]
                        producer.poll(0.05)
                    else:
                        chunk = []
        return
    i = 0
    while i < n:
        try:
            if variant == "plain":
                while i < n:
                    produce(topic, values[i], keys[i], i & 3)
                    i += 1
            elif variant == "1 header":
                while i < n:
                    produce(topic, values[i], keys[i], i & 3, None, None, STAMP, [("tablelog", b"%s%d" % (TOKEN, i))])
                    i += 1
            else:
                th = ("tablelog.token", TOKEN)
                while i < n:
                    produce(topic, values[i], keys[i], i & 3, None, None, STAMP, [th, ("tablelog.seq", b"%d" % i)])
                    i += 1
        except BufferError:
            producer.poll(0.05)


def _cpu_s(process: psutil.Process | None) -> float:
    return sum(process.cpu_times()[:2]) if process is not None else float("nan")


def measure(raw: KafkaRaw, broker: psutil.Process | None, variant: str, keys: list[bytes],
            values: list[bytes]) -> dict[str, float]:
    config: dict[str, Any] = raw.settings.producer_config()
    if variant.endswith("no compression"):
        config["compression.type"] = "none"
    topic = raw.new_topic(4)
    producer = Producer(config)
    producer.list_topics(timeout=30)
    producer.produce(topic, b"warm-up", None, 0)
    assert producer.flush(30) == 0
    broker_cpu = _cpu_s(broker)
    cpu = time.process_time()
    began = time.perf_counter()
    _loop(producer, topic, variant, keys, values)
    assert producer.flush(60) == 0
    n = len(values)
    return {
        "wall": (time.perf_counter() - began) / n * 1e6,
        "cpu": (time.process_time() - cpu) / n * 1e6,
        "broker": (_cpu_s(broker) - broker_cpu) / n * 1e6,
    }


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 150_000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    values = [b'{"before":null,"after":{"id":%d,"seq":%d,"payload":"xxxxxxxxxx"},"op":"c","ts_ms":%d}'
              % (1_000_000 + i, i, STAMP) for i in range(n)]
    keys = [b'{"id":%d}' % (1_000_000 + i) for i in range(n)]
    variants = ("plain", "1 header", "2 headers", "2 headers, no compression", "produce_batch")
    with brokers.kafka() as address:
        raw = KafkaRaw(address)
        pid = brokers.kafka_broker_pid(address)
        broker = psutil.Process(pid) if pid is not None else None  # an external cluster: not measured
        for round_ in range(rounds):
            for variant in variants[round_ % len(variants):] + variants[:round_ % len(variants)]:
                us = measure(raw, broker, variant, keys, values)
                print(f"round {round_ + 1} {variant:<27} µs/record: wall {us['wall']:.2f}  "
                      f"cpu {us['cpu']:.2f}  broker cpu {us['broker']:.2f}", flush=True)


if __name__ == "__main__":
    main()
