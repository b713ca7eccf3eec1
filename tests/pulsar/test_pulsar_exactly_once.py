"""The core's exactly-once scenarios against the real Pulsar-protocol broker, and a
broker restarted on its data directory in the middle of a stream."""

from collections import Counter

import pyarrow as pa
import pytest

import tablelog
from tablelog.errors import ProduceError
from tablelog.table import internals
from tablelog.testing.merge_scenarios import MergeEngineScenarios
from tablelog.testing.projection_scenarios import ProjectionScenarios
from tablelog.testing.scenarios import ExactlyOnceScenarios, ids, rows


class TestExactlyOnceOnPulsar(ExactlyOnceScenarios):
    @pytest.fixture
    def log_options(self, pulsar_service_url: str) -> dict[str, str]:
        return {"log.system": "pulsar", "pulsar.service-url": pulsar_service_url}


class TestMergeEngineFailuresOnPulsar(MergeEngineScenarios):
    @pytest.fixture
    def log_options(self, pulsar_service_url: str) -> dict[str, str]:
        return {"log.system": "pulsar", "pulsar.service-url": pulsar_service_url}


class TestExactlyOnceOnPulsarWithArrowRecords(ExactlyOnceScenarios):
    """The same scenarios with records that hold a batch of rows each (as on Kafka, the
    process killed after producing is left to the file log's arrow run in tests/core)."""

    test_attempt_killed_in_another_process_after_producing_is_never_returned = None  # type: ignore[assignment]

    @pytest.fixture
    def log_options(self, pulsar_service_url: str) -> dict[str, str]:
        return {"log.system": "pulsar", "pulsar.service-url": pulsar_service_url, "log.format": "arrow"}


def test_broker_restarted_mid_stream_loses_nothing_committed_and_the_reader_resumes_once(
    tmp_path, restartable_pulsar_broker  # type: ignore[no-untyped-def]
) -> None:
    broker = restartable_pulsar_broker
    options = {"log.system": "pulsar", "pulsar.service-url": broker.service_url,
               "log.flush-timeout-ms": "3000", "pulsar.operation-timeout-seconds": "3",
               "pulsar.send-timeout-ms": "3000"}
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("score", pa.float64())])
    table = tablelog.create_table(str(tmp_path), "db.restart", schema, primary_key=["id"], bucket=2,
                                  options=options)
    with table.writer("w") as writer:
        writer.write(rows(100))
        writer.commit()
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        first = reader.read_all()
        saved = reader.position.to_json()
    assert ids(first) == Counter(range(100))

    doomed = table.write_task("w", 2, task="broker-stops-mid-write")
    doomed.write(rows(25, start=100))  # connected and producing...
    broker.stop()  # ...when the broker goes away
    doomed.write(rows(25, start=125))
    with pytest.raises(ProduceError):
        doomed.finish()  # fails clearly after its time-out; nothing is committed for it
    assert internals(table).files.latest_snapshot().id == 1  # type: ignore[union-attr]

    broker.start()
    retry = table.write_task("w", 2, task="retry")
    retry.write(rows(50, start=100))
    assert table.commit("w", 2, [retry.finish()]).committed

    reopened = tablelog.open_table(str(tmp_path), "db.restart")
    with reopened.reader(position=saved) as resumed:
        rest = resumed.read_all()
    assert ids(rest) == Counter(range(100, 150))
    with reopened.reader(consistency="transactional", scan_mode="earliest") as from_start:
        assert ids(from_start.read_all()) == Counter(range(150))  # nothing committed was lost


class TestProjectionOnPulsar(ProjectionScenarios):
    @pytest.fixture
    def log_options(self, pulsar_service_url: str) -> dict[str, str]:
        return {"log.system": "pulsar", "pulsar.service-url": pulsar_service_url}
