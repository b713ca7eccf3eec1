"""Throughput: tablelog's writer and changelog reader against the raw clients.

One *point* = one log system, partition count, record size and record count. In
every round each variant runs once on fresh topics of the same broker, in an
order that rotates every round; the figures are medians over the rounds, and
each ratio is taken per round (tablelog / raw of that round) before the median.

Definitions (written down in docs/performance.md):

produce (records/s from the first call until every record is acknowledged):
  * ``raw``          raw client sending the pre-encoded keys and values tablelog
                     produced for the same rows, to the same partitions, with the
                     same producer settings as the plugin; no headers/properties;
  * ``raw+headers``  the same plus what tablelog puts on every record: the
                     writer token and sequence number (Kafka headers / Pulsar
                     properties) and the event timestamp;
  * ``tablelog``     the writer's log path from Arrow batches of 10,000 rows:
                     ``WriteTask.write`` (validate, encode, route to partition =
                     bucket, produce) per batch, then ``finish()`` (flush: every
                     record acknowledged). The Paimon data-file write is stubbed out;
  * ``tablelog+paimon`` the same with the real Paimon write (native), up to
                     ``finish()`` (the snapshot commit itself is not timed).

fetch (records/s until every record was returned), all reading the topic the
``tablelog+paimon`` run wrote and committed:
  * ``raw``          the raw consumer/reader over all partitions, touching each value;
  * ``raw+headers``  also key, offset/message id, headers/properties and timestamp;
  * ``raw+json``     ``raw`` plus ``orjson.loads`` of every value (what a consumer of
                     the raw topic does to get rows);
  * ``transactional`` ``table.reader(consistency="transactional", scan_mode="earliest")``
                     with ``log.reader.pause-gc=true`` (every tablelog reader variant)
                     ``.poll()`` until all: walk snapshots, fetch the committed ranges,
                     keep committed tokens and unseen sequence numbers, decode into
                     ``Change`` objects with Python rows;
  * ``transactional-arrow`` the same transactional read with ``.poll_arrow()``: the
                     changes as Arrow tables (what the Spark source reads), values of
                     dense committed ranges decoded all at once;
  * ``eventual``     the same reader with ``consistency="eventual"``.
"""

from __future__ import annotations

import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

import orjson

from bench import brokers
from bench.common import (
    batches,
    create_table,
    encoded_records,
    interleave,
    make_rows,
    read_transactional,
    stats,
    unique,
    write_full,
    write_log_path,
)
from tablelog.records import LogConfig

TOKEN = b"0123456789abcdef"  # a token of tablelog's length
#: The record a raw producer sends before the clock starts (not JSON: readers skip it).
WARM_UP = b"warm-up"


# -- Kafka ------------------------------------------------------------------------------


