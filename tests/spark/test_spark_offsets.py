"""The source's offsets name their table and topic: a checkpoint of one table used for
another, or one ahead of the table, is refused; checkpoints written before offsets
named their table still work (and name it from then on)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import tablelog
from tablelog.errors import OptionError, ReaderPositionError
from tablelog.spark.options import SourceOptions
from tablelog.spark.source import TablelogStreamReader
from tablelog.table import Table

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def _table(warehouse: Path) -> Table:
    table = tablelog.create_table(str(warehouse), f"db.t_{uuid.uuid4().hex[:8]}", SCHEMA, primary_key=["id"],
                                  bucket=2, options={"log.system": "filesystem"})
    with table.writer() as writer:
        writer.write([{"id": i, "name": "x"} for i in range(10)])
        writer.commit()
    return table


def _source(table: Table, **options: str) -> TablelogStreamReader:
    return TablelogStreamReader(SourceOptions.parse(
        {"warehouse": table.warehouse.path, "table": table.identifier, **options}))


@pytest.mark.parametrize("consistency", ["transactional", "eventual"])
def test_a_checkpoint_offset_of_another_table_is_refused(tmp_path: Path, consistency: str) -> None:
    first, second = _table(tmp_path / "wh"), _table(tmp_path / "wh")
    offset = _source(first, **{"log.consistency": consistency}).initialOffset()
    assert offset["table"] == first.table_id
    source = _source(second, **{"log.consistency": consistency})
    with pytest.raises(ReaderPositionError, match="Spark checkpoint offset was saved from another table"):
        source.latestOffset(offset)
    with pytest.raises(ReaderPositionError, match="another table"):
        source.partitions(offset, offset)


def test_a_checkpoint_offset_ahead_of_the_table_is_refused(tmp_path: Path) -> None:
    table = _table(tmp_path / "wh")
    source = _source(table)
    with pytest.raises(ReaderPositionError, match="snapshot 99, ahead of table"):
        source.latestOffset({"v": 1, "table": table.table_id, "consistency": "transactional", "snapshot": 99,
                             "full": False})


def test_an_eventual_checkpoint_offset_past_the_end_of_the_log_is_refused(tmp_path: Path) -> None:
    table = _table(tmp_path / "wh")
    source = _source(table, **{"log.consistency": "eventual"})
    offset: dict[str, Any] = {"v": 1, "table": table.table_id, "consistency": "eventual", "snapshot": 1, "full": False,
                              "positions": {"0": str(10**9), "1": "0"}}
    with pytest.raises(ReaderPositionError, match="log position 1000000000 of partition 0, past the end"):
        source.latestOffset(offset)


def test_a_checkpoint_offset_without_its_table_is_refused(tmp_path: Path) -> None:
    source = _source(_table(tmp_path / "wh"))
    with pytest.raises(OptionError, match="it has no 'table'"):
        source.latestOffset({"v": 1, "consistency": "transactional", "snapshot": 0, "full": False, "positions": {}})


def test_a_streaming_query_given_another_tables_checkpoint_fails(spark: Any, tmp_path: Path) -> None:
    first, second = _table(tmp_path / "wh"), _table(tmp_path / "wh")
    checkpoint = str(tmp_path / "ck")

    def run(table: Table) -> None:
        query = (spark.readStream.format("tablelog").option("warehouse", table.warehouse.path)
                 .option("table", table.identifier).load()
                 .writeStream.format("noop").option("checkpointLocation", checkpoint).start())
        try:
            query.processAllAvailable()
        finally:
            query.stop()

    run(first)
    with pytest.raises(Exception, match="saved from another table"):
        run(second)
