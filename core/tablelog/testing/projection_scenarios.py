"""The projection stream of an ``arrow`` log (``log.arrow.projection``), proven by counting
rows and the bytes each topic sent, for any log system.

Subclass :class:`ProjectionScenarios` in a test module and provide the fixture
``log_options`` (as for :class:`~tablelog.testing.scenarios.ExactlyOnceScenarios`).
:class:`FetchedBytes`, a hook wrapper, counts the value bytes each topic returned.
"""

from __future__ import annotations

import hashlib
import uuid
from collections import Counter
from collections.abc import Generator, Iterator
from typing import Any

import pyarrow as pa
import pytest

from tablelog.errors import SchemaChangeError
from tablelog.logs import discovery
from tablelog.plugin import FetchResult, LogConfig, ValuesResult, hookimpl
from tablelog.reading import Change
from tablelog.records import SeekSpec
from tablelog.store import AddColumn, RenameColumn
from tablelog.table import Table, internals
from tablelog.tables import create_table
from tablelog.testing.scenarios import LogSystemFixtures
from tablelog.topic_owners import topic_option
from tablelog.verify import verify

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("score", pa.float64()), ("note", pa.string())])
PROJECTION = "name"
ROWS = 200


def rows(count: int = ROWS, start: int = 0, tag: str = "v1") -> list[dict[str, Any]]:
    # A long note that compresses badly: the table topic's records are much larger than the
    # projection's.
    return [{"id": i, "name": f"{tag}-{i}", "score": i * 0.5,
             "note": hashlib.sha256(f"{tag}-{i}".encode()).hexdigest() * 3}
            for i in range(start, start + count)]


def ids(changes: list[Change]) -> Counter[int]:
    return Counter(c.row["id"] for c in changes)


class FetchedBytes:
    """A hook wrapper: the bytes of the record values each topic returned to ``fetch`` and
    ``fetch_values``, whatever the log system."""

    def __init__(self) -> None:
        self.by_topic: Counter[str] = Counter()
        self._topics: dict[int, str] = {}

    @hookimpl(wrapper=True)
    def open_log(self, config: LogConfig) -> Generator[None, Any, Any]:
        connection = yield
        self._topics[id(connection)] = config.topic
        return connection

    @hookimpl(wrapper=True)
    def fetch(self, connection: Any) -> Generator[None, Any, FetchResult]:
        result: FetchResult = yield
        self.by_topic[self._topics.get(id(connection), "?")] += sum(len(r.value or b"") for r in result.records)
        return result

    @hookimpl(wrapper=True)
    def fetch_values(self, connection: Any) -> Generator[None, Any, ValuesResult]:
        result: ValuesResult = yield
        self.by_topic[self._topics.get(id(connection), "?")] += sum(len(v or b"") for v in result.values)
        return result


def read(table: Table, **kwargs: Any) -> list[Change]:
    kwargs.setdefault("scan_mode", "earliest")
    with table.reader(consistency="transactional", **kwargs) as reader:
        return reader.read_all(idle_timeout_s=0.5)


def projection_rows(table: Table) -> Counter[int]:
    """Every row the projection topic holds, committed or not, read with pyarrow alone."""
    found: Counter[int] = Counter()
    with internals(table).open_projection_log() as log:
        for partition in range(table.log_partitions):
            position = log.seek(partition, SeekSpec.earliest())
            end = log.end_positions([partition])[partition]
            while position < end:
                fetched = log.fetch(partition, position, 100, 1.0)
                for record in fetched.records:
                    found.update(pa.ipc.open_stream(record.value).read_all().column("id").to_pylist())
                position = fetched.next_position
    return found


