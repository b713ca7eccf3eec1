"""One local SparkSession for the Spark tests (master ``local[2,2]``: a failed task
attempt is retried once). Missing Java fails the tests; it never skips them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import tablelog
from tablelog.table import Table
from tablelog.testing import NO_COMPACTION
from tablelog.testing.spark_scenarios import spark_test_session


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    session = spark_test_session("local[2,2]")
    yield session
    session.stop()


@pytest.fixture
def large_bucket(tmp_path: Path) -> Table:
    """A table of one bucket of 19,800 rows: a compacted run of many files (16 kb), under a
    level-0 file of updates and deletes over all of its keys."""
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    table = tablelog.create_table(str(tmp_path / "large"), "db.large", schema, primary_key=["id"], bucket=1,
                                  options={**NO_COMPACTION, "log.system": "filesystem", "target-file-size": "16 kb"})
    for ids in (range(0, 20_000, 2), range(1, 20_000, 2)):
        with table.writer() as writer:
            writer.write([{"id": i, "name": f"name {i}"} for i in ids])
            writer.commit()
    table.compact()
    with table.writer() as writer:
        writer.write([("+U", {"id": i, "name": "updated"}) for i in range(0, 20_000, 50)]
                     + [("-D", {"id": i, "name": f"name {i}"}) for i in range(5, 20_000, 100)])
        writer.commit()
    return table


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/spark/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.spark)
