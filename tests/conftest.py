"""Servers every test directory shares, started once per session.

``kafka_bootstrap`` (session): the bootstrap address of a Tansu broker
(:mod:`tablelog.testing.kafka_server`), or the cluster ``TABLELOG_TEST_KAFKA_BOOTSTRAP``
names. It lives here, not in ``tests/kafka/``, because the cluster tests use the same
broker: one per session.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tablelog.testing.kafka_server import external_kafka, tansu_broker


@pytest.fixture(scope="session")
def kafka_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """TABLELOG_TEST_KAFKA_BOOTSTRAP, else a Tansu broker started for this session."""
    external = external_kafka()
    if external is not None:
        yield external
        return
    with tansu_broker(tmp_path_factory.mktemp("tansu")) as bootstrap:
        yield bootstrap
