"""A dynamic-bucket table on S3: commits race for the snapshot id without a lock, and
each reconciles the keys' bucket index (read and written through S3) with the snapshot
it follows: two writers from one snapshot keep one row per key."""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

import tablelog
from tablelog.testing.s3_server import S3Endpoint
from tablelog.verify import verify

pytestmark = pytest.mark.cluster

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def test_two_writers_of_a_dynamic_bucket_table_on_s3_keep_one_row_per_key(s3_server: S3Endpoint, tmp_path: Path) -> None:
    options = {
        "s3.endpoint": s3_server.endpoint, "s3.access-key": s3_server.access_key,
        "s3.secret-key": s3_server.secret_key, "log.system": "filesystem", "filesystem.path": str(tmp_path / "log"),
        "log.system.partitions": "3", "dynamic-bucket.target-row-num": "15",
    }
    table = tablelog.create_table(s3_server.url(f"dyn-{uuid.uuid4().hex[:8]}"), "db.d", SCHEMA, primary_key=["id"],
                                  bucket=-1, options=options)
    first, second = table.write_task("a", 1), table.write_task("b", 1)
    first.write([{"id": i, "v": "a"} for i in range(0, 24)])
    second.write([{"id": i, "v": "b"} for i in range(30, 54)])  # both fill bucket 0 first
    table.commit("a", 1, [first.finish()])
    table.commit("b", 1, [second.finish()])
    late = table.write_task("c", 1)
    late.write([{"id": i, "v": "c"} for i in [*range(0, 24), *range(30, 54)]])
    table.commit("c", 1, [late.finish()])
    rows = table.rows().to_pylist()
    assert Counter(r["id"] for r in rows) == Counter([*range(0, 24), *range(30, 54)])
    assert {r["v"] for r in rows} == {"c"}
    assert verify(table).consistent
