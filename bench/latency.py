"""Latency: how soon a change is visible to a reader in another process.

* eventual: the writer puts its wall-clock time (µs) into each row just before
  ``writer.write([row])`` (one row per call, the log client's own batching
  settings); a reader in a separate process (``consistency="eventual"``,
  ``scan_mode="latest"``) polls and takes ``now - t`` for every change. So the
  figure covers encode, the Paimon write of the row, produce, the broker, fetch
  and decode.
* transactional: the writer writes a few rows and commits; the reader
  (``consistency="transactional"``) records when the first change of each commit
  arrives. Latency = arrival - the moment ``commit()`` returned (the snapshot
  is committed before that; ``commit()`` also runs the log's commit hook).
  Also reported against the snapshot's own commit time (Paimon ``timeMillis``,
  millisecond resolution).
"""

from __future__ import annotations

import multiprocessing as mp
import statistics
import tempfile
import time
from typing import Any

from bench.common import SCHEMA, create_table

_SPAWN = mp.get_context("spawn")


def _reader_process(warehouse: str, identifier: str, options: dict[str, str], consistency: str,
                    expected: int, ready: Any, out: Any) -> None:
    import tablelog

    table = tablelog.open_table(warehouse, identifier, options)
    arrivals: dict[int, float] = {}
    latencies: list[float] = []
    with table.reader(consistency=consistency, scan_mode="latest") as reader:
        reader.poll(timeout_s=0.0)  # open the log, find the start
        ready.set()
        deadline = time.monotonic() + 120
        while len(arrivals) < expected and time.monotonic() < deadline:
            for change in reader.poll(max_records=10_000, timeout_s=0.05):
                now = time.time()
                latencies.append(now * 1e6 - change.row["seq"])
                arrivals.setdefault(change.row["id"] // 1000, now)  # id // 1000 = the commit
    out.put({"latencies_us": latencies, "arrivals": arrivals})


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return {"p50": at(0.5), "p90": at(0.9), "p99": at(0.99), "max": ordered[-1],
            "mean": statistics.fmean(ordered), "samples": len(ordered)}


def measure(options: dict[str, str], samples: int, commits: int, partitions: int = 4) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-lat-") as warehouse:
        result: dict[str, Any] = {}
        # -- eventual ---------------------------------------------------------------
        table = create_table(warehouse, partitions, dict(options))
        ready, out = _SPAWN.Event(), _SPAWN.Queue()
        proc = _SPAWN.Process(target=_reader_process,
                              args=(warehouse, table.identifier, options, "eventual", samples + 1, ready, out))
        proc.start()
        ready.wait(120)
        with table.writer() as writer:
            writer.write([{"id": 0, "seq": int(time.time() * 1e6), "payload": "warm-up"}])
            writer.commit()
            time.sleep(0.5)
            for i in range(samples):
                writer.write([{"id": i * 1000 + 1, "seq": int(time.time() * 1e6), "payload": "x" * 10}])
                time.sleep(0.005)
                if i % 100 == 99:
                    writer.commit()
            writer.commit()
        got = out.get(timeout=180)
        proc.join(30)
        lat = [v / 1000 for v in got["latencies_us"][1:]]  # ms; the warm-up row dropped
        result["eventual_ms"] = percentiles(lat)
        # -- transactional --------------------------------------------------------------
        table = create_table(warehouse, partitions, dict(options))
        ready, out = _SPAWN.Event(), _SPAWN.Queue()
        proc = _SPAWN.Process(target=_reader_process,
                              args=(warehouse, table.identifier, options, "transactional", commits, ready, out))
        proc.start()
        ready.wait(120)
        committed: dict[int, tuple[float, int]] = {}
        with table.writer() as writer:
            for c in range(1, commits + 1):
                writer.write([{"id": c * 1000 + j, "seq": int(time.time() * 1e6), "payload": "x"}
                              for j in range(10)])
                res = writer.commit()
                done = time.time()
                snap = table.store.snapshot(res.snapshot_id)
                committed[c] = (done, snap.time_millis if snap else int(done * 1000))
                time.sleep(0.2)
        got = out.get(timeout=180)
        proc.join(30)
        arrivals = got["arrivals"]
        after_return = [(arrivals[c] - done) * 1000 for c, (done, _) in committed.items() if c in arrivals]
        after_snapshot = [arrivals[c] * 1000 - snap_ms for c, (_, snap_ms) in committed.items() if c in arrivals]
        result["transactional_after_commit_return_ms"] = percentiles(after_return)
        result["transactional_after_snapshot_ms"] = percentiles(after_snapshot)
        result["transactional_missing"] = commits - len(after_return)
        return result


def _raw_kafka_consumer(address: str, topic: str, n: int, ready: Any, out: Any) -> None:
    from confluent_kafka import Consumer, TopicPartition

    from bench.throughput import KafkaRaw

    consumer = Consumer(KafkaRaw(address).settings.consumer_config("bench-raw-latency"))
    consumer.assign([TopicPartition(topic, p, -1) for p in range(4)])  # from the end
    consumer.consume(1, 1.0)
    ready.set()
    latencies: list[float] = []
    deadline = time.monotonic() + 120
    while len(latencies) < n and time.monotonic() < deadline:
        for m in consumer.consume(1000, 0.05):
            if m.error() is None:
                latencies.append(time.time() * 1e6 - int(m.value()))
    consumer.close()
    out.put(latencies)


def measure_raw_kafka(address: str, samples: int) -> dict[str, Any]:
    """The same eventual measurement with raw confluent-kafka on both sides: one record
    every 5 ms from a producer with the plugin's settings, a consumer with the
    plugin's consumer settings in another process."""
    from confluent_kafka import Producer

    from bench.throughput import KafkaRaw

    raw = KafkaRaw(address)
    topic = raw.new_topic(4)
    ready, out = _SPAWN.Event(), _SPAWN.Queue()
    proc = _SPAWN.Process(target=_raw_kafka_consumer, args=(address, topic, samples, ready, out))
    proc.start()
    ready.wait(120)
    producer = Producer(raw.settings.producer_config())
    for i in range(samples):
        producer.produce(topic, b"%d" % int(time.time() * 1e6), None, i % 4)
        producer.poll(0)
        time.sleep(0.005)
    producer.flush(30)
    latencies = out.get(timeout=180)
    proc.join(30)
    return {"eventual_ms": percentiles([v / 1000 for v in latencies])}


if __name__ == "__main__":
    import json
    import sys

    from bench import brokers

    with brokers.kafka() as address:
        opts = {"log.system": "kafka", "kafka.bootstrap.servers": address}
        print(json.dumps(measure(opts, int(sys.argv[1]), int(sys.argv[2])), indent=1))
    _ = SCHEMA
