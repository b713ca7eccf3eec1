"""A table without a log (log.system=none) keeps its rows, not its changes: a reader
returns its rows, and refuses, clearly, what would wait or read nothing for ever."""

from pathlib import Path

import pyarrow as pa
import pytest

import tablelog
from tablelog.errors import OptionError


@pytest.fixture
def table(tmp_path: Path) -> tablelog.Table:
    created = tablelog.create_table(str(tmp_path), "db.t", pa.schema([("id", pa.int64())]), primary_key=["id"])
    with created.writer() as writer:
        writer.write([{"id": 1}, {"id": 2}])
        writer.commit()
    return created


@pytest.mark.parametrize("consistency", ["transactional", "eventual"])
def test_a_reader_of_a_table_without_a_log_returns_its_rows_and_then_nothing(
    table: tablelog.Table, consistency: str
) -> None:
    with table.reader(consistency=consistency) as reader:
        assert sorted(c.row["id"] for c in reader.read_all(idle_timeout_s=0.1)) == [1, 2]
        assert reader.poll() == []
        assert reader.poll_arrow().num_rows == 0


@pytest.mark.parametrize("scan_mode", ["earliest", "latest"])
def test_a_scan_mode_that_reads_changes_is_refused_for_a_table_without_a_log(
    table: tablelog.Table, scan_mode: str
) -> None:
    with pytest.raises(OptionError, match=rf"log.system=none.*scan.mode='{scan_mode}'.*latest-full"):
        table.reader(scan_mode=scan_mode)


def test_following_a_table_without_a_log_is_refused_instead_of_waiting_for_ever(table: tablelog.Table) -> None:
    with table.reader() as reader, pytest.raises(OptionError, match="no changelog to follow"):
        next(reader.changes(follow=True))
