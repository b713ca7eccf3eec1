"""A value in a float column that is text but none of the special floats (NaN,
Infinity, -Infinity) is not one of the table's rows: readers report it as a foreign
record, as any value that does not decode, never as a bare KeyError."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from tablelog.errors import ForeignRecordError
from tablelog.records import ProduceBatch
from tablelog.table import Table, internals
from tablelog.tables import create_table

SCHEMA = pa.schema([("id", pa.int64()), ("x", pa.float64())])


@pytest.fixture
def table(tmp_path: Path) -> Table:
    table = create_table(str(tmp_path / "wh"), "db.t", SCHEMA, primary_key=["id"], bucket=1,
                         options={"log.system": "filesystem", "log.format": "json"})
    with internals(table).open_log() as log:
        token = internals(table).token_prefix + "0" * 16
        values = [b'{"id": 1, "x": 0.5, "_kind": "+I"}', b'{"id": 2, "x": "nope", "_kind": "+I"}',
                  b'{"id": 3, "x": "NaN", "_kind": "+I"}']
        log.produce(ProduceBatch(token, 0, [None] * 3, values, 0))
        log.flush(5)
    return table


def test_text_in_a_float_column_fails_an_eventual_read_naming_the_record(table: Table) -> None:
    with table.reader(consistency="eventual", scan_mode="earliest") as reader, \
            pytest.raises(ForeignRecordError, match=r"partition 0, position \d+: its value does not decode as json"):
        reader.read_all()


def test_text_in_a_float_column_is_skipped_and_counted_by_an_eventual_read(table: Table) -> None:
    with table.reader(consistency="eventual", scan_mode="earliest", options={"log.foreign-records": "skip"}) as reader:
        changes = reader.read_all()
        assert reader.foreign_skipped == 1
    assert [c.row["id"] for c in changes] == [1, 3]
