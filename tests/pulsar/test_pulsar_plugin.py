"""The pulsar log system against a real Pulsar-protocol broker (pulsar-lite)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator

import attrs
import pytest

from tablelog.errors import OptionError, ProduceError, TopicError
from tablelog.logs.client import LogClient, LogSystem
from tablelog.logs.discovery import load_log_system
from tablelog.records import CommittedLog, LogConfig, ProduceBatch, SeekSpec
from tablelog.testing import ClientOpener, opened_clients

pytestmark = pytest.mark.pulsar

ConfigFactory = Callable[..., LogConfig]


@pytest.fixture(scope="module")
def system() -> LogSystem:
    return load_log_system("pulsar")


@pytest.fixture
def open_client() -> Iterator[ClientOpener]:
    with opened_clients() as open_:
        yield open_


def batch(token: str, partition: int, n: int, *, first_seq: int = 0, ts: int = 1_000, prefix: str = "v"
          ) -> ProduceBatch:
    return ProduceBatch(
        token=token,
        partition=partition,
        keys=[f"k{first_seq + i}".encode() for i in range(n)],
        values=[f"{prefix}{first_seq + i}".encode() for i in range(n)],
        timestamp_ms=ts,
        first_seq=first_seq,
    )


def fetch_all(client: LogClient, partition: int, start: int, timeout_s: float = 5.0) -> list:
    """Every record from ``start`` up to the partition's current end position."""
    end = client.end_positions([partition])[partition]
    records = []
    position = start
    while position < end:
        result = client.fetch(partition, position, 1000, timeout_s)
        if not result.records:
            raise AssertionError(f"no record between {position} and the end position {end}")
        records.extend(result.records)
        position = result.next_position
    return records


def test_round_trip_carries_token_seq_key_value_and_timestamp(
    pulsar_log_config_factory: ConfigFactory, open_client: Callable[[LogConfig], LogClient]
) -> None:
    client = open_client(pulsar_log_config_factory(partitions=2))
    assert client.ensure_topic() == 2
    keys: list[bytes | None] = [b"plain", b"\xff\x00binary\x80", b"", None, '{"id": "ünï"}'.encode()]
    client.produce(ProduceBatch("tok-A", 1, keys, [b"a", b"b", b"", b"d", b"e"], 1_700_000_000_123, first_seq=10))
    client.flush(10)
    records = fetch_all(client, 1, 0)
    assert [(r.key, r.value, r.token, r.seq, r.timestamp_ms) for r in records] == [
        (k, v, "tok-A", 10 + i, 1_700_000_000_123) for i, (k, v) in enumerate(zip(keys, [b"a", b"b", b"", b"d", b"e"],
                                                                                 strict=True))
    ]
    assert fetch_all(client, 0, 0) == []  # partition 0 got nothing


def test_flush_returns_one_range_per_token_and_partition(
    pulsar_log_config_factory: ConfigFactory, open_client: Callable[[LogConfig], LogClient]
) -> None:
    client = open_client(pulsar_log_config_factory(partitions=2))
    client.ensure_topic()
    client.produce(batch("t1", 0, 300))
    client.produce(batch("t2", 0, 5, prefix="x"))
    client.produce(batch("t1", 1, 7))
    client.produce(batch("t1", 0, 4, first_seq=300))
    ranges = {(r.token, r.partition): r for r in client.flush(10)}
    assert set(ranges) == {("t1", 0), ("t2", 0), ("t1", 1)}
    assert ranges[("t1", 0)].count == 304 and ranges[("t2", 0)].count == 5 and ranges[("t1", 1)].count == 7

    ends = client.end_positions([0, 1])
    for partition in (0, 1):
        records = fetch_all(client, partition, 0)
        for (token, p), r in ranges.items():
            if p != partition:
                continue
            mine = [rec for rec in records if rec.token == token]
            assert (mine[0].position, mine[-1].position, len(mine)) == (r.first, r.last, r.count)
            assert [rec.seq for rec in mine] == list(range(r.count))
        assert ends[partition] == records[-1].position + 1  # end = last + 1, exclusive
    assert client.flush(5) == []  # nothing produced since the last flush


