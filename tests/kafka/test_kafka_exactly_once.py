"""The core's exactly-once scenarios, the hybrid read and an independent consumer,
against the real Kafka-protocol broker."""

import json
import uuid

import pyarrow as pa
import pytest
from kafka import KafkaConsumer, TopicPartition

import tablelog
from tablelog.testing.projection_scenarios import ProjectionScenarios
from tablelog.testing.scenarios import ExactlyOnceScenarios


class TestExactlyOnceOnKafka(ExactlyOnceScenarios):
    @pytest.fixture
    def log_options(self, kafka_bootstrap: str) -> dict[str, str]:
        return {"log.system": "kafka", "kafka.bootstrap.servers": kafka_bootstrap}


def test_a_consumer_that_knows_nothing_of_tablelog_reads_debezium_envelopes_keyed_by_primary_key(
    tmp_path, kafka_bootstrap: str  # type: ignore[no-untyped-def]
) -> None:
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    topic = f"envelopes-{uuid.uuid4().hex[:8]}"
    table = tablelog.create_table(
        str(tmp_path), "db.people", schema, primary_key=["id"], bucket=2,
        options={"log.system": "kafka", "kafka.bootstrap.servers": kafka_bootstrap, "kafka.topic": topic},
    )
    with table.writer() as writer:
        writer.write([{"id": i, "name": f"p{i}"} for i in range(10)])
        writer.write([("+U", {"id": 3, "name": "renamed"}), ("-D", {"id": 4, "name": "p4"})])
        writer.commit()
    consumer = KafkaConsumer(bootstrap_servers=kafka_bootstrap, enable_auto_commit=False,
                             group_id=None, consumer_timeout_ms=10_000)
    partitions = [TopicPartition(topic, p) for p in (0, 1)]
    consumer.assign(partitions)
    for tp in partitions:
        consumer.seek(tp, 0)
    messages = []
    for message in consumer:
        messages.append(message)
        if len(messages) == 12:
            break
    consumer.close()
    assert len(messages) == 12
    envelopes = []
    for message in messages:
        envelope = json.loads(message.value)
        assert set(envelope) >= {"before", "after", "op"}
        row = envelope["after"] or envelope["before"]
        assert json.loads(message.key) == {"id": row["id"]}
        assert dict(message.headers)["tablelog.token"]
        envelopes.append((envelope["op"], row["id"], row["name"]))
    assert sorted(envelopes) == sorted(
        # Flink's debezium-json: an update's new row is a create (docs/kafka.md)
        [("c", i, f"p{i}") for i in range(10)] + [("c", 3, "renamed"), ("d", 4, "p4")]
    )


class TestExactlyOnceOnKafkaWithArrowRecords(ExactlyOnceScenarios):
    """The same scenarios with records that hold a batch of rows each. The process killed
    after producing is left to the file log's arrow run (tests/core): it is the slowest
    scenario and says nothing about the format that the file log does not."""

    test_attempt_killed_in_another_process_after_producing_is_never_returned = None  # type: ignore[assignment]

    @pytest.fixture
    def log_options(self, kafka_bootstrap: str) -> dict[str, str]:
        return {"log.system": "kafka", "kafka.bootstrap.servers": kafka_bootstrap, "log.format": "arrow"}


class TestExactlyOnceOnKafkaWithDynamicBuckets(ExactlyOnceScenarios):
    """The same scenarios on dynamic buckets (``bucket = -1``): a key's partition of the
    topic is its hash modulo the topic's partitions, its bucket whatever Paimon chose.
    The process killed after producing is left to the file log's dynamic run (tests/core)."""

    test_attempt_killed_in_another_process_after_producing_is_never_returned = None  # type: ignore[assignment]

    @pytest.fixture
    def bucket(self) -> int:
        return -1

    @pytest.fixture
    def log_options(self, kafka_bootstrap: str) -> dict[str, str]:
        return {"log.system": "kafka", "kafka.bootstrap.servers": kafka_bootstrap, "log.system.partitions": "3",
                "dynamic-bucket.target-row-num": "70"}


class TestProjectionOnKafka(ProjectionScenarios):
    @pytest.fixture
    def log_options(self, kafka_bootstrap: str) -> dict[str, str]:
        return {"log.system": "kafka", "kafka.bootstrap.servers": kafka_bootstrap}
