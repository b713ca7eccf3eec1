"""Bad input beyond tests/core/test_bad_input.py: each gets a clear error naming
the problem, and nothing is committed (or produced, or created)."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

import tablelog
from tablelog.errors import (
    ForeignRecordError,
    OptionError,
    SchemaMismatchError,
    TableNotFoundError,
    TopicError,
)
from tablelog.table import internals
from tablelog.testing.scenarios import SCHEMA, ids, read_transactional, rows


def _kafka(tansu: Any, **extra: str) -> dict[str, str]:
    return {"log.system": "kafka", "kafka.bootstrap.servers": tansu.bootstrap,
            "kafka.admin-timeout-ms": "5000", "log.fetch-timeout-ms": "5000", **extra}


def _assert_no_table(warehouse: Path, name: str) -> None:
    with pytest.raises(TableNotFoundError):
        tablelog.open_table(str(warehouse), name)


# -- options -----------------------------------------------------------------------


@pytest.mark.parametrize(("key", "value", "allowed"), [
    ("log.consistency", "exactly-once", "'transactional', 'eventual'"),
    ("log.changelog-mode", "retract", "'auto', 'all', 'upsert'"),
    ("log.format", "avro", "'debezium-json', 'json'"),
    ("log.key.format", "raw", "'json'"),
    ("scan.mode", "newest", "'latest-full', 'latest', 'earliest', 'from-timestamp'"),
    ("log.foreign-records", "ignore", "'fail', 'skip'"),
    ("log.system.auto-register", "maybe", "'true', 'false'"),
    ("log.flush-timeout-ms", "-5", "integer >= 1"),
    ("bucket", "zero", "integer >= 1"),
])
def test_invalid_option_value_names_key_value_and_what_is_allowed_and_creates_nothing(
    tmp_path: Path, key: str, value: str, allowed: str
) -> None:
    with pytest.raises(OptionError) as raised:
        tablelog.create_table(str(tmp_path), "db.t", SCHEMA, primary_key=["id"],
                              options={"log.system": "filesystem", key: value})
    message = str(raised.value)
    assert repr(value) in message and repr(key) in message and allowed in message, message
    _assert_no_table(tmp_path, "db.t")
    assert not (tmp_path / ".tablelog").exists()  # no topic either


@pytest.mark.parametrize(("key", "hint"), [
    ("log.consistancy", "log.consistency"),
    ("scan.mod", "scan.mode"),
    ("log.flush-timeout", "log.flush-timeout-ms"),
    ("primary_key", "primary-key"),
    ("colour", None),
    ("redis.url", None),  # a prefix no log system owns
])
def test_unknown_option_key_is_refused_with_a_hint_and_creates_nothing(
    tmp_path: Path, key: str, hint: str | None
) -> None:
    with pytest.raises(OptionError) as raised:
        tablelog.create_table(str(tmp_path), "db.t", SCHEMA, primary_key=["id"],
                              options={"log.system": "filesystem", key: "1"})
    message = str(raised.value)
    assert f"unknown option {key!r}" in message
    if hint:
        assert f"did you mean {hint!r}" in message
    _assert_no_table(tmp_path, "db.t")


def test_unknown_options_of_an_existing_table_reader_and_log_system_are_refused(tmp_path: Path) -> None:
    table = tablelog.create_table(str(tmp_path), "db.t", SCHEMA, primary_key=["id"],
                                  options={"log.system": "filesystem"})
    with pytest.raises(OptionError, match="unknown option 'scan.mood'; did you mean 'scan.mode'"):
        table.reader(options={"scan.mood": "latest"})
    with pytest.raises(OptionError, match="allowed: 'transactional', 'eventual'"):
        table.reader(consistency="strong")
    with pytest.raises(OptionError, match="unknown option 'filesystem.paht'; did you mean 'filesystem.path'"):
        tablelog.open_table(str(tmp_path), "db.t", {"filesystem.paht": "/tmp"}).writer().write(rows(1))
    with pytest.raises(OptionError, match=r"unknown option 'pulsar.tokn'.*did you mean 'pulsar.token'"):
        tablelog.create_table(str(tmp_path), "db.p", SCHEMA, primary_key=["id"], options={
            "log.system": "pulsar", "pulsar.service-url": "pulsar://127.0.0.1:1", "pulsar.tokn": "x"})
    assert internals(table).files.latest_snapshot() is None
    _assert_no_table(tmp_path, "db.p")


# -- topics ------------------------------------------------------------------------


def test_precreated_kafka_topic_with_fewer_partitions_than_buckets_is_refused_naming_both_counts(
    tmp_path: Path, tansu: Any
) -> None:
    admin = AdminClient({"bootstrap.servers": tansu.bootstrap})
    admin.create_topics([NewTopic("narrow", num_partitions=1, replication_factor=-1)])["narrow"].result(10)
    with pytest.raises(TopicError) as raised:
        tablelog.create_table(str(tmp_path), "db.wide", SCHEMA, primary_key=["id"], bucket=2,
                              options=_kafka(tansu, **{"kafka.topic": "narrow"}))
    message = str(raised.value)
    assert "has 1 partitions but the table needs 2" in message and "'narrow'" in message
    _assert_no_table(tmp_path, "db.wide")

    # Without auto-register the table exists, but its first write fails before anything is sent.
    table = tablelog.create_table(str(tmp_path), "db.wide", SCHEMA, primary_key=["id"], bucket=2,
                                  options=_kafka(tansu, **{"kafka.topic": "narrow",
                                                           "log.system.auto-register": "false"}))
    with table.writer() as writer, pytest.raises(TopicError, match="has 1 partitions but the table needs 2"):
        writer.write(rows(10))
    assert internals(table).files.latest_snapshot() is None
    metadata = Producer({"bootstrap.servers": tansu.bootstrap}).list_topics(timeout=5).topics["narrow"]
    assert len(metadata.partitions) == 1  # nothing changed the topic


# -- rows --------------------------------------------------------------------------


@pytest.fixture(params=["filesystem", "kafka"])
def any_table(request: pytest.FixtureRequest, tmp_path: Path) -> tablelog.Table:
    options = {"log.system": "filesystem"} if request.param == "filesystem" else _kafka(
        request.getfixturevalue("tansu"))
    options["log.max-record-bytes"] = "400"
    return tablelog.create_table(str(tmp_path), "db.rows", SCHEMA, primary_key=["id"], bucket=2,
                                 options=options)


def _assert_nothing_written(table: tablelog.Table) -> None:
    assert internals(table).files.latest_snapshot() is None
    with internals(table).open_log() as log:
        assert log.end_positions([0, 1]) == {0: 0, 1: 0}  # nothing was produced either


@pytest.mark.parametrize(("data", "error"), [
    ([{"id": 1, "name": "a", "score": 1.0, "extra": 1}], r"unknown columns \['extra'\]"),
    ([{"name": "a", "score": 1.0}], r"missing columns \['id'\]"),
    (pa.table({"id": ["x"], "name": ["a"], "score": [1.0]}), "column 'id' has type string"),
    ([{"id": 1, "name": "a", "score": 1.0}, {"id": None, "name": "b", "score": 2.0}],
     "primary-key column 'id' is null in 1 row"),
    ([{"id": 1, "name": "a", "score": 1.0}, {"id": 2, "name": "x" * 1000, "score": 2.0}],
     "row 1 encodes to .* bytes, more than log.max-record-bytes=400"),
    ([("+X", {"id": 1, "name": "a", "score": 1.0})], r"row kind '\+X'"),
])
def test_bad_rows_are_refused_before_anything_reaches_table_or_log(
    any_table: tablelog.Table, data: Any, error: str
) -> None:
    with any_table.writer() as writer:
        writer.write(rows(5))  # good rows of the same round: they must not be committed either
        with pytest.raises(SchemaMismatchError, match=error) as raised:
            writer.write(data)
        assert any_table.identifier in str(raised.value) or "row" in str(raised.value)
    assert internals(any_table).files.latest_snapshot() is None


def test_a_single_bad_batch_produces_nothing(any_table: tablelog.Table) -> None:
    with any_table.writer() as writer, pytest.raises(SchemaMismatchError):
        writer.write([*rows(50), {"id": None, "name": "b", "score": 2.0}])
    _assert_nothing_written(any_table)


# -- foreign and corrupt records on the topic --------------------------------------


def test_foreign_and_corrupt_records_on_a_kafka_topic_fail_readers_naming_the_offset_or_are_skipped_and_counted(
    tmp_path: Path, tansu: Any
) -> None:
    table = tablelog.create_table(str(tmp_path), "db.mixed", SCHEMA, primary_key=["id"], bucket=1,
                                  options=_kafka(tansu))
    raw = Producer({"bootstrap.servers": tansu.bootstrap})
    failed = table.write_task("w", 1, task="failed")  # an attempt that is never committed
    failed.write(rows(10))
    failed.finish()
    first = table.write_task("w", 1, task="real")
    first.write(rows(10))
    with internals(table).open_log() as log:  # wait until the producer has delivered them
        deadline = time.monotonic() + 10
        while log.end_positions([0])[0] < 20 and time.monotonic() < deadline:
            time.sleep(0.02)
    # Another application writes into the table's topic in the middle of the committed range.
    raw.produce(table.topic, b"not tablelog", b"k", 0)
    raw.produce(table.topic, b"{not json", b"k", 0, headers=[("tablelog.token", b"feedfacefeedface"),
                                                             ("tablelog.seq", b"0")])
    assert raw.flush(10) == 0
    first.write(rows(10, start=10))
    receipt = first.finish()
    assert table.commit("w", 1, [receipt]).committed
    (committed,) = receipt.ranges
    foreign_offset = committed.first + 10  # right after the first 10 records

    with pytest.raises(ForeignRecordError) as raised:
        read_transactional(table)
    message = str(raised.value)
    assert f"topic {table.topic!r}, partition 0, position {foreign_offset}" in message
    assert "log.foreign-records=skip" in message

    with table.reader(consistency="transactional", scan_mode="earliest",
                      options={"log.foreign-records": "skip"}) as reader:
        changes = reader.read_all()
        assert reader.foreign_skipped == 1  # the headerless one; the other token is not committed
    assert ids(changes) == Counter(range(20))

    with table.reader(consistency="eventual", scan_mode="earliest") as reader, \
            pytest.raises(ForeignRecordError, match=f"partition 0, position {foreign_offset}"):
        reader.read_all()
    with table.reader(consistency="eventual", scan_mode="earliest",
                      options={"log.foreign-records": "skip"}) as reader:
        changes = reader.read_all()
        assert reader.foreign_skipped == 2  # the headerless record and the undecodable one
    assert ids(changes) == Counter({i: 2 for i in range(10)} | {i: 1 for i in range(10, 20)})


# -- names ---------------------------------------------------------------------------


@pytest.mark.parametrize("topic", ["../x", "..", "a/b", "x\\y", "nul\0byte"])
def test_filesystem_topic_names_cannot_leave_the_log_directory(tmp_path: Path, topic: str) -> None:
    with pytest.raises(OptionError, match="invalid value .* for option 'filesystem.topic'"):
        tablelog.create_table(str(tmp_path / "wh"), "db.t", SCHEMA, primary_key=["id"],
                              options={"log.system": "filesystem", "filesystem.topic": topic})
    _assert_no_table(tmp_path / "wh", "db.t")
    assert {p.name for p in tmp_path.iterdir()} <= {"wh"}  # nothing written outside the warehouse
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("topic", ["bad topic!", "a/b", "../x", "..", "t" * 250, "ümlaut"])
@pytest.mark.parametrize("auto_register", ["true", "false"])
def test_kafka_topic_names_with_illegal_characters_are_refused_before_the_table_exists(
    tmp_path: Path, tansu: Any, topic: str, auto_register: str
) -> None:
    with pytest.raises(OptionError, match="invalid value .* for option 'kafka.topic'"):
        tablelog.create_table(str(tmp_path), "db.t", SCHEMA, primary_key=["id"], options=_kafka(
            tansu, **{"kafka.topic": topic, "log.system.auto-register": auto_register}))
    _assert_no_table(tmp_path, "db.t")
    assert topic not in AdminClient({"bootstrap.servers": tansu.bootstrap}).list_topics(timeout=5).topics


@pytest.mark.parametrize("topic", ["../x", "a/b/c/d", "non-persistent://public/default/x"])
def test_pulsar_topic_names_that_are_not_topics_are_refused(tmp_path: Path, topic: str) -> None:
    with pytest.raises(OptionError, match="option 'pulsar.topic'"):
        tablelog.create_table(str(tmp_path), "db.t", SCHEMA, primary_key=["id"], options={
            "log.system": "pulsar", "pulsar.service-url": "pulsar://127.0.0.1:1", "pulsar.topic": topic})
    _assert_no_table(tmp_path, "db.t")


@pytest.mark.parametrize("path", ["../outside", "/etc", "../../tmp/x"])
def test_filesystem_path_option_is_used_as_given_but_topics_stay_inside_it(tmp_path: Path, path: str) -> None:
    # filesystem.path is an explicit log root (like a broker address); the topic below it
    # is validated, so a table can only write inside <path>/<topic>/.
    root = tmp_path / "logroot"
    table = tablelog.create_table(str(tmp_path / "wh"), "db.t", SCHEMA, primary_key=["id"],
                                  options={"log.system": "filesystem", "filesystem.path": str(root)})
    with table.writer() as writer:
        writer.write(rows(3))
        writer.commit()
    assert sorted(p.name for p in root.iterdir()) == ["db.t"]
    with pytest.raises(OptionError):
        tablelog.create_table(str(tmp_path / "wh"), "db.u", SCHEMA, primary_key=["id"], options={
            "log.system": "filesystem", "filesystem.path": str(root), "filesystem.topic": path})
