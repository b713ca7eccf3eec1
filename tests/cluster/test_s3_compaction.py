"""Compaction on an S3 warehouse racing a writer process: the COMPACT snapshot is created
with a conditional put like a writer's, the loser of a race for a snapshot id tries the
next one, and no row is lost or comes back."""

from __future__ import annotations

import subprocess
import textwrap
import uuid
from pathlib import Path

import pyarrow as pa
import pytest

import tablelog
from tablelog.commit.compaction import compact
from tablelog.table import internals
from tablelog.testing.processes import start_python
from tablelog.testing.s3_server import S3Endpoint

pytestmark = pytest.mark.cluster

COMMITS = 25

WRITER = textwrap.dedent("""
    import tablelog
    from tablelog.testing.processes import child_config
    config = child_config()  # on standard input: the options hold the S3 secret key
    table = tablelog.open_table(config["warehouse"], "db.race", config["options"])
    with table.writer("w") as writer:
        for i in range(int(config["commits"])):
            writer.write([{"id": k, "v": f"c{i}"} for k in range(3 * i, 3 * i + 8)])
            writer.write([("-D", {"id": 3 * i + 1, "v": f"c{i}"})])
            writer.commit()
""")


def test_compactions_on_s3_racing_a_writer_lose_and_resurrect_no_row(s3_server: S3Endpoint, tmp_path: Path) -> None:
    warehouse = s3_server.url(f"compact-{uuid.uuid4().hex[:8]}")
    options = {
        "s3.endpoint": s3_server.endpoint, "s3.access-key": s3_server.access_key,
        "s3.secret-key": s3_server.secret_key, "log.system": "filesystem",
        "filesystem.path": str(tmp_path / "log"), "num-sorted-run.compaction-trigger": "2",
    }
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    table = tablelog.create_table(warehouse, "db.race", schema, primary_key=["id"], bucket=2, options=options)
    config = {"warehouse": warehouse, "options": options, "commits": COMMITS}
    writer = start_python(WRITER, config, stderr=subprocess.PIPE, text=True)
    ours = 0
    try:
        while writer.poll() is None:
            if compact(internals(table)).snapshot_id is not None:
                ours += 1
    finally:
        _, err = writer.communicate(timeout=600)
    assert writer.returncode == 0, err[-3000:]
    kinds = [s.commit_kind for s in table.snapshots()]
    assert kinds.count("APPEND") == COMMITS and kinds.count("COMPACT") >= max(ours, 1)
    assert [s.id for s in table.snapshots()] == list(range(1, len(kinds) + 1))
    expected: dict[int, str] = {}
    for i in range(COMMITS):
        expected.update({k: f"c{i}" for k in range(3 * i, 3 * i + 8)})
        expected.pop(3 * i + 1)
    assert {r["id"]: r["v"] for r in table.rows().to_pylist()} == expected
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        assert len(reader.read_all()) == COMMITS * 9
