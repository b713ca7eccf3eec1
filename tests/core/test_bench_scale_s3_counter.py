"""How ``python -m bench.scale``'s S3 request counter (bench/scale/s3_counter.py) names a
request: its operation and the table folder it touches. Loaded from its file: the
benchmarks are not a package the test environment installs."""

from __future__ import annotations

import importlib.util
from pathlib import Path


def test_requests_are_named_by_operation_and_the_table_folder_they_touch() -> None:
    path = Path(__file__).resolve().parents[2] / "bench" / "scale" / "s3_counter.py"
    spec = importlib.util.spec_from_file_location("bench_scale_s3_counter", path)
    assert spec is not None and spec.loader is not None
    counter = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(counter)
    table = "/tablelog/wh/bench.db/scale"
    assert counter.classify("PUT", f"{table}/p=1/bucket-3/data-1.parquet") == ("PUT", "data")
    assert counter.classify("HEAD", f"{table}/snapshot/snapshot-7") == ("HEAD", "snapshot")
    assert counter.classify("GET", f"{table}/manifest/manifest-list-1?x-id=GetObject") == ("GET", "manifest")
    assert counter.classify("GET", "/tablelog?list-type=2&prefix=wh%2Fbench.db%2Fscale%2Fschema%2F") == ("LIST", "schema")
    assert counter.classify("POST", "/tablelog?delete") == ("DELETE-BATCH", "other")
    assert counter.classify("DELETE", f"{table}/log-lease/lease-1") == ("DELETE", "other")
