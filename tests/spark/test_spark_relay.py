"""``tablelog.spark.relay``: the relay as a Spark streaming query publishes each foreign
change once. (Where it resumes, kills and counting on Kafka: tests/core/test_relay.py and
tests/kafka/test_kafka_relay.py; the query runs the same relay.)"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tablelog.spark import relay
from tablelog.table import Table
from tablelog.testing.relay_scenarios import (
    RelayScenarios,
    envelope,
    envelopes,
    foreign_commit,
    log_values,
    row,
)


def relayed(table: Table) -> list[str]:
    return [s.properties["tablelog.log.relayed-snapshots"] for s in table.snapshots()
            if s.commit_user == "tablelog-relay"]


def wait_for(check: Any, timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "the relay query did not relay in time"
        time.sleep(0.1)


def test_the_spark_relay_query_publishes_each_foreign_change_once(spark: Any, tmp_path: Path) -> None:
    table = RelayScenarios().make_table(tmp_path, {"log.system": "filesystem"})
    with table.writer() as writer:
        writer.write([row(1, "t1"), row(2, "t2")])
        writer.commit()
    foreign_commit(table, [("+U", row(1, "f1")), ("+I", row(3, "f3"))])
    query = relay(spark, warehouse=str(tmp_path), table="db.t", trigger_interval="100 milliseconds",
                  checkpoint_location=str(tmp_path / "checkpoint"))
    try:
        wait_for(lambda: relayed(table) == ["2"])
        foreign_commit(table, [("-D", row(2, ""))])
        wait_for(lambda: relayed(table) == ["2", "4"])
        assert query.isActive and query.exception() is None
    finally:
        query.stop()
    assert envelopes(log_values(table)) == {
        envelope("c", after=row(1, "t1")): 1, envelope("c", after=row(2, "t2")): 1,
        envelope("c", after=row(1, "f1")): 1, envelope("c", after=row(3, "f3")): 1,
        envelope("d", before=row(2, "t2")): 1,
    }