class KafkaRaw:
    name = "kafka"
    broker = staticmethod(brokers.kafka)

    def __init__(self, address: str):
        from tablelog_kafka.config import parse_settings

        self.address = address
        self.settings = parse_settings(LogConfig("kafka", "bench.raw", "raw", 1, True,
                                                 {"bootstrap.servers": address}))

    def table_options(self) -> dict[str, str]:
        return {"log.system": "kafka", "kafka.bootstrap.servers": self.address,
                "kafka.topic": unique("tl")}

    def new_topic(self, partitions: int) -> str:
        from confluent_kafka.admin import AdminClient, NewTopic

        topic = unique("raw")
        admin = AdminClient({"bootstrap.servers": self.address})
        admin.create_topics([NewTopic(topic, partitions, -1)])[topic].result(30)
        return topic

    def produce(self, topic: str, records: dict[int, tuple[list[Any], list[bytes]]], headers: bool) -> float:
        from confluent_kafka import Producer

        producer = Producer(self.settings.producer_config())
        # Warm, as the writer is (see write_log_path): started, and a first record acknowledged.
        producer.list_topics(timeout=30)
        producer.produce(topic, WARM_UP, None, 0)
        assert producer.flush(30) == 0
        began = time.perf_counter()
        produce = producer.produce
        stamp = int(time.time() * 1000)
        for partition, (keys, values) in records.items():
            i, n = 0, len(values)
            th = ("tablelog.token", TOKEN)
            while i < n:
                try:
                    if headers:
                        while i < n:
                            # positional, the fastest call form (the plugin uses it too)
                            produce(topic, values[i], keys[i], partition, None, None, stamp,
                                    [th, ("tablelog.seq", b"%d" % i)])
                            i += 1
                    else:
                        while i < n:
                            produce(topic, values[i], keys[i], partition)
                            i += 1
                except BufferError:
                    producer.poll(0.05)
        assert producer.flush(120) == 0
        return time.perf_counter() - began

    def fetch(self, topic: str, partitions: int, ends: dict[int, int], mode: str) -> int:
        """Read [0, end) of every partition; returns how many records were read."""
        from confluent_kafka import Consumer, TopicPartition

        total = sum(ends.values())
        consumer = Consumer(self.settings.consumer_config("bench-raw"))
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        seen = 0
        loads = orjson.loads
        while seen < total:
            # What the plugin does too: take what is there, else wait for the first record
            # only (consume(n, t) waits for n records or t: 10,000 records of 10 KB never
            # fit the client's queue, and every call would wait the full time-out).
            messages = consumer.consume(10_000, 0) or consumer.consume(1, 1.0)
            for m in messages:
                if m.error() is not None:
                    continue
                if mode == "value":
                    m.value()
                elif mode == "all":
                    m.key(), m.value(), m.offset(), m.headers(), m.timestamp()
                else:
                    value = m.value()
                    if value != WARM_UP:
                        loads(value)
                seen += 1
        consumer.close()
        return seen

    @staticmethod
    def ends(receipt: Any) -> dict[int, int]:
        return {r.partition: r.last + 1 for r in receipt.ranges}

    def raw_topic_of(self, table: Any) -> str:
        return table.topic


# -- Pulsar -----------------------------------------------------------------------------


