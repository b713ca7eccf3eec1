"""The projection stream of an ``arrow`` log (``log.arrow.projection``) on the built-in file
log: the scenarios every log system runs, the option's refusals, retention of the
stream, and a stream that lost its records."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

import tablelog
from tablelog.cli import cli
from tablelog.errors import LogDataLostError, OptionError
from tablelog.logs.filesystem.segments import list_bases
from tablelog.store import Warehouse
from tablelog.table import Table, internals
from tablelog.testing import NO_COMPACTION
from tablelog.testing.projection_scenarios import (
    PROJECTION,
    SCHEMA,
    ProjectionScenarios,
    ids,
    read,
    rows,
)
from tablelog.verify import verify


class TestProjectionOnTheFileLog(ProjectionScenarios):
    @pytest.fixture
    def log_options(self) -> dict[str, str]:
        return {"log.system": "filesystem"}


@pytest.mark.parametrize(("options", "message"), [
    ({"log.arrow.projection": "name,nope"}, r"log.arrow.projection='name,nope' names unknown columns \['nope'\]"),
    ({"log.arrow.projection": "id"}, "names only primary-key columns"),
    ({"log.format": "debezium-json", "log.arrow.projection": "name"}, "needs log.format=arrow"),
])
def test_a_projection_the_table_cannot_have_is_refused_and_no_table_is_created(
    tmp_path: Path, options: dict[str, str], message: str
) -> None:
    with pytest.raises(OptionError, match=message):
        tablelog.create_table(str(tmp_path), "db.t", SCHEMA, primary_key=["id"], bucket=2,
                              options={"log.system": "filesystem", "log.format": "arrow", **options})
    assert list(Warehouse(str(tmp_path)).tables()) == []


def _table(tmp_path: Path, bucket: int = 1, **options: str) -> Table:
    return tablelog.create_table(
        str(tmp_path), "db.t", SCHEMA, primary_key=["id"], bucket=bucket,
        options={"log.system": "filesystem", "log.format": "arrow", "log.arrow.projection": PROJECTION,
                 **options},
    )


def _with_rows(table: Table) -> Table:
    """The table, with 100 rows written in one commit."""
    with table.writer() as writer:
        writer.write(rows(100))
        writer.commit()
    return table


def _projection_dir(table: Table) -> Path:
    return Path(table.warehouse.path) / ".tablelog" / "log" / internals(table).projection_log_config().topic


def test_retention_deletes_the_projection_streams_segments_no_retained_snapshot_needs(tmp_path: Path) -> None:
    table = _table(tmp_path, **{"filesystem.segment-bytes": "1500", "snapshot.num-retained.min": "3",
                                "snapshot.num-retained.max": "3", "snapshot.expire.execution-mode": "sync",
                                **NO_COMPACTION})
    with table.writer() as writer:
        for i in range(30):
            writer.write(rows(5, start=i * 5))
            writer.commit()
    bases = list_bases(_projection_dir(table), 0)
    assert bases[0] > 0, "the first segments of the projection stream are deleted"
    projected = read(table, columns=[PROJECTION])
    assert ids(projected) == Counter(range(27 * 5, 30 * 5))  # what the 3 retained snapshots committed


def test_a_projection_stream_that_lost_its_records_is_made_up_from_the_table_files(tmp_path: Path) -> None:
    table = _with_rows(_table(tmp_path))
    shutil.rmtree(_projection_dir(table))
    projected = read(table, columns=[PROJECTION])
    assert ids(projected) == Counter(range(100))
    assert all(c.row["name"] == f"v1-{c.row['id']}" for c in projected)


def test_a_failed_read_of_the_projection_stream_leaves_the_position_between_snapshots(tmp_path: Path) -> None:
    table = _with_rows(_table(tmp_path, bucket=2))
    (_projection_dir(table) / "partition-00001.log").write_bytes(b"")  # partition 1 lost, partition 0 read
    with table.reader(consistency="transactional", scan_mode="earliest", columns=[PROJECTION],
                      changes_from_table=False) as reader:
        with pytest.raises(LogDataLostError):
            reader.poll()
        position = reader.position
    assert position.snapshot == 0 and position.offsets == {}  # never a position of the projection stream
    with table.reader(position=position) as reader:  # the table topic, from the snapshot's start
        assert ids(reader.read_all(idle_timeout_s=0.5)) == Counter(range(100))


def test_verify_reports_a_projection_stream_that_lost_its_records(tmp_path: Path) -> None:
    table = _with_rows(_table(tmp_path))
    shutil.rmtree(_projection_dir(table))
    report = verify(table)
    assert not report.consistent
    assert f"the projection stream (topic {internals(table).projection_log_config().topic!r})" in report.summary()


def test_the_projection_topic_is_created_with_the_table(tmp_path: Path) -> None:
    table = _table(tmp_path)
    assert _projection_dir(table).is_dir()
    assert table.projection == ("id", PROJECTION)
    assert table.schema.names == SCHEMA.names  # the table's own schema holds no projection column


def test_describe_names_the_projection_topic_and_its_columns(tmp_path: Path) -> None:
    table = _with_rows(_table(tmp_path))
    runner = CliRunner()
    text = runner.invoke(cli, ["describe", "--warehouse", str(tmp_path), "db.t"])
    assert text.exit_code == 0, text.output
    assert f"projection stream: topic {internals(table).projection_log_config().topic!r}, columns id, name" in text.output
    document = json.loads(runner.invoke(cli, ["describe", "--warehouse", str(tmp_path), "db.t",
                                              "--format", "json"]).output)
    assert document["log"]["projection"] == {"topic": internals(table).projection_log_config().topic, "columns": ["id", "name"]}
