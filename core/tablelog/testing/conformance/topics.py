"""Conformance tests of ``ensure_topic`` and ``option_specs``: creating and checking a topic."""

from __future__ import annotations

import re

import attrs
import pytest

from tablelog.errors import TopicError
from tablelog.logs.discovery import load_log_system
from tablelog.records import LogConfig, SeekSpec
from tablelog.testing.conformance.base import (
    ClientOpener,
    ConfigFactory,
    ConformanceBase,
    new_token,
)
from tablelog.topic_owners import stream_config


class TopicTests(ConformanceBase):
    """A topic is created once with the partitions asked for, and checked against them."""

    def test_option_specs_use_the_system_prefix(self, config: LogConfig) -> None:
        specs = load_log_system(config.system).option_specs()
        assert all(spec.key.startswith(config.system + ".") for spec in specs), [
            s.key for s in specs
        ]

    def test_end_positions_of_a_topic_that_does_not_exist_raise_a_topic_error(
        self, log_config_factory: ConfigFactory, open_client: ClientOpener
    ) -> None:
        # How a reader tells a missing topic (a log option given wrong) from records the log lost.
        client = open_client(log_config_factory())
        with pytest.raises(TopicError):
            client.end_positions([0])

    def test_a_further_stream_of_the_table_is_stored_apart_from_its_topic(
        self, config: LogConfig, open_client: ClientOpener
    ) -> None:
        # The projection stream's config: the topic, and the option naming it where given
        # (OptionSpec(names_topic=True)), with a suffix. A plugin that takes its storage from
        # an option it does not declare so would put both streams' records in one place.
        main, side = open_client(config), open_client(stream_config(config, ".projection"))
        main.ensure_topic()
        side.ensure_topic()
        self.produce(main, new_token(), 0, 3)
        self.flush(main)
        start = side.seek(0, SeekSpec.earliest())
        assert side.fetch(0, start, 10, 0.2).records == [], "the further stream holds the topic's records"

    def test_ensure_topic_creates_requested_partitions(
        self, log_config_factory: ConfigFactory, open_client: ClientOpener
    ) -> None:
        client = open_client(log_config_factory(partitions=3))
        assert client.ensure_topic() == 3
        start = client.seek(2, SeekSpec.latest())
        batch = self.produce(client, new_token(), 2, 2)
        self.flush(client)
        assert self.payload(self.read_all(client, 2, start, 2)) == self.expected(batch)

    def test_ensure_topic_is_idempotent(self, config: LogConfig, open_client: ClientOpener) -> None:
        first = open_client(config)
        assert first.ensure_topic() == 2
        assert first.ensure_topic() == 2
        assert open_client(config).ensure_topic() == 2

    def test_ensure_topic_rejects_topic_with_fewer_partitions_than_needed(
        self, config: LogConfig, open_client: ClientOpener
    ) -> None:
        assert open_client(config).ensure_topic() == 2
        bigger = open_client(attrs.evolve(config, partitions=4))
        with pytest.raises(TopicError) as raised:
            bigger.ensure_topic()
        message = str(raised.value)
        assert re.search(r"\b2\b", message) and re.search(r"\b4\b", message), (
            f"the error must name both partition counts: {message}"
        )

    def test_ensure_topic_accepts_topic_with_more_partitions_than_needed(
        self, log_config_factory: ConfigFactory, open_client: ClientOpener
    ) -> None:
        config = log_config_factory(partitions=3)
        assert open_client(config).ensure_topic() == 3
        assert open_client(attrs.evolve(config, partitions=2)).ensure_topic() == 3

    def test_ensure_topic_without_auto_register_fails_for_missing_topic(
        self, log_config_factory: ConfigFactory, open_client: ClientOpener
    ) -> None:
        client = open_client(log_config_factory(auto_register=False))
        with pytest.raises(TopicError):
            client.ensure_topic()

    def test_ensure_topic_without_auto_register_accepts_existing_topic(
        self, config: LogConfig, open_client: ClientOpener
    ) -> None:
        assert open_client(config).ensure_topic() == 2
        assert open_client(attrs.evolve(config, auto_register=False)).ensure_topic() == 2
