"""Servers every test directory shares, started once per session.

``kafka_bootstrap`` (session): the bootstrap address of a Tansu broker
(:mod:`tablelog.testing.kafka_server`), or the cluster ``TABLELOG_TEST_KAFKA_BOOTSTRAP``
names. It lives here, not in ``tests/kafka/``, because the cluster tests use the same
broker: one per session.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tablelog.testing.kafka_server import external_kafka, tansu_broker


@pytest.fixture(scope="session", autouse=True)
def lookup_cache_directory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The session's lookup cache (decoded data files of merge-engine tables) in its own
    temporary directory, not the machine's: pytest removes it with the session's others.
    Set in the environment, so the processes tests start (Spark's workers) use it too."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TABLELOG_LOOKUP_CACHE_DIR", str(tmp_path_factory.mktemp("lookup-cache")))
        yield


@pytest.fixture(scope="session")
def kafka_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """TABLELOG_TEST_KAFKA_BOOTSTRAP, else a Tansu broker started for this session."""
    external = external_kafka()
    if external is not None:
        yield external
        return
    with tansu_broker(tmp_path_factory.mktemp("tansu")) as bootstrap:
        yield bootstrap


@pytest.fixture(scope="session")
def read_with_pypaimon() -> Callable[[str, str], tuple[list[str], list[dict[str, Any]]]]:
    """Reads a table with pypaimon alone (its own catalog, none of tablelog): its partition
    columns and its rows."""

    def read(warehouse: str, identifier: str) -> tuple[list[str], list[dict[str, Any]]]:
        from pypaimon import CatalogFactory

        table = CatalogFactory.create({"warehouse": warehouse}).get_table(identifier)
        builder = table.new_read_builder()
        result = builder.new_read().to_arrow(builder.new_scan().plan().splits())
        found = [] if result is None else result.to_pylist()
        return list(table.partition_keys), [{k: v for k, v in r.items() if k != "_tablelog_kind"} for r in found]

    return read
