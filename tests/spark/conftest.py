"""One local SparkSession for the Spark tests (master ``local[2,2]``: a failed task
attempt is retried once). Missing Java fails the tests; it never skips them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tablelog.testing.spark_scenarios import spark_test_session


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    session = spark_test_session("local[2,2]")
    yield session
    session.stop()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/spark/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.spark)
