"""Consumer ids (Paimon's ``consumer-id``): a reader records its next snapshot in the
table's ``consumer/`` folder, and expiry keeps what registered consumers still need."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

from tablelog.cli import cli
from tablelog.errors import OptionError
from tablelog.table import Table, internals
from tablelog.tables import create_table, open_table
from tablelog.testing import NO_COMPACTION

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def make_table(tmp_path: Path, **options: str) -> Table:
    return create_table(
        str(tmp_path / "wh"), "db.t", SCHEMA, primary_key=["id"], bucket=2,
        options={"log.system": "filesystem", "snapshot.num-retained.min": "1", "snapshot.time-retained": "0 ms",
                 "snapshot.expire.execution-mode": "sync", **NO_COMPACTION, **options},
    )


def commit_rounds(table: Table, rounds: int, start: int = 0) -> None:
    with table.writer("w") as writer:
        for r in range(start, start + rounds):
            writer.write([{"id": r * 2 + i, "v": f"r{r}"} for i in range(2)])
            writer.commit()


def consumer_file(table: Table, consumer_id: str) -> Path:
    return Path(internals(table).files.path) / "consumer" / f"consumer-{consumer_id}"


def snapshot_ids(table: Table) -> list[int]:
    return [s.id for s in table.snapshots()]


def test_a_reader_with_a_consumer_id_records_its_next_snapshot_as_paimon_stores_it(tmp_path: Path) -> None:
    table = make_table(tmp_path, **{"snapshot.time-retained": "1 h"})
    commit_rounds(table, 3)
    with table.reader(consistency="transactional", scan_mode="earliest", consumer_id="billing") as reader:
        assert len(reader.poll(max_records=100)) == 6
        # registered by the first poll, at the position it started from
        assert json.loads(consumer_file(table, "billing").read_text()) == {"nextSnapshot": 1}
        reader.poll()  # the next poll records where the previous one left the reader
        assert json.loads(consumer_file(table, "billing").read_text()) == {"nextSnapshot": 4}
    # pypaimon's own ConsumerManager reads it
    from pypaimon.consumer import ConsumerManager

    manager = ConsumerManager(internals(table).files.paimon.file_io, internals(table).files.path)
    assert manager.consumers() == {"billing": 4}


def test_expiry_keeps_every_snapshot_a_registered_consumer_still_needs(tmp_path: Path) -> None:
    table = make_table(tmp_path)
    commit_rounds(table, 2)
    reader = table.reader(consistency="transactional", scan_mode="earliest", consumer_id="slow")
    assert [c.row["id"] for c in reader.poll(max_records=2)] == [2, 3]  # snapshot 1 expired already
    reader.poll(max_records=1)  # records the consumer at snapshot 3
    commit_rounds(table, 5, start=2)
    assert snapshot_ids(table)[0] == 3
    result = table.expire_snapshots()
    assert result.held_by == "consumer 'slow'" and result.earliest_kept == 3
    changes = reader.read_all(idle_timeout_s=0.3)
    assert sorted(c.row["id"] for c in changes) == list(range(4, 14))  # the reader lost nothing
    reader.close()
    commit_rounds(table, 1, start=7)
    assert snapshot_ids(table) == [8]  # it has read everything: nothing held any more


def test_a_reader_with_a_consumer_id_resumes_where_the_consumer_stopped(tmp_path: Path) -> None:
    table = make_table(tmp_path, **{"snapshot.time-retained": "1 h"})
    commit_rounds(table, 3)
    with table.reader(consistency="transactional", scan_mode="earliest", consumer_id="etl") as reader:
        first = reader.read_all(idle_timeout_s=0.2)
    commit_rounds(table, 2, start=3)
    with table.reader(consistency="transactional", consumer_id="etl") as reader:
        rest = reader.read_all(idle_timeout_s=0.2)
    assert sorted(c.row["id"] for c in first) == list(range(6))
    assert sorted(c.row["id"] for c in rest) == list(range(6, 10))


def test_a_consumer_unseen_for_the_expiration_time_stops_holding_snapshots_and_is_removed(tmp_path: Path) -> None:
    table = make_table(tmp_path, **{"consumer.expiration-time": "1 h"})
    commit_rounds(table, 2)
    with table.reader(consistency="transactional", scan_mode="earliest", consumer_id="gone") as reader:
        reader.read_all(idle_timeout_s=0.2)
    commit_rounds(table, 3, start=2)
    assert snapshot_ids(table) == [3, 4, 5]  # held by the consumer
    two_hours_ago = time.time() - 7200
    os.utime(consumer_file(table, "gone"), (two_hours_ago, two_hours_ago))
    result = table.expire_snapshots()
    assert result.consumers_removed == ("gone",)
    assert not consumer_file(table, "gone").exists()
    assert snapshot_ids(table) == [5]


def test_an_eventual_reader_with_a_consumer_id_is_refused(tmp_path: Path) -> None:
    table = make_table(tmp_path)
    with pytest.raises(OptionError, match="consumer-id='x' is for transactional readers"):
        table.reader(consistency="eventual", consumer_id="x")


def test_a_consumer_id_that_is_not_a_file_name_is_refused(tmp_path: Path) -> None:
    table = make_table(tmp_path)
    with pytest.raises(OptionError, match=r"invalid value '\.\./x' for option 'consumer-id'"):
        table.reader(consistency="transactional", consumer_id="../x")


def test_describe_lists_consumers_and_how_far_behind_each_is(tmp_path: Path) -> None:
    table = make_table(tmp_path, **{"snapshot.time-retained": "1 h"})
    commit_rounds(table, 4)
    internals(table).files.consumers().record("dashboard", 2)
    internals(table).files.consumers().record("archiver", 5)
    runner = CliRunner()
    result = runner.invoke(cli, ["describe", "db.t", "-w", table.warehouse.path, "--format", "json"])
    assert result.exit_code == 0, result.output
    consumers = {c["id"]: c for c in json.loads(result.output)["consumers"]}
    assert consumers["dashboard"]["next_snapshot"] == 2 and consumers["dashboard"]["snapshots_behind"] == 3
    assert consumers["archiver"]["snapshots_behind"] == 0
    text = runner.invoke(cli, ["describe", "db.t", "-w", table.warehouse.path]).output
    assert "dashboard" in text and "archiver" in text


def test_a_spark_stream_with_a_consumer_id_records_it_when_spark_commits_a_batch(tmp_path: Path) -> None:
    from tablelog.spark.options import SourceOptions
    from tablelog.spark.source import TablelogStreamReader

    table = make_table(tmp_path, **{"snapshot.time-retained": "1 h"})
    commit_rounds(table, 2)
    options = SourceOptions.parse({"warehouse": table.warehouse.path, "table": "db.t", "consumer-id": "query1",
                                   "log.consistency": "transactional", "scan.mode": "earliest"})
    assert "consumer-id" not in options.runtime_options  # the executors' readers never record it
    source = TablelogStreamReader(options)
    start = source.initialOffset()
    assert json.loads(consumer_file(table, "query1").read_text()) == {"nextSnapshot": 1}
    end = source.latestOffset(start)
    source.commit(end)
    assert json.loads(consumer_file(table, "query1").read_text()) == {"nextSnapshot": 3}
    reopened = open_table(table.warehouse.path, "db.t")
    assert internals(reopened).files.consumers().get("query1") == 3
