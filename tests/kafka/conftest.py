"""Kafka test helpers. The broker itself, ``kafka_bootstrap`` (session), is shared with the
cluster tests and lives in ``tests/conftest.py`` (:mod:`tablelog.testing.kafka_server`).

``kafka_log_config_factory``: ``(partitions=2, auto_register=True, **options)``
-> a LogConfig for a fresh, unique topic on that broker.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from tablelog.records import LogConfig


def unique_topic(prefix: str = "tl") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def kafka_log_config_factory(kafka_bootstrap: str) -> Callable[..., LogConfig]:
    """LogConfig(system="kafka", table="db.t", topic=<fresh unique>, ...) for the session broker.

    Extra keyword options go to ``LogConfig.options`` as given (client keys use dots).
    """

    def make(
        partitions: int = 2,
        auto_register: bool = True,
        *,
        topic: str | None = None,
        options: dict[str, Any] | None = None,
    ) -> LogConfig:
        return LogConfig(
            system="kafka",
            table="db.t",
            topic=topic or unique_topic(),
            partitions=partitions,
            auto_register=auto_register,
            options={"bootstrap.servers": kafka_bootstrap, **{k: str(v) for k, v in (options or {}).items()}},
        )

    return make
