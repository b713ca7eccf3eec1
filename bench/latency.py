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

On Kafka two things dominate (measured on Tansu, see ``docs/kafka.md``, "Latency"):

* A new idempotent producer sends nothing for ~0.5 s: librdkafka asks for its producer
  id when the bootstrap connection is being replaced by the broker's own, finds no
  broker up and retries on a fixed 500 ms timer. ``Writer`` opens a new log
  connection (so a new producer) for every write round, i.e. after every commit: the
  rows written in the first ~0.5 s of a round wait for it. ``eventual_ms`` keeps those
  samples; ``eventual_round_start_ms`` (written < ``ROUND_START_S`` into their round) and
  ``eventual_steady_ms`` (the others) split them.
* Tansu is not woken by a produce while it holds a fetch (it re-reads its storage
  after half the remaining wait), so visibility takes up to ``fetch.wait.max.ms / 2``;
  against a Tansu it started the benchmark uses ``bench.brokers.TANSU_CLIENT_OPTIONS``
  (recorded as ``client_options`` in the result).
"""

from __future__ import annotations

import multiprocessing as mp
import statistics
import tempfile
import time
from typing import Any

from bench.common import create_table

_SPAWN = mp.get_context("spawn")

#: A sample written this long after its write round began (the first write after a
#: commit) is past the new producer's start-up (~0.5 s, see the module docstring).
ROUND_START_S = 0.6


def _kafka_tuned(options: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """``options`` plus the broker's client settings the caller did not set, and those."""
    from bench import brokers

    if options.get("log.system") != "kafka":
        return options, {}
    extra = {k: v for k, v in brokers.kafka_client_options(options.get("kafka.bootstrap.servers", "")).items()
             if "kafka." + k not in options}
    return {**options, **{"kafka." + k: v for k, v in extra.items()}}, extra