class PulsarRaw:
    name = "pulsar"
    broker = staticmethod(brokers.pulsar)

    def __init__(self, address: str):
        import pulsar

        from tablelog_pulsar.config import parse_config

        self.address = address
        self.config = parse_config(LogConfig("pulsar", "bench.raw", "raw", 1, True, {"service-url": address}))
        from tablelog_pulsar.connection import client_logger

        self.client = pulsar.Client(address, operation_timeout_seconds=30, logger=client_logger())  # as tablelog's own client
        self.reader_restarts = 0

    def table_options(self) -> dict[str, str]:
        return {"log.system": "pulsar", "pulsar.service-url": self.address, "pulsar.topic": unique("tl")}

    def new_topic(self, partitions: int) -> str:
        return f"persistent://public/default/{unique('raw')}"

    def produce(self, topic: str, records: dict[int, tuple[list[Any], list[bytes]]], headers: bool) -> float:
        import pulsar

        kwargs = dict(self.config.producer_kwargs)
        kwargs["compression_type"] = getattr(pulsar.CompressionType, kwargs.pop("compression_type", "NONE"))
        acked = [0]
        lock = threading.Lock()

        def on_ack(result: Any, message_id: Any) -> None:
            with lock:
                acked[0] += 1

        producers = []
        total = 0
        # Warm, as the writer is (see write_log_path): every producer created, and a first
        # record acknowledged, before the clock starts.
        for partition in records:
            producer = self.client.create_producer(f"{topic}-partition-{partition}",
                                                   block_if_queue_full=True, **kwargs)
            producer.send(b"warm-up")
            producers.append(producer)
        began = time.perf_counter()
        stamp = int(time.time() * 1000)
        for producer, (keys, values) in zip(producers, records.values(), strict=True):
            send = producer.send_async
            if headers:
                for i, (k, v) in enumerate(zip(keys, values, strict=True)):
                    send(v, on_ack, properties={"tablelog.token": "0123456789abcdef", "tablelog.seq": str(i)},
                         partition_key=k.decode(), event_timestamp=stamp)
            else:
                for k, v in zip(keys, values, strict=True):
                    send(v, on_ack, partition_key=k.decode())
            total += len(values)
        for producer in producers:
            producer.flush()
        while acked[0] < total:
            time.sleep(0.001)
        elapsed = time.perf_counter() - began
        for producer in producers:
            producer.close()
        return elapsed

    def fetch(self, topic: str, partitions: int, ends: dict[int, int], mode: str) -> int:
        """Read each partition topic from the earliest message to the last one (``ends``:
        tablelog positions, last + 1). pulsar-lite re-sends entries now and then: the
        reader reads until it saw the last id; the rate counts distinct records."""
        import pulsar

        from tablelog_pulsar import positions

        seen = 0
        loads = orjson.loads
        readers = []
        for partition in range(partitions):
            last = positions.decode(ends[partition] - 1)
            last_key = (last.ledger_id, last.entry_id, last.batch_index)
            name = f"{topic}-partition-{partition}"
            reader = self.client.create_reader(name, pulsar.MessageId.earliest, **self.config.reader_kwargs)
            readers.append(reader)
            mid = None
            while True:
                try:
                    m = reader.read_next(200)  # as soon as the plugin checks for a stuck reader
                except pulsar.Timeout:
                    # pulsar-lite: a reader now and then stops delivering while the broker
                    # has more for it (docs/pulsar.md); the plugin replaces such a reader,
                    # and so does the raw baseline, after the last message it got.
                    if not reader.has_message_available():
                        raise
                    self.reader_restarts += 1
                    reader = self.client.create_reader(name, mid or pulsar.MessageId.earliest,
                                                       start_message_id_inclusive=mid is None,
                                                       **self.config.reader_kwargs)
                    readers.append(reader)
                    continue
                if mode == "value":
                    m.data()
                elif mode == "all":
                    m.data(), m.partition_key(), m.properties(), m.event_timestamp()
                else:
                    loads(m.data())
                seen += 1
                mid = m.message_id()
                if (mid.ledger_id(), mid.entry_id(), mid.batch_index()) == last_key:
                    break
        for reader in readers:
            reader.close()
        return seen

    @staticmethod
    def ends(receipt: Any) -> dict[int, int]:
        return {r.partition: r.last + 1 for r in receipt.ranges}

    def raw_topic_of(self, table: Any) -> str:
        from tablelog_pulsar.config import resolve_topic

        return resolve_topic(table.topic)

    def close(self) -> None:
        self.client.close()


SYSTEMS: dict[str, type] = {"kafka": KafkaRaw, "pulsar": PulsarRaw}

PRODUCE = ("raw", "raw+headers", "tablelog", "tablelog+paimon")
FETCH = ("raw", "raw+headers", "raw+json", "transactional", "transactional-arrow", "eventual")


def measure_point(system: str, partitions: int, record_bytes: int, n: int, rounds: int,
                  log: Callable[[str], None] = print) -> dict[str, Any]:
    """All variants at one point, ``rounds`` times, on one fresh broker."""
    cls = SYSTEMS[system]
    rows = make_rows(n, record_bytes)
    parts = batches(rows)
    produce: dict[str, list[float]] = {k: [] for k in PRODUCE}
    fetch: dict[str, list[float]] = {k: [] for k in FETCH}
    failures: list[str] = []
    with cls.broker() as address, tempfile.TemporaryDirectory(prefix="bench-wh-") as warehouse:
        raw = cls(address)
        try:
            for round_ in range(rounds):
                _round(raw, warehouse, partitions, rows, parts, round_, produce, fetch, failures)
                log(f"  {system} p={partitions} {record_bytes}B round {round_ + 1}: "
                    + " ".join(f"{k}={v[-1]:,.0f}" for k, v in produce.items()) + " | "
                    + " ".join(f"{k}={v[-1]:,.0f}" for k, v in fetch.items()))
        finally:
            if hasattr(raw, "close"):
                raw.close()
    result = summarize(system, partitions, record_bytes, n, rounds, produce, fetch)
    result["failures"] = failures
    return result


def _or_failure(fn: Callable[[], float], failures: list[str]) -> float:
    """A reader run that does not finish is recorded (NaN and a note), not fatal."""
    try:
        return fn()
    except Exception as err:  # noqa: BLE001 - reported in the results
        failures.append(repr(err))
        return float("nan")


