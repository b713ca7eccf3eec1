"""The issue's show case on a real Kafka-protocol broker: a reader resumed from a position
taken before the log lost its range (Tansu restarted on memory storage: every record gone;
Tansu has no DeleteRecords to play retention with) gets every change exactly once through
the table files, then the new commits from the log; with the snapshots expired as well it
gets a clear error."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

import tablelog
from tablelog.table import internals
from tablelog.testing import NO_COMPACTION
from tablelog.testing.scenarios import SCHEMA, rows

OPTIONS = {"log.system": "kafka", "kafka.admin-timeout-ms": "5000", "log.fetch-timeout-ms": "3000",
           "snapshot.num-retained.min": "1", "snapshot.time-retained": "1 h",
           **NO_COMPACTION}  # the test counts snapshots, one per commit


def _commit(table: tablelog.Table, rounds: range) -> Counter[int]:
    written: Counter[int] = Counter()
    with table.writer("w") as writer:
        for r in rounds:
            writer.write(rows(50, start=r * 50, tag=f"r{r}"))
            writer.commit()
            written.update(range(r * 50, r * 50 + 50))
    return written


def test_a_reader_resumed_after_the_log_lost_its_range_gets_every_change_once_from_the_table_then_the_log(
    tmp_path: Path, tansu  # type: ignore[no-untyped-def]
) -> None:
    options = {**OPTIONS, "kafka.bootstrap.servers": tansu.bootstrap}
    table = tablelog.create_table(str(tmp_path), "db.fallback", SCHEMA, primary_key=["id"], bucket=2,
                                  options=options)
    _commit(table, range(1))
    position = table.reader(consistency="transactional", scan_mode="latest").position.to_json()
    expected = _commit(table, range(1, 4))  # snapshots 2..4, taken by the broker restart below
    tansu.restart()  # memory storage: the topic and every record are gone
    with internals(table).open_log() as log:
        log.ensure_topic()
    expected += _commit(table, range(4, 6))  # snapshots 5, 6: in the new topic
    with table.reader(position) as reader:
        changes = reader.read_all(idle_timeout_s=0.5)
        assert reader.position.snapshot == 6
    assert Counter(c.row["id"] for c in changes) == expected  # each once: 250 changes


def test_with_the_snapshots_expired_as_well_the_resumed_reader_gets_a_clear_error(
    tmp_path: Path, tansu  # type: ignore[no-untyped-def]
) -> None:
    options = {**OPTIONS, "kafka.bootstrap.servers": tansu.bootstrap}
    table = tablelog.create_table(str(tmp_path), "db.gone", SCHEMA, primary_key=["id"], bucket=2,
                                  options=options)
    _commit(table, range(1))
    position = table.reader(consistency="transactional", scan_mode="latest").position.to_json()
    _commit(table, range(1, 4))
    tansu.restart()
    tablelog.open_table(str(tmp_path), "db.gone", {**options, "snapshot.time-retained": "0 ms"}).expire_snapshots()
    with table.reader(position) as reader, pytest.raises(tablelog.errors.TablelogError) as gone:
        reader.read_all(idle_timeout_s=0.5)
    message = str(gone.value)
    assert "snapshot 2 expired before this reader read it (earliest kept: 4)" in message
    assert "scan.mode=latest-full" in message and "consumer-id" in message
