"""A Pulsar broker restarted on its data directory while a transactional reader is
streaming: the same reader object keeps going (or fails clearly and is reopened
from its saved position); no committed record is lost or returned twice.
(tests/pulsar has the restart between a write and a resumed reader.)"""

from __future__ import annotations

import time
from collections import Counter

import tablelog
from tablelog.errors import LogDataLostError, LogSystemError, TablelogError
from tablelog.reading import Change
from tablelog.testing.scenarios import SCHEMA, ids, read_transactional, rows
from tablelog.verify import verify


def _commit_retrying(table: tablelog.Table, commit_id: int, start: int, count: int) -> None:
    receipt = None
    for _ in range(20):
        try:
            if receipt is None:
                task = table.write_task("w", commit_id, task=f"c{commit_id}")
                task.write(rows(count, start=start))
                receipt = task.finish()
            table.commit("w", commit_id, [receipt])
            return
        except LogSystemError:
            time.sleep(0.25)  # the broker is coming back
    raise AssertionError(f"commit {commit_id} never succeeded")


def test_reader_streaming_across_a_pulsar_broker_restart_loses_and_duplicates_nothing(
    tmp_path, pulsar_broker  # type: ignore[no-untyped-def]
) -> None:
    options = {"log.system": "pulsar", "pulsar.service-url": pulsar_broker.service_url,
               "log.flush-timeout-ms": "3000", "pulsar.operation-timeout-seconds": "3",
               "pulsar.send-timeout-ms": "3000", "log.fetch-timeout-ms": "15000"}
    table = tablelog.create_table(str(tmp_path), "db.stream", SCHEMA, primary_key=["id"], bucket=2,
                                  options=options)
    _commit_retrying(table, 1, 0, 100)
    seen: list[Change] = []
    errors: list[str] = []
    reader = table.reader(consistency="transactional", scan_mode="earliest")
    saved = None
    try:
        while len(seen) < 100:
            seen += reader.poll(max_records=30, timeout_s=0.5)
            saved = reader.position.to_json()
        pulsar_broker.restart()  # the reader's connections die under it
        for commit_id in (2, 3, 4):
            _commit_retrying(table, commit_id, (commit_id - 1) * 100, 100)
        deadline = time.monotonic() + 45
        while len(seen) < 400 and time.monotonic() < deadline:
            try:
                seen += reader.poll(max_records=30, timeout_s=0.5)
                saved = reader.position.to_json()
            except LogDataLostError:
                raise
            except TablelogError as err:  # failed clearly: reopen from the saved position
                errors.append(str(err))
                reader.close()
                reader = table.reader(position=saved)
    finally:
        reader.close()
    assert ids(seen) == Counter(range(400)), errors
    assert ids(read_transactional(table)) == Counter(range(400))
    assert verify(table).consistent