def _round(raw: Any, warehouse: str, partitions: int, rows: Any, parts: list[Any], round_: int,
           produce: dict[str, list[float]], fetch: dict[str, list[float]], failures: list[str]) -> None:
    """One round: every produce variant on fresh topics, then every fetch variant on the
    topic the ``tablelog+paimon`` run wrote and committed; the order rotates per round."""
    n = rows.num_rows
    log_table = create_table(warehouse, partitions, raw.table_options())
    full_table = create_table(warehouse, partitions, raw.table_options())
    records = encoded_records(log_table, rows)
    receipts: dict[str, Any] = {}

    def run_log() -> float:
        elapsed, receipts["log"] = write_log_path(log_table, parts)
        return elapsed

    def run_full() -> float:
        elapsed, receipts["full"] = write_full(full_table, parts)
        return elapsed

    done = interleave(round_, [
        ("raw", lambda: raw.produce(raw.new_topic(partitions), records, headers=False)),
        ("raw+headers", lambda: raw.produce(raw.new_topic(partitions), records, headers=True)),
        ("tablelog", run_log),
        ("tablelog+paimon", run_full),
    ])
    for name, elapsed in done:
        produce[name].append(n / elapsed)
    assert sum(r.count for r in receipts["full"].ranges) == n
    ends = raw.ends(receipts["full"])
    topic = raw.raw_topic_of(full_table)

    def timed_raw(mode: str) -> float:
        began = time.perf_counter()
        seen = raw.fetch(topic, partitions, ends, mode)
        assert seen >= n, (seen, n)
        return time.perf_counter() - began

    done = interleave(round_, [
        ("raw", lambda: timed_raw("value")),
        ("raw+headers", lambda: timed_raw("all")),
        ("raw+json", lambda: timed_raw("json")),
        ("transactional", lambda: _or_failure(lambda: read_transactional(full_table, n), failures)),
        ("transactional-arrow", lambda: _or_failure(lambda: read_transactional(full_table, n, arrow=True), failures)),
        ("eventual", lambda: _or_failure(lambda: read_transactional(full_table, n, "eventual"), failures)),
    ])
    for name, elapsed in done:
        fetch[name].append(n / elapsed if elapsed == elapsed else float("nan"))


def _ratios(num: list[float], den: list[float]) -> dict[str, Any]:
    return stats([a / b for a, b in zip(num, den, strict=True)])  # NaN stays NaN


def summarize(system: str, partitions: int, record_bytes: int, n: int, rounds: int,
              produce: dict[str, list[float]], fetch: dict[str, list[float]]) -> dict[str, Any]:
    return {
        "system": system, "partitions": partitions, "record_bytes": record_bytes, "records": n,
        "rounds": rounds,
        "produce": {k: stats(v) for k, v in produce.items()},
        "fetch": {k: stats(v) for k, v in fetch.items()},
        "ratios": {
            "writer / raw+headers": _ratios(produce["tablelog"], produce["raw+headers"]),
            "writer / raw": _ratios(produce["tablelog"], produce["raw"]),
            "writer+paimon / raw+headers": _ratios(produce["tablelog+paimon"], produce["raw+headers"]),
            "transactional / raw": _ratios(fetch["transactional"], fetch["raw"]),
            "transactional / raw+headers": _ratios(fetch["transactional"], fetch["raw+headers"]),
            "transactional / raw+json": _ratios(fetch["transactional"], fetch["raw+json"]),
            "transactional-arrow / raw": _ratios(fetch["transactional-arrow"], fetch["raw"]),
            "transactional-arrow / raw+headers": _ratios(fetch["transactional-arrow"], fetch["raw+headers"]),
            "eventual / raw": _ratios(fetch["eventual"], fetch["raw"]),
        },
    }


def median(values: list[float]) -> float:
    return statistics.median(values)


if __name__ == "__main__":
    import json
    import sys

    result = measure_point(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
    print(json.dumps(result["ratios"], indent=1, default=lambda x: round(x, 3)))
