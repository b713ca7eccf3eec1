"""A Kafka broker paused (SIGSTOP) or killed (SIGKILL) in the middle of a write: the
write fails clearly within its time-out, nothing is committed, and a retry gives
exactly-once results, counted in the table and by a transactional read.

Each test has a Tansu broker of its own; the killed one runs on Tansu's S3 storage engine
(a bucket of its own on the session's SeaweedFS) so that it comes back with its records.
"""

from __future__ import annotations

import time
from collections import Counter

import pytest

import tablelog
from tablelog.errors import LogUnavailableError, ProduceError
from tablelog.table import internals
from tablelog.testing.scenarios import SCHEMA, ids, read_transactional, rows
from tablelog.verify import verify

FLUSH_TIMEOUT_MS = 2000


def _options(bootstrap: str) -> dict[str, str]:
    return {
        "log.system": "kafka",
        "kafka.bootstrap.servers": bootstrap,
        "log.flush-timeout-ms": str(FLUSH_TIMEOUT_MS),
        "kafka.admin-timeout-ms": "5000",
        "log.fetch-timeout-ms": "10000",
    }


def _assert_exactly_once(table: tablelog.Table, expected: int) -> None:
    rows_in_table = table.rows().to_pylist()
    assert Counter(r["id"] for r in rows_in_table) == Counter(range(expected))
    changes = read_transactional(table)
    assert ids(changes) == Counter(range(expected))  # every committed record once, no other
    assert all(not c.row["name"].startswith("doomed") for c in changes)
    report = verify(table)
    assert report.consistent, report.summary()


def test_paused_broker_fails_the_flush_after_its_time_out_and_a_retry_after_sigcont_is_exactly_once(
    tmp_path, tansu  # type: ignore[no-untyped-def]
) -> None:
    table = tablelog.create_table(str(tmp_path), "db.paused", SCHEMA, primary_key=["id"], bucket=2,
                                  options=_options(tansu.bootstrap))
    with table.writer("w") as writer:
        writer.write(rows(100))
        writer.commit()

    doomed = table.write_task("w", 2, task="paused")
    doomed.write(rows(30, start=100, tag="doomed"))  # connected and producing ...
    tansu.pause()  # ... when the broker stops answering
    try:
        doomed.write(rows(20, start=130, tag="doomed"))
        began = time.monotonic()
        with pytest.raises(ProduceError) as raised:
            doomed.finish()
        elapsed = time.monotonic() - began
        message = str(raised.value)
        assert "not acknowledged" in message or "delivery failed" in message, message
        assert table.topic in message
        assert elapsed < FLUSH_TIMEOUT_MS / 1000 + 5, elapsed
        assert internals(table).files.latest_snapshot().id == 1  # type: ignore[union-attr]  # nothing committed
    finally:
        tansu.resume()

    retry = table.write_task("w", 2, task="retry")
    retry.write(rows(50, start=100))
    assert table.commit("w", 2, [retry.finish()]).committed
    _assert_exactly_once(table, 150)


def test_killed_broker_on_durable_storage_restarted_then_a_retry_is_exactly_once(
    tmp_path, durable_tansu  # type: ignore[no-untyped-def]
) -> None:
    broker = durable_tansu
    table = tablelog.create_table(str(tmp_path), "db.killed", SCHEMA, primary_key=["id"], bucket=2,
                                  options=_options(broker.bootstrap))
    with table.writer("w") as writer:
        writer.write(rows(100))
        writer.commit()

    doomed = table.write_task("w", 2, task="killed")
    doomed.write(rows(30, start=100, tag="doomed"))
    broker.kill()  # SIGKILL in the middle of the write
    doomed.write(rows(20, start=130, tag="doomed"))
    # The broker is gone, not refusing records: an outage (the flush hook's contract).
    with pytest.raises(LogUnavailableError, match=rf"cannot be reached .*{table.topic}"):
        doomed.finish()
    assert internals(table).files.latest_snapshot().id == 1  # type: ignore[union-attr]

    broker.start()  # same port, same s3:// bucket
    # The first commit's records survived the kill: a transactional read finds them all.
    assert ids(read_transactional(table)) == Counter(range(100))
    retry = table.write_task("w", 2, task="retry")
    retry.write(rows(50, start=100))
    assert table.commit("w", 2, [retry.finish()]).committed
    _assert_exactly_once(table, 150)
