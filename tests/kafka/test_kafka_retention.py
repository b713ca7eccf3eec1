"""`tablelog describe` on a Kafka table: each partition's earliest retained offset against
what the oldest retained snapshot needs (Kafka's retention is the broker's, not tablelog's)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pyarrow as pa
from click.testing import CliRunner

import tablelog
from tablelog.cli import cli
from tablelog.commit.retention import retention_report
from tablelog.table import internals


def test_describe_shows_each_kafka_partitions_earliest_offset_against_what_the_snapshots_need(
    tmp_path: Path, kafka_bootstrap: str
) -> None:
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    options = {"log.system": "kafka", "kafka.bootstrap.servers": kafka_bootstrap,
               "kafka.topic": f"retention-{uuid.uuid4().hex[:8]}"}
    table = tablelog.create_table(str(tmp_path), "db.k", schema, primary_key=["id"], bucket=2, options=options)
    for batch in range(3):
        with table.writer() as writer:
            writer.write([{"id": i, "v": f"b{batch}"} for i in range(10)])
            writer.commit()
    with internals(table).open_log() as log:
        report = retention_report(internals(table), log)
        assert not log.deletes_before  # the broker's retention decides, not tablelog
    assert [(r.partition, r.earliest, r.needed, r.short) for r in report] == [(0, 0, 0, False), (1, 0, 0, False)]
    assert all(r.end > 0 for r in report)
    result = CliRunner().invoke(cli, ["describe", "-w", str(tmp_path), "db.k", "--format", "json",
                                      "-o", f"kafka.bootstrap.servers={kafka_bootstrap}"])
    assert result.exit_code == 0, result.output
    retention = json.loads(result.output)["log"]["retention"]
    assert [(r["partition"], r["earliest"], r["needed"], r["short"]) for r in retention] == [
        (0, 0, 0, False), (1, 0, 0, False)
    ]
