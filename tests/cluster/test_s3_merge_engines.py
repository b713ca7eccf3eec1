"""A partial-update table on S3: two writers fill different columns of the same keys from
one snapshot; their commits race for the snapshot id without a lock, and the second's
changes are computed again from the snapshot it commits after (tablelog.writing.merged_repair)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pyarrow as pa
import pytest

import tablelog
from tablelog.testing.s3_server import S3Endpoint
from tablelog.verify import verify

pytestmark = pytest.mark.cluster

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("a", pa.string()), ("b", pa.int64())])


def test_two_writers_filling_columns_of_a_partial_update_table_on_s3_log_the_merged_rows(
    s3_server: S3Endpoint, tmp_path: Path,
) -> None:
    options = {
        "s3.endpoint": s3_server.endpoint, "s3.access-key": s3_server.access_key,
        "s3.secret-key": s3_server.secret_key, "log.system": "filesystem", "filesystem.path": str(tmp_path / "log"),
        "merge-engine": "partial-update",
    }
    table = tablelog.create_table(s3_server.url(f"pu-{uuid.uuid4().hex[:8]}"), "db.p", SCHEMA, primary_key=["id"],
                                  bucket=2, options=options)
    names, scores = table.write_task("names", 1), table.write_task("scores", 1)
    names.write([{"id": i, "a": f"n{i}", "b": None} for i in range(10)])
    scores.write([{"id": i, "a": None, "b": i * 10} for i in range(10)])
    receipts = [names.finish(), scores.finish()]  # both computed against no snapshot: all +I
    table.commit("names", 1, receipts[:1])
    table.commit("scores", 1, receipts[1:])
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        changes = reader.read_all(idle_timeout_s=0.3)
    got = sorted((c.snapshot_id, c.kind.value, c.row["id"], c.row["a"], c.row["b"]) for c in changes)
    assert got == sorted(
        [(1, "+I", i, f"n{i}", None) for i in range(10)]
        + [(2, "-U", i, f"n{i}", None) for i in range(10)]
        + [(2, "+U", i, f"n{i}", i * 10) for i in range(10)])
    assert {r["id"]: (r["a"], r["b"]) for r in table.rows().to_pylist()} == {i: (f"n{i}", i * 10) for i in range(10)}
    assert verify(table).consistent
