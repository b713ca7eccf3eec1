"""`tablelog describe` on a Pulsar table: each partition's earliest retained position
against what the oldest retained snapshot needs (the broker's retention decides)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pyarrow as pa

import tablelog
from tablelog.commit.retention import retention_report
from tablelog.table import internals


def test_each_pulsar_partitions_earliest_position_holds_what_the_snapshots_need(
    tmp_path: Path, pulsar_service_url: str
) -> None:
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    options = {"log.system": "pulsar", "pulsar.service-url": pulsar_service_url,
               "pulsar.topic": f"retention-{uuid.uuid4().hex[:8]}"}
    table = tablelog.create_table(str(tmp_path), "db.p", schema, primary_key=["id"], bucket=2, options=options)
    for batch in range(3):
        with table.writer() as writer:
            writer.write([{"id": i, "v": f"b{batch}"} for i in range(10)])
            writer.commit()
    with internals(table).open_log() as log:
        report = retention_report(internals(table), log)
        assert not log.deletes_before  # the broker's retention decides, not tablelog
    assert [r.partition for r in report] == [0, 1]
    for r in report:
        assert r.needed is not None and r.earliest <= r.needed < r.end and not r.short
