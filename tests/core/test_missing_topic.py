"""A reader whose table topic does not exist (a log option given wrong when the table was
opened) fails with an error naming the topic and the options, instead of reading every
change from the table files without a word; records the log lost from a topic that exists
are still read from the table files, and the reader says so once."""

from __future__ import annotations

import logging
import os
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

from tablelog.errors import MissingTopicError
from tablelog.logs.filesystem.topic import partition_file_name
from tablelog.table import Table
from tablelog.tables import create_table, open_table

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


@pytest.fixture
def table(tmp_path: Path) -> Table:
    table = create_table(str(tmp_path / "wh"), "db.t", SCHEMA, primary_key=["id"], bucket=2,
                         options={"log.system": "filesystem", "log.fetch-timeout-ms": "300"})
    with table.writer() as writer:
        writer.write([{"id": i, "name": f"n{i}"} for i in range(20)])
        writer.commit()
    return table


@pytest.mark.parametrize("consistency", ["transactional", "eventual"])
def test_a_reader_of_a_table_opened_where_its_topic_does_not_exist_fails_naming_the_topic_and_the_option(
    table: Table, tmp_path: Path, consistency: str
) -> None:
    elsewhere = str(tmp_path / "elsewhere")
    misplaced = open_table(table.warehouse.path, "db.t", {"filesystem.path": elsewhere})
    with misplaced.reader(consistency=consistency, scan_mode="earliest") as reader, \
            pytest.raises(MissingTopicError) as raised:
        reader.read_all(idle_timeout_s=0.3)
    message = str(raised.value)
    assert raised.value.topic == "db.t"
    assert "its log topic 'db.t' does not exist" in message
    assert f"It was opened with filesystem.path={elsewhere!r} (the table has none)" in message
    assert "'filesystem.topic'" in message
    with table.reader(consistency=consistency, scan_mode="earliest") as reader:  # where the log is
        assert Counter(c.row["id"] for c in reader.read_all(idle_timeout_s=0.3)) == Counter(range(20))


def test_records_lost_from_a_topic_that_exists_are_read_from_the_table_files_and_said_once(
    table: Table, caplog: pytest.LogCaptureFixture
) -> None:
    for partition in (0, 1):
        os.truncate(Path(table.warehouse.path) / ".tablelog" / "log" / "db.t" / partition_file_name(partition), 0)
    with caplog.at_level(logging.WARNING, logger="tablelog"), \
            table.reader(consistency="transactional", scan_mode="earliest") as reader:
        changes = reader.read_all(idle_timeout_s=0.3)
    assert Counter(c.row["id"] for c in changes) == Counter(range(20))
    said = [r.getMessage() for r in caplog.records if "reads such changes from the table files" in r.getMessage()]
    assert len(said) == 1, said
    assert "table 'db.t': the log does not have the records snapshot 1 committed to partition" in said[0]