def test_a_token_alone_on_its_partitions_gets_contiguous_ranges_others_do_not(
    pulsar_log_config_factory: ConfigFactory, open_client: Callable[[LogConfig], LogClient]
) -> None:
    client = open_client(pulsar_log_config_factory(partitions=2))
    client.ensure_topic()
    client.produce(batch("alone", 1, 500))  # several batches (entries)
    client.produce(batch("t1", 0, 20))
    client.produce(batch("t2", 0, 20, prefix="x"))
    contiguous = {(r.token, r.partition): r.contiguous for r in client.flush(10)}
    assert contiguous == {("alone", 1): True, ("t1", 0): False, ("t2", 0): False}
    client.produce(batch("t1", 0, 20, first_seq=20))  # alone on partition 0 in this flush
    assert [r.contiguous for r in client.flush(10)] == [True]


def test_reader_resumes_exactly_from_a_saved_position(
    pulsar_log_config_factory: ConfigFactory, open_client: Callable[[LogConfig], LogClient],
    system: LogSystem,
) -> None:
    config = pulsar_log_config_factory(partitions=1)
    writer = open_client(config)
    writer.ensure_topic()
    for part in range(4):  # several batches, i.e. several broker entries with batch indexes
        writer.produce(batch("tok", 0, 250, first_seq=part * 250))
        writer.flush(10)
    everything = fetch_all(writer, 0, 0)
    assert [r.seq for r in everything] == list(range(1000))

    reader = open_client(config)
    seen = []
    position = reader.seek(0, SeekSpec.earliest())
    for size in (1, 7, 100, 3, 250):  # stop in the middle of batches
        result = reader.fetch(0, position, size, 5)
        seen.extend(result.records)
        position = result.next_position
    saved = position
    reader.close()

    resumed = open_client(config)  # a new process would do the same: open, fetch from the saved position
    seen.extend(fetch_all(resumed, 0, saved))
    assert [r.seq for r in seen] == list(range(1000))  # no skip, no repeat
    assert [r.position for r in seen] == [r.position for r in everything]

    # Any record's own position starts there; last + 1 starts right after it.
    for index in (0, 1, 249, 250, 777, 999):
        at = resumed.fetch(0, everything[index].position, 1, 5).records
        assert at[0].seq == index
        after = resumed.fetch(0, everything[index].position + 1, 1, 0.5 if index == 999 else 5).records
        assert [r.seq for r in after] == ([] if index == 999 else [index + 1])


def test_fetch_never_returns_an_entry_the_broker_delivers_again(
    pulsar_log_config_factory: ConfigFactory, open_client: Callable[[LogConfig], LogClient]
) -> None:
    # pulsar-lite re-sends already delivered entries to a reader now and then (seen
    # around 90,000 records in); fetch must still return each record once, in order.
    client = open_client(pulsar_log_config_factory(partitions=1))
    client.ensure_topic()
    total = 120_000
    for start in range(0, total, 20_000):
        client.produce(ProduceBatch("bulk", 0, [None] * 20_000, [(b"%d" % i).ljust(80, b".") for i in range(start, start + 20_000)],
                                    1_000, first_seq=start))
    (produced,) = client.flush(60)
    assert produced.count == total
    seqs: list[int] = []
    position = 0
    while len(seqs) < total:
        result = client.fetch(0, position, total, 5)
        assert result.records, f"stalled after {len(seqs)} records"
        positions = [r.position for r in result.records]
        assert positions[0] >= position and all(a < b for a, b in zip(positions, positions[1:], strict=False))
        seqs.extend(r.seq for r in result.records)
        position = result.next_position
    assert seqs == list(range(total))
    assert client.fetch(0, position, 10, 0.3).records == []