class ProjectionScenarios(LogSystemFixtures):
    """Provide fixture ``log_options``; the tests below need nothing else."""

    @pytest.fixture
    def table(self, warehouse: str, log_options: dict[str, str]) -> Table:
        name = f"db.p_{uuid.uuid4().hex[:10]}"
        options = {**log_options, "log.format": "arrow", "log.arrow.projection": PROJECTION}
        return create_table(warehouse, name, SCHEMA, primary_key=["id"], bucket=2, options=options)

    @pytest.fixture
    def fetched(self) -> Iterator[FetchedBytes]:
        wrapper = FetchedBytes()
        discovery.register_hook_wrapper(wrapper)
        yield wrapper
        discovery.unregister_hook_wrapper(wrapper)

    def _commit(self, table: Table, commit_id: int, data: list[Any], attempts: int = 1) -> None:
        receipts = []
        for attempt in range(attempts):  # every attempt produces to both streams; the last is committed
            task = table.write_task("w", commit_id, task=f"0-attempt-{attempt}")
            task.write(data)
            receipts.append(task.finish())
        assert table.commit("w", commit_id, receipts[-1:]).committed

    def test_a_reader_of_projected_columns_fetches_nothing_from_the_table_topic(
        self, table: Table, fetched: FetchedBytes
    ) -> None:
        for commit_id in (1, 2, 3):
            self._commit(table, commit_id, rows(100, start=(commit_id - 1) * 100))
        projected = read(table, columns=[PROJECTION])
        assert ids(projected) == Counter(range(300))
        assert all(set(c.row) == {"id", "name"} and c.row["name"] == f"v1-{c.row['id']}" for c in projected)
        main, side = table.topic, internals(table).projection_log_config().topic
        assert fetched.by_topic[main] == 0 and fetched.by_topic[side] > 0
        assert ids(read(table)) == Counter(range(300))
        assert fetched.by_topic[main] > 3 * fetched.by_topic[side]

    def test_the_projection_stream_has_storage_of_its_own_when_the_option_naming_the_topic_is_given(
        self, warehouse: str, log_options: dict[str, str]
    ) -> None:
        # The option is the one the plugin declares with OptionSpec(names_topic=True), else
        # <system>.topic: a plugin whose storage follows an option not declared so puts the
        # projection's records among the table topic's.
        topic = f"tl_named_{uuid.uuid4().hex[:10]}"
        options = {**log_options, topic_option(log_options["log.system"]): topic, "log.format": "arrow",
                   "log.arrow.projection": PROJECTION}
        table = create_table(warehouse, f"db.p_{uuid.uuid4().hex[:10]}", SCHEMA, primary_key=["id"], bucket=2,
                             options=options)
        assert table.topic == topic
        self._commit(table, 1, rows())
        assert projection_rows(table) == Counter(range(ROWS))  # the projection's records, and no others
        with table.reader(consistency="eventual", scan_mode="earliest") as reader:  # the table topic's records
            assert ids(reader.read_all(idle_timeout_s=0.5)) == Counter(range(ROWS))
        assert ids(read(table, columns=[PROJECTION])) == Counter(range(ROWS))

    def test_attempts_dying_after_producing_to_both_streams_are_never_returned(self, table: Table) -> None:
        self._commit(table, 1, rows(), attempts=3)
        assert projection_rows(table) == Counter({i: 3 for i in range(ROWS)})  # every attempt's rows
        projected = read(table, columns=[PROJECTION])
        assert ids(projected) == Counter(range(ROWS))

    def test_a_replayed_commit_adds_nothing_to_a_projected_read(self, table: Table) -> None:
        self._commit(table, 1, rows())
        task = table.write_task("w", 1, task="replay")
        task.write(rows(tag="replayed"))
        assert not table.commit("w", 1, [task.finish()]).committed
        projected = read(table, columns=[PROJECTION])
        assert ids(projected) == Counter(range(ROWS))
        assert all(c.row["name"].startswith("v1-") for c in projected)

    def test_a_reader_asking_for_a_column_outside_the_projection_reads_the_table_topic(
        self, table: Table, fetched: FetchedBytes
    ) -> None:
        self._commit(table, 1, rows())
        changes = read(table, columns=["score"])
        assert ids(changes) == Counter(range(ROWS))
        assert all(c.row["score"] == c.row["id"] * 0.5 for c in changes)
        assert fetched.by_topic[internals(table).projection_log_config().topic] == 0

    def test_positions_pass_between_projected_and_full_readers_without_gap_or_duplicate(self, table: Table) -> None:
        for commit_id in (1, 2, 3, 4):
            self._commit(table, commit_id, rows(50, start=(commit_id - 1) * 50))
        with table.reader(consistency="transactional", scan_mode="earliest", columns=[PROJECTION]) as reader:
            first = reader.poll(max_records=1)  # snapshot 1, whole
            saved = reader.position
        assert ids(first) == Counter(range(50)) and not saved.offsets
        with table.reader(position=saved) as reader:
            second = reader.poll(max_records=1)  # one partition of snapshot 2
            inside = reader.position
        assert inside.offsets, "the full reader stops inside snapshot 2"
        with table.reader(position=inside, columns=[PROJECTION]) as reader:
            rest = reader.read_all(idle_timeout_s=0.5)
        assert ids(first + second + rest) == Counter(range(200))

    def test_a_projected_read_maps_rows_written_before_an_added_column(self, table: Table) -> None:
        self._commit(table, 1, rows(100))
        table.alter(AddColumn("extra", pa.int32()))
        self._commit(table, 2, [{**r, "extra": 7} for r in rows(100, start=100)])
        projected = read(table, columns=[PROJECTION])
        assert ids(projected) == Counter(range(200))
        assert all(set(c.row) == {"id", "name"} for c in projected)
        with_extra = read(table, columns=[PROJECTION, "extra"])
        assert Counter(c.row["extra"] for c in with_extra) == Counter({None: 100, 7: 100})

    def test_a_projected_column_cannot_be_renamed(self, table: Table) -> None:
        self._commit(table, 1, rows(10))
        before = internals(table).files.latest_schema_id()
        with pytest.raises(SchemaChangeError, match="log.arrow.projection"):
            table.alter(RenameColumn(PROJECTION, "label"))
        assert internals(table).files.latest_schema_id() == before
        assert ids(read(table, columns=[PROJECTION])) == Counter(range(10))

    def test_verify_replays_the_projection_stream_too(self, table: Table) -> None:
        self._commit(table, 1, rows(), attempts=2)
        self._commit(table, 2, [("+U", {**r, "name": "renamed"}) for r in rows(20)])
        report = verify(table)
        assert report.consistent and report.projection_checked, report.summary()
        assert "projection stream" in report.summary()
