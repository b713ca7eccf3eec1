"""An entry point parses the options it is given once, into the object every layer below
takes (:class:`tablelog.options.GivenOptions`): no layer parses them again."""

import pickle
import traceback
from pathlib import Path

import pyarrow as pa
import pytest

import tablelog
from tablelog.options import Consistency
from tablelog.options import keys as option_keys

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def spy_on_reads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[list[str], list[str]]]:
    """Every mapping of options read (its values converted): its keys, and the files on the
    stack when it was."""
    reads: list[tuple[list[str], list[str]]] = []
    read = option_keys.read_values

    def spy(raw: dict[str, object], fields: object) -> object:
        reads.append(([k.strip().lower() for k in raw], [frame.filename for frame in traceback.extract_stack()]))
        return read(raw, fields)  # type: ignore[arg-type]

    monkeypatch.setattr(option_keys, "read_values", spy)
    return reads


def test_open_table_parses_the_options_it_is_given_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = tablelog.create_table(str(tmp_path), "db.t", SCHEMA, primary_key=["id"],
                                  options={"log.system": "filesystem", "log.consistency": "eventual"})
    reads = spy_on_reads(monkeypatch)
    opened = tablelog.open_table(table.warehouse.path, "db.t",
                                 {"Log.Fetch-Timeout-Ms": "5000", "filesystem.topic": "db.t"})
    assert opened.options.log_fetch_timeout_ms == 5000
    assert opened.options.log_consistency is Consistency.EVENTUAL  # the stored option, under the given ones
    assert [keys for keys, _ in reads if "log.fetch-timeout-ms" in keys] == [["log.fetch-timeout-ms", "filesystem.topic"]]
    assert len(reads) == 2  # and the table's stored options, once


def test_a_spark_write_parses_its_options_at_its_entry_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    from tablelog.spark.sink import plan_write

    schema = StructType([StructField("id", LongType()), StructField("name", StringType())])
    options = {"warehouse": str(tmp_path), "table": "db.t", "log.system": "filesystem", "primary-key": "id",
               "log.consistency": "eventual"}
    reads = spy_on_reads(monkeypatch)
    plan_write(options, schema, overwrite=False, streaming=False)  # creates the table
    plan = plan_write(options, schema, overwrite=False, streaming=False)  # opens it
    executor_table = pickle.loads(pickle.dumps(plan)).open()  # as each task and the commit do
    assert executor_table.options.log_consistency is Consistency.EVENTUAL
    # primary-key is among the given options, never among the stored ones a table reads.
    given = [stack for keys, stack in reads if "primary-key" in keys]
    assert len(given) == 2  # once per write: when the data source's options are parsed
    for stack in given:
        assert any(name.endswith("tablelog/spark/options.py") for name in stack)
        assert not any(name.endswith("tablelog/table.py") for name in stack)
