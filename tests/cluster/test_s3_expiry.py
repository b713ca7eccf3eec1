"""Snapshot expiry and consumers on an ``s3://`` warehouse (SeaweedFS): what expires, what
stays, and pypaimon alone reads every kept snapshot as before."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa

import tablelog
from tablelog.table import internals
from tablelog.testing import NO_COMPACTION
from tablelog.testing.s3_server import S3Endpoint

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def object_keys(s3: S3Endpoint, warehouse: str) -> set[str]:
    client = s3.client()
    prefix = warehouse.removeprefix(f"s3://{s3.bucket}/") + "/"
    keys: set[str] = set()
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=s3.bucket, Prefix=prefix):
        keys.update(item["Key"][len(prefix):] for item in page.get("Contents", []))
    return keys


def plain_pypaimon_rows(s3: S3Endpoint, warehouse: str, snapshot_id: int) -> list[dict[str, Any]]:
    from pypaimon import CatalogFactory

    catalog = CatalogFactory.create({
        "warehouse": warehouse, "fs.s3.endpoint": s3.endpoint, "fs.s3.accessKeyId": s3.access_key,
        "fs.s3.accessKeySecret": s3.secret_key, "fs.s3.region": "us-east-1",
    })
    paimon = catalog.get_table("db.t").copy({"scan.snapshot-id": str(snapshot_id)})
    builder = paimon.new_read_builder()
    result = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    return sorted(result.select(["id", "v"]).to_pylist(), key=lambda r: r["id"])


def test_expiry_on_s3_removes_what_the_options_let_go_and_keeps_what_a_consumer_needs(
        s3_server: S3Endpoint, tmp_path: Path) -> None:
    warehouse = s3_server.url(f"expiry-{uuid.uuid4().hex[:8]}")
    options = {"s3.endpoint": s3_server.endpoint, "s3.access-key": s3_server.access_key,
               "s3.secret-key": s3_server.secret_key, "log.system": "filesystem",
               "filesystem.path": str(tmp_path / "log"), "snapshot.num-retained.min": "2",
               "snapshot.time-retained": "5 d",
               **NO_COMPACTION}  # snapshots are counted
    table = tablelog.create_table(warehouse, "db.t", SCHEMA, primary_key=["id"], bucket=2, options=options)
    with table.writer("w") as writer:
        for r in range(6):
            writer.write([{"id": r * 10 + i, "v": f"r{r}"} for i in range(3)] + [{"id": 0, "v": f"now-{r}"}])
            writer.commit()
    internals(table).files.consumers().record("dashboard", 3)
    before = {s: plain_pypaimon_rows(s3_server, warehouse, s) for s in range(1, 7)}
    keys_before = object_keys(s3_server, warehouse)

    now_expiring = tablelog.open_table(warehouse, "db.t", {**options, "snapshot.time-retained": "0 ms"})
    result = now_expiring.expire_snapshots()
    assert result.expired.snapshots == (1, 2) and result.held_by == "consumer 'dashboard'"
    keys_after = object_keys(s3_server, warehouse)
    assert "db.db/t/snapshot/snapshot-1" not in keys_after and "db.db/t/snapshot/snapshot-3" in keys_after
    removed = keys_before - keys_after
    assert removed == {"db.db/t/snapshot/snapshot-1", "db.db/t/snapshot/snapshot-2",
                       *(f"db.db/t/manifest/{m}" for m in result.expired.manifest_files)}
    for snapshot_id in range(3, 7):
        assert plain_pypaimon_rows(s3_server, warehouse, snapshot_id) == before[snapshot_id]

    consumers = {c.consumer_id: c for c in internals(now_expiring).files.consumers().all()}
    assert consumers["dashboard"].next_snapshot == 3 and consumers["dashboard"].modified_millis is not None
    internals(now_expiring).files.consumers().delete("dashboard")
    assert now_expiring.expire_snapshots().expired.snapshots == (3, 4)
    assert [s.id for s in now_expiring.snapshots()] == [5, 6]
    assert plain_pypaimon_rows(s3_server, warehouse, 6) == before[6]


def test_writer_leases_on_s3_keep_a_slower_writers_records_until_its_commit_removes_them(
        s3_server: S3Endpoint, tmp_path: Path) -> None:
    warehouse = s3_server.url(f"leases-{uuid.uuid4().hex[:8]}")
    options = {"s3.endpoint": s3_server.endpoint, "s3.access-key": s3_server.access_key,
               "s3.secret-key": s3_server.secret_key, "log.system": "filesystem",
               "filesystem.path": str(tmp_path / "log"), "filesystem.segment-bytes": "1", **NO_COMPACTION}
    table = tablelog.create_table(warehouse, "db.t", SCHEMA, primary_key=["id"], bucket=2, options=options)
    slow = table.write_task("slow", 1)
    slow.write([{"id": i, "v": "slow"} for i in range(40)])
    slow_receipt = slow.finish()
    assert {k for k in object_keys(s3_server, warehouse) if "/log-lease/lease-" in k} == {
        f"db.db/t/log-lease/lease-{slow.token}"}
    fast = table.write_task("fast", 1)
    fast.write([{"id": 100 + i, "v": "fast"} for i in range(30)])
    assert table.commit("fast", 1, [fast.finish()]).committed  # its retention keeps the slow writer's records
    assert table.commit("slow", 1, [slow_receipt]).committed
    assert not any("/log-lease/lease-" in k for k in object_keys(s3_server, warehouse))
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        assert sorted(c.row["id"] for c in reader.read_all()) == [*range(40), *range(100, 130)]