def _reader_process(warehouse: str, identifier: str, options: dict[str, str], consistency: str,
                    expected: int, ready: Any, out: Any) -> None:
    import tablelog

    table = tablelog.open_table(warehouse, identifier, options)
    arrivals: dict[int, float] = {}
    latencies: list[float] = []
    by_id: dict[int, float] = {}
    with table.reader(consistency=consistency, scan_mode="latest") as reader:
        reader.poll(timeout_s=0.0)  # open the log, find the start
        ready.set()
        deadline = time.monotonic() + 120
        while len(arrivals) < expected and time.monotonic() < deadline:
            for change in reader.poll(max_records=10_000, timeout_s=0.05):
                now = time.time()
                latencies.append(now * 1e6 - change.row["seq"])
                by_id[change.row["id"]] = latencies[-1]
                arrivals.setdefault(change.row["id"] // 1000, now)  # id // 1000 = the commit
    out.put({"latencies_us": latencies, "arrivals": arrivals, "by_id_us": by_id})


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    if not ordered:
        return {"samples": 0}

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return {"p50": at(0.5), "p90": at(0.9), "p99": at(0.99), "max": ordered[-1],
            "mean": statistics.fmean(ordered), "samples": len(ordered)}


def measure(options: dict[str, str], samples: int, commits: int, partitions: int = 4) -> dict[str, Any]:
    options, tuned = _kafka_tuned(options)
    with tempfile.TemporaryDirectory(prefix="bench-lat-") as warehouse:
        result: dict[str, Any] = {"client_options": tuned} if tuned else {}
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
            round_age: dict[int, float] = {}  # sample id -> seconds since its write round began
            round_began = None
            for i in range(samples):
                now = time.time()
                round_began = now if round_began is None else round_began
                round_age[i * 1000 + 1] = now - round_began
                writer.write([{"id": i * 1000 + 1, "seq": int(now * 1e6), "payload": "x" * 10}])
                time.sleep(0.005)
                if i % 100 == 99:
                    writer.commit()
                    round_began = None  # the next write opens a new log connection
            writer.commit()
        got = out.get(timeout=180)
        proc.join(30)
        lat = [v / 1000 for v in got["latencies_us"][1:]]  # ms; the warm-up row dropped
        result["eventual_ms"] = percentiles(lat)
        by_id = {k: v / 1000 for k, v in got["by_id_us"].items() if k in round_age}
        result["eventual_round_start_ms"] = percentiles(
            [v for k, v in by_id.items() if round_age[k] < ROUND_START_S])
        result["eventual_steady_ms"] = percentiles(
            [v for k, v in by_id.items() if round_age[k] >= ROUND_START_S])
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


def _raw_kafka_consumer(address: str, topic: str, n: int, tuned: dict[str, str], ready: Any,
                        out: Any) -> None:
    from confluent_kafka import Consumer, TopicPartition

    from bench.throughput import KafkaRaw

    consumer = Consumer(KafkaRaw(address).settings.consumer_config("bench-raw-latency", **tuned))
    consumer.assign([TopicPartition(topic, p, -1) for p in range(4)])  # from the end
    consumer.consume(1, 1.0)
    ready.set()
    latencies: list[float] = []
    deadline = time.monotonic() + 120
    while len(latencies) < n and time.monotonic() < deadline:
        # As the plugin's reader: wait for the first record only, then take what is there
        # (consume(1000, t) would hold every record until t passed or 1000 arrived).
        messages = consumer.consume(1, 0.05)
        if messages:
            messages.extend(consumer.consume(999, 0))
        for m in messages:
            if m.error() is None and m.value().isdigit():  # not the warm-up record
                latencies.append(time.time() * 1e6 - int(m.value()))
    consumer.close()
    out.put(latencies)


def measure_raw_kafka(address: str, samples: int) -> dict[str, Any]:
    """The same eventual measurement with raw confluent-kafka on both sides: one record
    every 5 ms from a producer with the plugin's settings, a consumer with the
    plugin's consumer settings (and the broker's, see :func:`_kafka_tuned`) in another
    process. The producer sends a warm-up record first and the samples start once it
    is delivered: its start-up (~0.5 s for an idempotent producer) is reported apart,
    as ``producer_start_ms``."""
    from confluent_kafka import Producer

    from bench.throughput import KafkaRaw

    _, tuned = _kafka_tuned({"log.system": "kafka", "kafka.bootstrap.servers": address})
    raw = KafkaRaw(address)
    topic = raw.new_topic(4)
    ready, out = _SPAWN.Event(), _SPAWN.Queue()
    proc = _SPAWN.Process(target=_raw_kafka_consumer, args=(address, topic, samples, tuned, ready, out))
    proc.start()
    ready.wait(120)
    began = time.perf_counter()
    producer = Producer(raw.settings.producer_config())
    producer.produce(topic, b"warm-up", None, 0)
    producer.flush(30)
    start_ms = (time.perf_counter() - began) * 1000
    for i in range(samples):
        producer.produce(topic, b"%d" % int(time.time() * 1e6), None, i % 4)
        producer.poll(0)
        time.sleep(0.005)
    producer.flush(30)
    latencies = out.get(timeout=180)
    proc.join(30)
    result: dict[str, Any] = {"client_options": tuned} if tuned else {}
    result["eventual_ms"] = percentiles([v / 1000 for v in latencies])
    result["producer_start_ms"] = start_ms
    return result


def by_format(systems: list[str], samples: int, commits: int) -> dict[str, Any]:
    """Each log system's latencies with ``debezium-json`` and ``arrow`` records, one after
    the other on one broker: ``{system: {format: measure(...)}}``."""
    from bench import brokers

    def both(options: dict[str, str]) -> dict[str, Any]:
        return {fmt: measure({**options, "log.format": fmt}, samples, commits) for fmt in ("debezium-json", "arrow")}

    out: dict[str, Any] = {}
    if "kafka" in systems:
        with brokers.kafka() as address:
            out["kafka"] = both({"log.system": "kafka", "kafka.bootstrap.servers": address})
    if "pulsar" in systems:
        with brokers.pulsar() as url:
            out["pulsar"] = both({"log.system": "pulsar", "pulsar.service-url": url})
    if "filesystem" in systems:
        out["filesystem"] = both({"log.system": "filesystem"})
    return out


if __name__ == "__main__":
    # python -m bench.latency [--samples 400] [--commits 30] [--systems kafka,pulsar,filesystem]
    import argparse
    import json

    parser = argparse.ArgumentParser(description="eventual and transactional latency, debezium-json and arrow")
    parser.add_argument("--samples", type=int, default=400)
    parser.add_argument("--commits", type=int, default=30)
    parser.add_argument("--systems", default="kafka,pulsar,filesystem")
    args = parser.parse_args()
    result = by_format(args.systems.split(","), args.samples, args.commits)
    summary = {system: {fmt: {"eventual_p50_ms": r["eventual_ms"]["p50"], "eventual_p99_ms": r["eventual_ms"]["p99"],
                              "transactional_p50_ms": r["transactional_after_snapshot_ms"]["p50"],
                              "transactional_max_ms": r["transactional_after_snapshot_ms"]["max"]}
                        for fmt, r in formats.items()}
               for system, formats in result.items()}
    print(json.dumps(summary, indent=1))
