"""Connections cut mid-stream by a loopback TCP proxy (:mod:`tablelog.testing.fault_proxy`):
producers and readers recover, or fail clearly and are retried; transactional
readers lose and duplicate no committed record.

Kafka: a dedicated Tansu advertises the proxy's port, so every client connection
(bootstrap and the ones learnt from metadata) goes through the proxy.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

import tablelog
from tablelog.errors import (
    LogDataLostError,
    LogSystemError,
    LogUnavailableError,
    ProduceError,
    TablelogError,
)
from tablelog.reading import Change
from tablelog.table import internals
from tablelog.testing.scenarios import SCHEMA, ids, read_transactional, rows
from tablelog.verify import verify

BATCHES, ROWS_PER_BATCH = 8, 200


@contextmanager
def cutting(proxy: Any, every_s: tuple[float, float], seed: int = 7) -> Iterator[list[int]]:
    """Drop every connection through ``proxy`` at random intervals in ``every_s`` while
    the block runs. (Random: cuts at a fixed period phase-lock with the clients' own
    one-second retry timers and then hit every retry.)"""
    stop = threading.Event()
    cuts: list[int] = []
    rng = random.Random(seed)

    def loop() -> None:
        while not stop.wait(rng.uniform(*every_s)):
            cuts.append(proxy.drop_all())

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield cuts
    finally:
        stop.set()
        thread.join()


def write_batches_retrying(table: tablelog.Table, batches: int, on_batch: Callable[[int], None] = lambda b: None,
                           ) -> tuple[int, int]:
    """Commit ``batches`` batches. A write attempt that fails (its flush, or opening
    the log) is retried as a new attempt with the same commit identifier; a commit
    that fails is retried with the same receipt (commits are idempotent per writer
    and identifier). Returns (failures, commits)."""
    failed = 0
    short_topic = table.topic.rsplit("/", 1)[-1]
    for b in range(batches):
        on_batch(b)
        receipt = None
        for _attempt in range(10):
            task = None
            try:
                if receipt is None:
                    task = table.write_task("w", b + 1, task=f"batch-{b}")
                    task.write(rows(ROWS_PER_BATCH, start=b * ROWS_PER_BATCH))
                    receipt = task.finish()
                table.commit("w", b + 1, [receipt])
                break
            except LogSystemError as err:  # a clear failure naming the topic, or the brokers it could not reach: retry
                assert short_topic in str(err) or isinstance(err, LogUnavailableError), err
                failed += 1
                if task is not None and receipt is None:
                    task.abort()
        else:
            pytest.fail(f"batch {b}: every attempt failed")
        assert table.find_commit("w", b + 1) is not None
    return failed, batches


def follow_until(table: tablelog.Table, expected: int, timeout_s: float, **reader_options: Any
                 ) -> tuple[list[Change], list[str]]:
    """A transactional reader that saves its position after every poll and, when a
    poll fails with a (non data-loss) error, reopens from the saved position.
    Returns the changes and the errors it restarted after."""
    out: list[Change] = []
    position: str | None = None
    restarts: list[str] = []
    deadline = time.monotonic() + timeout_s
    while len(out) < expected and time.monotonic() < deadline:
        reader = table.reader(position=position, consistency="transactional", scan_mode="earliest",
                              **reader_options) if position is None else table.reader(position=position)
        try:
            while len(out) < expected and time.monotonic() < deadline:
                batch = reader.poll(max_records=97, timeout_s=0.2)
                out += batch
                position = reader.position.to_json()
        except LogDataLostError:
            raise
        except TablelogError as err:
            restarts.append(str(err))
        finally:
            reader.close()
    return out, restarts


def _kafka_options(bootstrap: str) -> dict[str, str]:
    return {"log.system": "kafka", "kafka.bootstrap.servers": bootstrap,
            "log.flush-timeout-ms": "3000", "kafka.admin-timeout-ms": "5000",
            "log.fetch-timeout-ms": "20000", "kafka.reconnect.backoff.max.ms": "200"}


def test_kafka_connections_cut_repeatedly_while_writing_and_reading_lose_and_duplicate_nothing(
    tmp_path, proxied_tansu  # type: ignore[no-untyped-def]
) -> None:
    broker, proxy = proxied_tansu
    table = tablelog.create_table(str(tmp_path), "db.cut", SCHEMA, primary_key=["id"], bucket=2,
                                  options=_kafka_options(broker.bootstrap))
    expected = BATCHES * ROWS_PER_BATCH
    result: dict[str, Any] = {}

    def read() -> None:
        result["changes"], result["restarts"] = follow_until(table, expected, timeout_s=50)

    reader = threading.Thread(target=read)
    reader.start()
    with cutting(proxy, every_s=(0.5, 1.5)) as cuts:
        failed, _ = write_batches_retrying(table, BATCHES, on_batch=lambda b: time.sleep(0.1))
        reader.join(timeout=55)
    assert not reader.is_alive()
    assert sum(cuts) > 0 and proxy.dropped > 0, "the proxy cut no connection"
    changes = result["changes"]
    print(f"kafka: {sum(cuts)} connections cut, {failed} write attempts failed, "
          f"{len(result['restarts'])} reader restarts: {set(result['restarts'])}")
    assert all(table.topic in e for e in result["restarts"])  # errors say where
    assert ids(changes) == Counter(range(expected)), (failed, result["restarts"])  # each once
    assert ids(read_transactional(table)) == Counter(range(expected))
    assert Counter(r["id"] for r in table.rows().to_pylist()) == Counter(range(expected))
    assert verify(table).consistent


def test_kafka_black_holed_connection_fails_the_flush_clearly_and_a_retry_after_it_heals_is_exactly_once(
    tmp_path, proxied_tansu  # type: ignore[no-untyped-def]
) -> None:
    broker, proxy = proxied_tansu
    options = {**_kafka_options(broker.bootstrap), "log.flush-timeout-ms": "1500"}
    table = tablelog.create_table(str(tmp_path), "db.hole", SCHEMA, primary_key=["id"], bucket=2,
                                  options=options)
    with table.writer("w") as writer:
        writer.write(rows(100))
        writer.commit()
    task = table.write_task("w", 2, task="black-holed")
    task.write(rows(10, start=100, tag="doomed"))
    proxy.pause()  # bytes stop flowing; no connection is closed
    try:
        task.write(rows(40, start=110, tag="doomed"))
        began = time.monotonic()
        with pytest.raises(ProduceError, match="not acknowledged|delivery failed"):
            task.finish()
        assert time.monotonic() - began < 1.5 + 5
        assert internals(table).files.latest_snapshot().id == 1  # type: ignore[union-attr]
    finally:
        proxy.resume()
    proxy.drop_all()  # the stalled connections are useless now
    retry = table.write_task("w", 2, task="retry")
    retry.write(rows(50, start=100))
    assert table.commit("w", 2, [retry.finish()]).committed
    changes = read_transactional(table)
    assert ids(changes) == Counter(range(150))
    assert not any(c.row["name"].startswith("doomed") for c in changes)
    assert verify(table).consistent


def test_pulsar_connections_cut_repeatedly_while_writing_and_reading_lose_and_duplicate_nothing(
    tmp_path, pulsar_broker, tcp_proxy_factory  # type: ignore[no-untyped-def]
) -> None:
    proxy = tcp_proxy_factory(pulsar_broker.port)
    options = {"log.system": "pulsar", "pulsar.service-url": f"pulsar://{proxy.address}",
               "log.flush-timeout-ms": "5000", "pulsar.operation-timeout-seconds": "5",
               "pulsar.send-timeout-ms": "5000", "log.fetch-timeout-ms": "20000"}
    table = tablelog.create_table(str(tmp_path), "db.pcut", SCHEMA, primary_key=["id"], bucket=2,
                                  options=options)
    batches = 2 * BATCHES
    expected = batches * ROWS_PER_BATCH
    result: dict[str, Any] = {}

    def read() -> None:
        result["changes"], result["restarts"] = follow_until(table, expected, timeout_s=50)

    reader = threading.Thread(target=read)
    reader.start()
    with cutting(proxy, every_s=(0.1, 0.5)) as cuts:
        failed, _ = write_batches_retrying(table, batches, on_batch=lambda b: time.sleep(0.1))
        reader.join(timeout=55)
    assert not reader.is_alive()
    assert sum(cuts) > 0, "the proxy cut no connection: the client bypasses it"
    changes = result["changes"]
    print(f"pulsar: {sum(cuts)} connections cut, {failed} write attempts failed, "
          f"{len(result['restarts'])} reader restarts: {set(result['restarts'])}")
    assert all(table.topic in e for e in result["restarts"])
    assert ids(changes) == Counter(range(expected)), (failed, result["restarts"])
    assert ids(read_transactional(table)) == Counter(range(expected))
    assert verify(table).consistent
