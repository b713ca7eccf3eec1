"""Conformance tests of a log that cannot be reached: an outage is ``LogUnavailableError``."""

from __future__ import annotations

import pytest

from tablelog.errors import LogUnavailableError
from tablelog.records import LogConfig
from tablelog.testing.conformance.base import ClientOpener, ConformanceBase, new_token


class UnreachableLogTests(ConformanceBase):
    """Needs the fixture ``unreachable_log_config`` (see :mod:`tablelog.testing.conformance`)."""

    @pytest.fixture
    def unreachable_log_config(self) -> LogConfig:
        message = (
            "provide an `unreachable_log_config` fixture: a LogConfig of your log system whose log "
            "cannot be reached (see tablelog.testing.conformance)"
        )
        pytest.fail(message, pytrace=False)
        raise AssertionError(message)  # not reached; for type checkers that do not know pytest

    def test_ensure_topic_on_an_unreachable_log_raises_log_unavailable_not_topic_error(
        self, unreachable_log_config: LogConfig, open_client: ClientOpener
    ) -> None:
        with pytest.raises(LogUnavailableError):
            open_client(unreachable_log_config).ensure_topic()

    def test_writing_to_an_unreachable_log_raises_log_unavailable_by_the_flush(
        self, unreachable_log_config: LogConfig, open_client: ClientOpener
    ) -> None:
        # open_log may connect lazily and produce may only queue: whichever hook finds out,
        # an outage is a LogUnavailableError, never a ProduceError or a TopicError.
        with pytest.raises(LogUnavailableError):
            client = open_client(unreachable_log_config)
            self.produce(client, new_token(), 0, 2)
            client.flush(self.unreachable_flush_timeout_s)