def test_seek_earliest_latest_timestamp_and_position(
    pulsar_log_config_factory: ConfigFactory, open_client: Callable[[LogConfig], LogClient]
) -> None:
    client = open_client(pulsar_log_config_factory(partitions=1))
    client.ensure_topic()
    assert client.seek(0, SeekSpec.earliest()) == 0 == client.seek(0, SeekSpec.latest())
    for i, ts in enumerate((1_000, 2_000, 3_000)):
        client.produce(batch("tok", 0, 10, first_seq=i * 10, ts=ts))
        client.flush(10)
    records = fetch_all(client, 0, 0)
    end = client.end_positions([0])[0]
    assert client.seek(0, SeekSpec.earliest()) == records[0].position
    assert client.seek(0, SeekSpec.latest()) == end == records[-1].position + 1
    assert client.seek(0, SeekSpec.timestamp(2_000)) == records[10].position
    assert client.seek(0, SeekSpec.timestamp(1_500)) == records[10].position
    assert client.seek(0, SeekSpec.timestamp(0)) == records[0].position
    assert client.seek(0, SeekSpec.timestamp(3_001)) == end  # later than every record: the end, never the start
    assert client.seek(0, SeekSpec.position(records[5].position)) == records[5].position


def test_records_flushed_before_a_broker_restart_are_fetched_at_the_same_positions(
    restartable_pulsar_broker, pulsar_log_config_factory: ConfigFactory,
    open_client: Callable[[LogConfig], LogClient],
) -> None:
    broker = restartable_pulsar_broker
    config = pulsar_log_config_factory(partitions=2, service_url=broker.service_url)
    writer = open_client(config)
    writer.ensure_topic()
    for partition in (0, 1):
        writer.produce(batch("before", partition, 500))
    ranges = writer.flush(10)
    before = {p: fetch_all(writer, p, 0) for p in (0, 1)}
    ends_before = writer.end_positions([0, 1])

    broker.restart()

    fresh = open_client(config)
    after = {p: fetch_all(fresh, p, 0) for p in (0, 1)}
    assert after == before
    assert fresh.end_positions([0, 1]) == ends_before
    assert {(r.partition, r.first, r.last, r.count) for r in ranges} == {
        (p, before[p][0].position, before[p][-1].position, 500) for p in (0, 1)}
    # The old connection reconnects: it can write on and read what it wrote before.
    writer.produce(batch("after", 0, 3))
    (new_range,) = writer.flush(20)
    assert new_range.first >= ends_before[0]
    assert [r.token for r in fetch_all(fresh, 0, ends_before[0])] == ["after"] * 3


def test_send_to_a_stopped_broker_raises_produce_error_within_the_timeout(
    restartable_pulsar_broker, pulsar_log_config_factory: ConfigFactory,
    open_client: Callable[[LogConfig], LogClient],
) -> None:
    broker = restartable_pulsar_broker
    client = open_client(pulsar_log_config_factory(partitions=2, service_url=broker.service_url))
    client.ensure_topic()
    client.produce(batch("ok", 1, 3))
    client.flush(10)
    broker.stop()
    started = time.monotonic()
    client.produce(batch("lost", 1, 5))
    with pytest.raises(ProduceError) as caught:
        client.flush(2.0)
    assert time.monotonic() - started < 6
    assert caught.value.partition == 1
    assert caught.value.topic is not None and caught.value.topic.endswith("-partition-1")
    assert "partition 1" in str(caught.value)


def test_missing_service_url_is_an_option_error_before_any_io(system: LogSystem) -> None:
    config = LogConfig(system="pulsar", table="db.t", topic="t", partitions=1, auto_register=True, options={})
    with pytest.raises(OptionError, match="pulsar.service-url"):
        system.open(config)


def test_unknown_option_lists_the_supported_keys(system: LogSystem) -> None:
    config = LogConfig(system="pulsar", table="db.t", topic="t", partitions=1, auto_register=True,
                       options={"service-url": "pulsar://127.0.0.1:1", "batching-max-mesages": "10"})
    with pytest.raises(OptionError) as caught:
        system.open(config)
    text = str(caught.value)
    assert "pulsar.batching-max-mesages" in text and "did you mean 'pulsar.batching-max-messages'" in text
    assert "pulsar.service-url" in text and "pulsar.auth-params" in text


