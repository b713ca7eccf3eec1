"""Specs of the kafka log system beyond the conformance suite, on a real broker."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from kafka import KafkaConsumer, TopicPartition

from tablelog.errors import (
    LogUnavailableError,
    OptionError,
    PositionOutOfRangeError,
    ProduceError,
    TopicError,
)
from tablelog.logs.client import LogClient
from tablelog.logs.discovery import load_log_system
from tablelog.records import LogConfig, LogRecord, ProduceBatch, SeekSpec
from tablelog.testing import ClientOpener, opened_clients

Factory = Callable[..., LogConfig]
SENTINEL = "SENTINEL-123"


def now_ms() -> int:
    return int(time.time() * 1000)


def token() -> str:
    return f"tok-{uuid.uuid4().hex}"


def batch(tok: str, partition: int, count: int, *, first_seq: int = 0, timestamp_ms: int | None = None,
          tag: str = "") -> ProduceBatch:
    return ProduceBatch(
        token=tok,
        partition=partition,
        keys=[f"k{tag}{first_seq + i}".encode() for i in range(count)],
        values=[f"v{tag}{first_seq + i}".encode() for i in range(count)],
        timestamp_ms=now_ms() if timestamp_ms is None else timestamp_ms,
        first_seq=first_seq,
    )


@pytest.fixture
def open_client() -> Iterator[ClientOpener]:
    with opened_clients() as open_:
        yield open_


@pytest.fixture
def client(kafka_log_config_factory: Factory, open_client: Callable[[LogConfig], LogClient]) -> LogClient:
    client = open_client(kafka_log_config_factory(partitions=2))
    assert client.ensure_topic() == 2
    return client


def read(client: LogClient, partition: int, start: int, count: int, max_records: int = 1000,
         deadline_s: float = 15.0) -> list[LogRecord]:
    records: list[LogRecord] = []
    position = start
    deadline = time.monotonic() + deadline_s
    while len(records) < count and time.monotonic() < deadline:
        result = client.fetch(partition, position, min(max_records, count - len(records)), 0.5)
        records += result.records
        position = result.next_position
    return records


def test_round_trip_returns_key_value_token_seq_and_timestamp(client: LogClient) -> None:
    tok, stamp = token(), now_ms() - 1_000
    client.produce(batch(tok, 1, 3, first_seq=40, timestamp_ms=stamp))
    (produced,) = client.flush(30)
    records = read(client, 1, produced.first, 3)
    assert [(r.key, r.value, r.token, r.seq, r.timestamp_ms) for r in records] == [
        (b"k40", b"v40", tok, 40, stamp),
        (b"k41", b"v41", tok, 41, stamp),
        (b"k42", b"v42", tok, 42, stamp),
    ]
    assert [r.position for r in records] == [produced.first, produced.first + 1, produced.first + 2]


def test_bucket_goes_to_the_partition_of_the_same_number(client: LogClient) -> None:
    tok = token()
    client.produce(batch(tok, 0, 2))
    client.produce(batch(tok, 1, 5))
    ranges = {r.partition: r for r in client.flush(30)}
    assert (ranges[0].first, ranges[0].last, ranges[0].count) == (0, 1, 2)
    assert (ranges[1].first, ranges[1].last, ranges[1].count) == (0, 4, 5)


def test_flush_ranges_span_batches_of_one_token_interleaved_with_another(client: LogClient) -> None:
    a, b = token(), token()
    client.produce(batch(a, 0, 3))
    client.produce(batch(b, 0, 1))
    client.produce(batch(a, 0, 2, first_seq=3))
    ranges = {r.token: r for r in client.flush(30)}
    assert (ranges[a].first, ranges[a].last, ranges[a].count) == (0, 5, 5)
    assert (ranges[b].first, ranges[b].last, ranges[b].count) == (3, 3, 1)
    assert client.flush(30) == []


def test_end_positions_count_every_record_of_the_last_batch(client: LogClient) -> None:
    # Tansu's ListOffsets answered the last batch's base offset + 1 (here: 1 for 7 records).
    client.produce(batch(token(), 0, 7))
    client.flush(30)
    assert client.end_positions([0, 1]) == {0: 7, 1: 0}
    assert client.seek(0, SeekSpec.latest()) == 7


def test_topic_with_fewer_partitions_than_buckets_raises_topic_error_naming_both_counts(
    kafka_log_config_factory: Factory, open_client: Callable[[LogConfig], LogClient]
) -> None:
    config = kafka_log_config_factory(partitions=2)
    assert open_client(config).ensure_topic() == 2
    bigger = LogConfig(config.system, config.table, config.topic, 5, True, config.options)
    with pytest.raises(TopicError, match=r"has 2 partitions but the table needs 5") as raised:
        open_client(bigger).ensure_topic()
    assert config.topic in str(raised.value)


def test_missing_topic_without_auto_register_raises_topic_error_and_creates_nothing(
    kafka_log_config_factory: Factory, open_client: Callable[[LogConfig], LogClient], kafka_bootstrap: str
) -> None:
    config = kafka_log_config_factory(auto_register=False)
    with pytest.raises(TopicError, match="does not exist"):
        open_client(config).ensure_topic()
    topics = AdminClient({"bootstrap.servers": kafka_bootstrap}).list_topics(timeout=10).topics
    assert config.topic not in topics


def test_missing_bootstrap_servers_raises_option_error_naming_the_key() -> None:
    config = LogConfig("kafka", "db.t", "t", 1, True, {"sasl.password": SENTINEL})
    with pytest.raises(OptionError, match=r"kafka\.bootstrap\.servers") as raised:
        load_log_system("kafka").open(config)
    assert SENTINEL not in str(raised.value)


def test_tablelog_keys_are_not_passed_to_the_client(
    kafka_log_config_factory: Factory, open_client: Callable[[LogConfig], LogClient]
) -> None:
    # librdkafka rejects unknown properties: these would fail the produce if passed on.
    config = kafka_log_config_factory(
        options={"topic": "ignored", "replication-factor": "1", "admin-timeout-ms": "20000",
                 "client.id": "tablelog-test", "linger.ms": "1"}
    )
    client = open_client(config)
    assert client.ensure_topic() == 2
    client.produce(batch(token(), 0, 2))
    assert [r.count for r in client.flush(30)] == [2]


def test_invalid_replication_factor_raises_option_error_naming_the_key(kafka_log_config_factory: Factory) -> None:
    config = kafka_log_config_factory(options={"replication-factor": "zero"})
    with pytest.raises(OptionError, match=r"kafka\.replication-factor"):
        load_log_system("kafka").open(config)


def test_option_specs_declare_bootstrap_required_and_secrets() -> None:
    specs = {s.key: s for s in load_log_system("kafka").option_specs()}
    assert specs["kafka.bootstrap.servers"].required
    assert "kafka.topic" in specs
    assert specs["kafka.sasl.password"].secret and specs["kafka.ssl.key.password"].secret
    assert all(s.doc for s in specs.values())


def test_produce_to_a_partition_the_topic_lacks_raises_produce_error_naming_topic_and_partition(
    client: LogClient,
) -> None:
    with pytest.raises(ProduceError) as raised:
        client.produce(batch(token(), 9, 1))
        client.flush(10)
    assert client.config.topic in str(raised.value)
    assert "partition 9" in str(raised.value)
    assert raised.value.partition == 9


def test_unreachable_broker_fails_the_flush_with_produce_error_naming_topic_and_partition(
    open_client: Callable[[LogConfig], LogClient],
) -> None:
    with __import__("socket").socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{sock.getsockname()[1]}"  # bound, never listening: refused
    config = LogConfig("kafka", "db.t", "nowhere", 1, True,
                       {"bootstrap.servers": dead, "message.timeout.ms": "1000", "log_level": "0"})
    client = open_client(config)
    client.produce(batch(token(), 0, 3))
    began = time.monotonic()
    with pytest.raises(ProduceError) as raised:
        client.flush(20)
    assert time.monotonic() - began < 15
    message = str(raised.value)
    assert "'nowhere'" in message and "partition 0" in message
    assert "timed out" in message.lower()


def test_flush_to_brokers_that_cannot_be_reached_raises_log_unavailable_and_the_next_flush_is_clean(
    open_client: Callable[[LogConfig], LogClient],
) -> None:
    with __import__("socket").socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{sock.getsockname()[1]}"
    client = open_client(LogConfig("kafka", "db.t", "nowhere", 1, True,
                                   {"bootstrap.servers": dead, "log_level": "0"}))
    client.produce(batch(token(), 0, 2))
    # An outage, not a refused record (the hook contract): LogUnavailableError naming the address.
    with pytest.raises(LogUnavailableError, match=rf"2 record\(s\) not acknowledged within 0.5 s: the brokers {dead} "):
        client.flush(0.5)
    assert client.flush(0.5) == []


def test_secret_options_never_appear_in_repr_str_or_error_messages(
    kafka_log_config_factory: Factory, open_client: Callable[[LogConfig], LogClient]
) -> None:
    config = kafka_log_config_factory(options={
        "sasl.password": SENTINEL,
        "sasl.username": SENTINEL + "-user",
        "sasl.mechanism": SENTINEL,  # an invalid value librdkafka would echo
        "security.protocol": "sasl_plaintext",
    })
    assert SENTINEL not in repr(config)
    client = open_client(config)
    assert SENTINEL not in repr(client.connection)
    assert SENTINEL not in str(client.connection)
    assert "******" in repr(client.connection)
    messages = []
    for action in (client.ensure_topic, lambda: client.produce(batch(token(), 0, 1)),
                   lambda: client.fetch(0, 0, 10, 0.1), lambda: client.end_positions([0])):
        with pytest.raises(Exception) as raised:  # noqa: B017 - any error, checked below
            action()
        messages.append(f"{raised.value!r} {raised.value}")
        assert raised.value.__cause__ is None
    assert messages
    for message in messages:
        assert SENTINEL not in message, message


def test_authentication_failure_does_not_echo_the_password_in_errors_or_log_lines(
    kafka_log_config_factory: Factory, open_client: Callable[[LogConfig], LogClient],
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level("DEBUG")
    config = kafka_log_config_factory(options={
        "security.protocol": "sasl_plaintext", "sasl.mechanism": "PLAIN",
        "sasl.username": "alice", "sasl.password": SENTINEL,
        "admin-timeout-ms": "3000", "message.timeout.ms": "3000", "log_level": "7",
    })
    client = open_client(config)
    with pytest.raises(Exception) as raised:  # noqa: B017 - the broker speaks no SASL
        client.ensure_topic()
    assert SENTINEL not in str(raised.value)
    client.produce(batch(token(), 0, 1))
    with pytest.raises(ProduceError) as failed:
        client.flush(10)
    assert SENTINEL not in str(failed.value)
    client.close()
    out, err = capfd.readouterr()  # librdkafka's own log lines go to Python logging, not stderr
    assert "sasl" in caplog.text.lower() and "sasl" not in (out + err).lower()
    assert SENTINEL not in out + err
    assert SENTINEL not in caplog.text


def test_seek_timestamp_later_than_every_record_returns_the_end_although_the_broker_answers_zero(
    client: LogClient,
) -> None:
    base = now_ms() - 60_000
    client.produce(batch(token(), 0, 4, timestamp_ms=base))
    client.flush(30)
    client.produce(batch(token(), 0, 3, timestamp_ms=base + 1_000))
    client.flush(30)
    assert client.seek(0, SeekSpec.timestamp(base + 3_600_000)) == 7
    assert client.seek(0, SeekSpec.timestamp(base + 500)) == 4
    assert client.seek(0, SeekSpec.timestamp(base)) == 0


def test_fetch_past_the_end_of_a_recreated_topic_raises_position_out_of_range(
    kafka_log_config_factory: Factory, open_client: Callable[[LogConfig], LogClient], kafka_bootstrap: str
) -> None:
    config = kafka_log_config_factory(partitions=1)
    writer = open_client(config)
    writer.ensure_topic()
    writer.produce(batch(token(), 0, 5))
    (produced,) = writer.flush(30)
    assert produced.last == 4
    # No client may be fetching from the topic while it is deleted: librdkafka 2.16.0
    # crashed the process (SIGSEGV) when an assigned topic was deleted on Tansu.
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    admin.delete_topics([config.topic])[config.topic].result(10)
    reader = open_client(config)
    reader.ensure_topic()  # the log is gone: a new, empty topic of the same name
    with pytest.raises(PositionOutOfRangeError) as raised:
        reader.fetch(0, 5, 10, 1.0)
    message = str(raised.value)
    assert config.topic in message and "partition 0" in message and "position 5" in message
    with pytest.raises(PositionOutOfRangeError):
        reader.seek(0, SeekSpec.position(5))


def test_fetch_alternating_between_partitions_returns_each_in_order(client: LogClient) -> None:
    tok = token()
    client.produce(batch(tok, 0, 30, tag="a"))
    client.produce(batch(tok, 1, 30, tag="b"))
    client.flush(30)
    positions = {0: 0, 1: 0}
    got: dict[int, list[LogRecord]] = {0: [], 1: []}
    deadline = time.monotonic() + 15
    while (len(got[0]) < 30 or len(got[1]) < 30) and time.monotonic() < deadline:
        for p in (0, 1):
            result = client.fetch(p, positions[p], 4, 0.2)
            got[p] += result.records
            positions[p] = result.next_position
    assert [r.value for r in got[0]] == [f"va{i}".encode() for i in range(30)]
    assert [r.value for r in got[1]] == [f"vb{i}".encode() for i in range(30)]
    assert [r.position for r in got[1]] == list(range(30))


def test_records_without_tablelog_headers_come_back_as_foreign(
    client: LogClient, kafka_bootstrap: str
) -> None:
    raw = Producer({"bootstrap.servers": kafka_bootstrap})
    raw.produce(client.config.topic, b"plain", b"key", 0)
    raw.produce(client.config.topic, b"odd", None, 0, headers=[("tablelog.seq", b"x"), ("other", b"1")])
    assert raw.flush(10) == 0
    records = read(client, 0, 0, 2)
    assert [(r.key, r.value, r.token, r.seq) for r in records] == [
        (b"key", b"plain", None, None),
        (None, b"odd", None, None),
    ]


def test_kafka_python_consumer_reads_key_value_and_token_header_written_by_the_plugin(
    kafka_log_config_factory: Factory, open_client: Callable[[LogConfig], LogClient], kafka_bootstrap: str
) -> None:
    client = open_client(kafka_log_config_factory())  # default lz4: kafka-python decodes it with `lz4`
    client.ensure_topic()
    tok = token()
    client.produce(batch(tok, 1, 3, first_seq=7))
    client.flush(30)
    consumer = KafkaConsumer(bootstrap_servers=kafka_bootstrap, enable_auto_commit=False,
                             group_id=None, consumer_timeout_ms=10_000)
    try:
        tp = TopicPartition(client.config.topic, 1)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        messages = []
        for message in consumer:
            messages.append(message)
            if len(messages) == 3:
                break
    finally:
        consumer.close()
    assert [(m.offset, m.key, m.value) for m in messages] == [
        (0, b"k7", b"v7"), (1, b"k8", b"v8"), (2, b"k9", b"v9")
    ]
    assert [dict(m.headers) for m in messages] == [
        {"tablelog.token": tok.encode(), "tablelog.seq": str(seq).encode()} for seq in (7, 8, 9)
    ]


def test_commit_is_a_no_op_that_can_repeat(client: LogClient) -> None:
    from tablelog.records import CommittedLog

    client.produce(batch(token(), 0, 2))
    ranges = tuple(client.flush(30))
    committed = CommittedLog(1, "w", 1, ranges, client.end_positions([0, 1]))
    client.commit(committed)
    client.commit(committed)
    assert client.end_positions([0, 1]) == committed.end_positions


def test_produce_waits_for_room_when_the_client_queue_is_full(
    kafka_log_config_factory: Factory, open_client: Callable[[LogConfig], LogClient]
) -> None:
    client = open_client(kafka_log_config_factory(options={"queue.buffering.max.messages": "10"}))
    client.ensure_topic()
    tok = token()
    client.produce(batch(tok, 0, 250))
    (produced,) = client.flush(30)
    assert (produced.first, produced.last, produced.count) == (0, 249, 250)
    assert [r.seq for r in read(client, 0, 0, 250)] == list(range(250))


def test_sequential_fetches_do_not_reposition_the_consumer(
    client: LogClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    client.produce(batch(token(), 0, 40))
    client.flush(30)
    reader = client.connection.reader
    repositions: list[tuple[int, int]] = []
    original = reader._reposition

    def counting(consumer: object, partition: int, position: int) -> None:
        repositions.append((partition, position))
        original(consumer, partition, position)

    monkeypatch.setattr(reader, "_reposition", counting)
    records = read(client, 0, 0, 40, max_records=7)
    assert [r.seq for r in records] == list(range(40))
    assert repositions == [(0, 0)]
    read(client, 0, 10, 5)  # going back is a re-position
    assert repositions == [(0, 0), (0, 10)]


def test_ensure_topic_on_an_unreachable_broker_raises_log_unavailable_within_the_admin_time_out(
    open_client: Callable[[LogConfig], LogClient],
) -> None:
    with __import__("socket").socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{sock.getsockname()[1]}"
    client = open_client(LogConfig("kafka", "db.t", "nowhere", 1, True, {
        "bootstrap.servers": dead, "admin-timeout-ms": "1000", "log_level": "0"}))
    began = time.monotonic()
    with pytest.raises(LogUnavailableError, match=rf"cannot reach the Kafka brokers at {dead} .*kafka.admin-timeout-ms=1000"):
        client.ensure_topic()
    assert time.monotonic() - began < 10


@pytest.mark.parametrize("topic_exists", [False, True])
def test_a_new_writer_connection_has_its_producer_id_when_ensure_topic_returns(
    kafka_log_config_factory: Factory, open_client: ClientOpener, topic_exists: bool
) -> None:
    # librdkafka asks a new idempotent producer's id once, and on a miss retries only after
    # a fixed 500 ms: every new Spark worker's first task would wait for it in finish().
    topic = f"pid-{uuid.uuid4().hex[:12]}"
    if topic_exists:
        assert open_client(kafka_log_config_factory(topic=topic)).ensure_topic() == 2
    slow = []
    for _ in range(6):
        client = open_client(kafka_log_config_factory(topic=topic if topic_exists else f"pid-{uuid.uuid4().hex[:12]}"))
        client.ensure_topic()
        began = time.monotonic()
        client.produce(batch(token(), 0, 1))
        client.flush(10.0)
        if time.monotonic() - began > 0.4:
            slow.append(round(time.monotonic() - began, 3))
        client.close()
    assert slow == []
