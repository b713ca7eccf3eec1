"""An idle eventual reader on Kafka waits on all its partitions with one consumer
(``wait_for_records``): its calls to the log do not grow with the partitions, and a record
written while it waits is still returned at once on every partition."""

from __future__ import annotations

import uuid
from pathlib import Path

import pyarrow as pa
import pytest

from tablelog.table import Table
from tablelog.tables import create_table
from tablelog.testing.idle_reader import idle_poll_calls, latency_by_partition

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def _table(tmp_path: Path, kafka_bootstrap: str, buckets: int) -> Table:
    return create_table(str(tmp_path / "wh"), f"db.t_{uuid.uuid4().hex[:8]}", SCHEMA, primary_key=["id"],
                        bucket=buckets, options={"log.system": "kafka", "kafka.bootstrap.servers": kafka_bootstrap})


@pytest.mark.parametrize("partitions", [1, 4])
def test_an_idle_eventual_reader_on_kafka_makes_the_same_few_log_calls_whatever_its_partitions(
    tmp_path: Path, kafka_bootstrap: str, partitions: int
) -> None:
    calls, took, changes = idle_poll_calls(_table(tmp_path, kafka_bootstrap, partitions), timeout_s=1.0)
    assert changes == [] and took >= 0.95
    assert calls.total <= 2, calls.counts
    assert set(calls.counts) == ({"wait_for_records"} if partitions > 1 else {"fetch"}), calls.counts


def test_an_idle_eventual_reader_on_kafka_returns_a_record_written_while_it_waits_at_once_on_every_partition(
    tmp_path: Path, kafka_bootstrap: str
) -> None:
    latency = latency_by_partition(_table(tmp_path, kafka_bootstrap, 4), lambda i: {"id": i, "name": f"n{i}"})
    assert sorted(latency) == [0, 1, 2, 3]
    assert max(latency.values()) < 0.5, latency