def test_bare_topic_names_resolve_to_public_default(system: LogSystem) -> None:
    client = system.open(LogConfig(system="pulsar", table="db.t", topic="orders", partitions=3,
                                   auto_register=True, options={"service-url": "pulsar://127.0.0.1:1"}))
    try:
        assert client.connection.config.topic == "persistent://public/default/orders"
        assert client.connection.config.partition_topic(2) == "persistent://public/default/orders-partition-2"
    finally:
        client.close()


def test_secrets_never_show_in_reprs_errors_or_logs(
    system: LogSystem, caplog: pytest.LogCaptureFixture, pulsar_service_url: str
) -> None:
    secret = "s3cr3t-VALUE-42"
    caplog.set_level(logging.DEBUG)
    token_config = LogConfig(system="pulsar", table="db.t", topic="t", partitions=1, auto_register=True,
                             options={"service-url": pulsar_service_url, "token": secret})
    plugin_config = LogConfig(system="pulsar", table="db.t", topic="t", partitions=1, auto_register=True,
                              options={"service-url": "pulsar://127.0.0.1:1", "auth-plugin": "basic",
                                       "auth-params": secret, "operation-timeout-seconds": "1",
                                       "connection-timeout-ms": "200"})
    shown: list[str] = [repr(token_config), repr(plugin_config)]
    for config in (token_config, plugin_config):
        client = system.open(config)
        shown += [repr(client.connection), str(client.connection.config), repr(client)]
        try:
            client.ensure_topic()
        except Exception as err:  # noqa: BLE001 - any failure text must be clean
            shown.append(str(err))
            shown.append(repr(err))
        client.close()
    bad = LogConfig(system="pulsar", table="db.t", topic="t", partitions=1, auto_register=True,
                    options={"service-url": "pulsar://127.0.0.1:1", "token": secret, "auth-plugin": "x"})
    with pytest.raises(OptionError) as caught:
        system.open(bad)
    shown.append(str(caught.value))
    shown.append(caplog.text)
    specs = {s.key: s for s in system.option_specs()}
    assert specs["pulsar.auth-params"].secret and specs["pulsar.token"].secret
    for text in shown:
        assert secret not in text


def test_ensure_topic_without_auto_register_reports_a_missing_topic(
    pulsar_log_config_factory: ConfigFactory, open_client: Callable[[LogConfig], LogClient]
) -> None:
    client = open_client(pulsar_log_config_factory(partitions=2, auto_register=False))
    with pytest.raises(TopicError, match="not found"):
        client.ensure_topic()


def test_ensure_topic_without_auto_register_accepts_a_created_empty_topic(
    pulsar_log_config_factory: ConfigFactory, open_client: Callable[[LogConfig], LogClient]
) -> None:
    config = pulsar_log_config_factory(partitions=2)
    assert open_client(config).ensure_topic() == 2  # creates it, writes no record
    strict = open_client(attrs.evolve(config, auto_register=False))
    assert strict.ensure_topic() == 2


def test_ensure_topic_names_both_counts_when_the_topic_has_too_few_partitions(
    pulsar_log_config_factory: ConfigFactory, open_client: Callable[[LogConfig], LogClient]
) -> None:
    config = pulsar_log_config_factory(partitions=2)
    assert open_client(config).ensure_topic() == 2
    with pytest.raises(TopicError, match="has 2 partitions but the table needs 3"):
        open_client(attrs.evolve(config, partitions=3)).ensure_topic()
    assert open_client(attrs.evolve(config, partitions=1)).ensure_topic() == 2


def test_commit_is_an_idempotent_no_op(
    pulsar_log_config_factory: ConfigFactory, open_client: Callable[[LogConfig], LogClient]
) -> None:
    client = open_client(pulsar_log_config_factory(partitions=1))
    client.ensure_topic()
    client.produce(batch("tok", 0, 3))
    ranges = client.flush(10)
    committed = CommittedLog(snapshot_id=1, writer="w", commit_identifier=1, ranges=tuple(ranges),
                             end_positions=client.end_positions([0]))
    client.commit(committed)
    client.commit(committed)
    assert [r.seq for r in fetch_all(client, 0, 0)] == [0, 1, 2]
