"""Merge engines on Kafka: a transactional reader from ``earliest`` and a plain Kafka
consumer of the topic (kafka-python, nothing of tablelog) get the table's changelog, as
an independent reference (:mod:`tablelog.testing.merge_reference`) computes it, not the
writes; the failure scenarios of :class:`~tablelog.testing.merge_scenarios.MergeEngineScenarios`
run here too.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tablelog.normalize import Normalizer
from tablelog.table import Table, internals
from tablelog.testing import merge_reference as ref
from tablelog.testing.kafka_server import topic_values
from tablelog.testing.merge_scenarios import MergeEngineScenarios
from tablelog.testing.relay_scenarios import Envelope, envelope, envelopes


def kafka_options(bootstrap: str) -> dict[str, str]:
    return {"log.system": "kafka", "kafka.bootstrap.servers": bootstrap, "log.system.partitions": "2"}


@pytest.fixture
def log_options(kafka_bootstrap: str) -> dict[str, str]:
    return kafka_options(kafka_bootstrap)


class TestMergeEngineFailuresOnKafka(MergeEngineScenarios):
    @pytest.fixture
    def log_options(self, kafka_bootstrap: str) -> dict[str, str]:
        return kafka_options(kafka_bootstrap)


def plain_consumer_values(table: Table) -> list[bytes]:
    return topic_values(internals(table).log_config().options["bootstrap.servers"], internals(table).topic,
                        internals(table).log_partitions)


def as_envelope(kind: str, row: ref.Row) -> Envelope:
    """What debezium-json carries for a change (docs/kafka.md): a create of the new row,
    a delete of the old one."""
    return envelope("c", after=row) if kind in ("+I", "+U") else envelope("d", before=row)


def stream_of(engine: ref.Engine, index: int, row: ref.Row) -> int:
    """Which of the two writers writes a row: on partial-update, the one of its column."""
    if engine.name == "partial-update":
        return 0 if row["b"] is None else 1
    return index % 2


@pytest.mark.parametrize("name", ["partial-update", "aggregation", "first-row", "sequence-field"])
def test_readers_and_a_plain_consumer_get_the_reference_changelog_of_two_writers(
    tmp_path: Path, log_options: dict[str, str], name: str,
) -> None:
    """Two writers take turns (on partial-update each fills its own column of the same
    keys); each commit's changes are the reference's, to the record."""
    engine = ref.ENGINES[name]
    table = ref.create(str(tmp_path), engine, log_options)
    model, rng = ref.Model(engine), random.Random(29)
    expected: dict[int, list[ref.Input]] = {}
    writers = [table.writer("stream-a"), table.writer("stream-b")]
    try:
        for _ in range(3):
            writes = engine.inputs(rng, 12)
            for stream, writer in enumerate(writers):
                mine = [w for i, w in enumerate(writes) if stream_of(engine, i, w[1]) == stream]
                ref.write_and_commit(writer, model, mine, expected)
    finally:
        for writer in writers:
            writer.close()
    changes = ref.read_all(table)
    ref.assert_changes_are(changes, expected)
    assert ref.replay(changes) == ref.table_rows(table) == model.rows
    values = plain_consumer_values(table)
    assert len(values) == len(changes)
    assert envelopes(values) == Counter(as_envelope(kind, row) for c in expected.values() for kind, row in c)
    assert any(kind == "-U" for c in expected.values() for kind, _ in c) or engine.first_row


def test_a_plain_consumer_sees_the_old_row_retracted_and_the_merged_row_not_the_partial_input(
    tmp_path: Path, log_options: dict[str, str],
) -> None:
    table = ref.create(str(tmp_path), ref.ENGINES["partial-update"], log_options)
    with table.writer("names") as writer:
        writer.write([{"id": 1, "a": "ann", "b": None}])
        writer.commit()
    with table.writer("scores") as writer:
        writer.write([{"id": 1, "a": None, "b": 7}])
        writer.commit()
    docs = [json.loads(value) for value in plain_consumer_values(table)]
    assert [(d["op"], d["before"], d["after"]) for d in docs] == [
        ("c", None, {"id": 1, "a": "ann", "b": None}),
        ("d", {"id": 1, "a": "ann", "b": None}, None),
        ("c", None, {"id": 1, "a": "ann", "b": 7}),
    ]
    assert [d["_kind"] for d in docs] == ["+I", "-U", "+U"]


def test_two_writers_committing_against_the_same_snapshot_end_every_reader_on_the_table(
    tmp_path: Path, log_options: dict[str, str],
) -> None:
    """Both attempts computed their changes before either committed: the second commit's
    are computed again by its committer. Transactional readers get the reference's
    changes; a plain consumer (which reads every attempt, as an eventual reader does) and
    an eventual reader normalized end on the table's rows."""
    engine = ref.ENGINES["partial-update"]
    table = ref.create(str(tmp_path), engine, log_options)
    model, rng = ref.Model(engine), random.Random(7)
    expected: dict[int, list[ref.Input]] = {}
    for round_ in range(3):
        writes = engine.inputs(rng, 16)
        streams = [[w for w in writes if stream_of(engine, 0, w[1]) == s] for s in (0, 1)]
        tasks = [table.write_task(f"stream-{s}", round_) for s in (0, 1)]
        for task, mine in zip(tasks, streams, strict=True):
            task.write(ref.writes_as_changes(mine))
        receipts = [task.finish() for task in tasks]
        for s, receipt in enumerate(receipts):
            result = table.commit(f"stream-{s}", round_, [receipt])
            assert result.snapshot_id is not None
            expected[result.snapshot_id] = model.commit(streams[s])
    changes = ref.read_all(table)
    ref.assert_changes_are(changes, expected)
    assert ref.replay(changes) == ref.table_rows(table) == model.rows
    last: dict[int, Any] = {}
    for value in plain_consumer_values(table):
        doc = json.loads(value)
        row = doc["after"] or doc["before"]
        last[row["id"]] = doc["after"]
    assert {key: row for key, row in last.items() if row is not None} == model.rows
    normalizer = Normalizer(["id"])
    normalizer.apply(ref.read_all(table, "eventual"))
    assert {row["id"]: dict(row) for row in normalizer.rows()} == model.rows
