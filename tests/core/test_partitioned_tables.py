"""Partitioned tables: created through every entry point (Python, CLI, Paimon's
``partition`` option), refused where Paimon refuses them, and read by pypaimon alone.
Their writes and reads on each log system: the conformance group
:class:`tablelog.testing.conformance.partitioned.PartitionedTableTests` (the file log's in
test_filesystem_log.py, Kafka's in tests/kafka)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

import tablelog
from tablelog.cli import cli
from tablelog.errors import OptionError
from tablelog.table import internals
from tablelog.testing.partition_scenarios import (
    DAYS,
    SCHEMA,
    TableFilesReader,
    rows,
)

FILE_LOG = {"log.system": "filesystem"}


def create(tmp_path: Path, **kwargs: object) -> tablelog.Table:
    kwargs.setdefault("primary_key", ["dt", "id"])
    kwargs.setdefault("bucket", 2)
    options = {**FILE_LOG, **kwargs.pop("options", {})}  # type: ignore[dict-item]
    return tablelog.create_table(str(tmp_path / "wh"), "db.t", SCHEMA, options=options, **kwargs)  # type: ignore[arg-type]


def test_partition_keys_create_a_paimon_partitioned_table_that_pypaimon_reads(
    tmp_path: Path, read_with_pypaimon: TableFilesReader
) -> None:
    table = create(tmp_path, partition_keys=["dt"])
    with table.writer() as writer:
        writer.write(rows())
        writer.commit()
    assert internals(table).files.partition_keys == ("dt",)
    assert "partition" not in internals(table).files.properties  # in the schema, as Paimon keeps it
    partitions, found = read_with_pypaimon(str(tmp_path / "wh"), "db.t")
    assert partitions == ["dt"] and sorted((r["dt"], r["id"]) for r in found) == sorted((r["dt"], r["id"]) for r in rows())


def test_paimons_partition_option_is_the_same_as_partition_keys(tmp_path: Path) -> None:
    table = create(tmp_path, options={"partition": "dt"})
    assert internals(table).files.partition_keys == ("dt",)
    reopened = tablelog.open_table(str(tmp_path / "wh"), "db.t", {"partition": "dt"})
    assert reopened.options.partition == ("dt",)


def test_partition_given_twice_with_different_columns_is_refused(tmp_path: Path) -> None:
    with pytest.raises(OptionError, match=r"'partition' is given twice with different values"):
        create(tmp_path, partition_keys=["dt"], options={"partition": "id"})
    assert not (tmp_path / "wh" / "db.db" / "t").exists()


def test_opening_with_other_partition_columns_is_refused(tmp_path: Path) -> None:
    create(tmp_path, partition_keys=["dt"])
    with pytest.raises(OptionError, match=r"partition: the table has 'dt', given 'id'"):
        tablelog.open_table(str(tmp_path / "wh"), "db.t", {"partition": "id"})


def test_partition_columns_outside_the_primary_key_are_refused_naming_them(tmp_path: Path) -> None:
    with pytest.raises(OptionError, match=r"partition columns \['dt'\] are not in the primary key \(id\)"):
        create(tmp_path, primary_key=["id"], partition_keys=["dt"])
    assert not (tmp_path / "wh" / "db.db" / "t").exists()


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"partition_keys": ["day"]}, r"names unknown columns \['day'\]"),
    ({"partition_keys": ["dt", "id"]}, r"is the whole primary key"),
    ({"partition_keys": ["dt"], "options": {"bucket-key": "dt,id"}}, r"\['dt'\] are partition columns"),
])
def test_partition_columns_paimon_refuses_are_refused(tmp_path: Path, kwargs: dict, message: str) -> None:
    with pytest.raises(OptionError, match=message):
        create(tmp_path, **kwargs)


def test_an_append_tables_bucket_key_leaves_out_its_partition_columns(tmp_path: Path) -> None:
    table = create(tmp_path, primary_key=[], partition_keys=["dt"])
    assert internals(table).files.bucket_keys == ("id", "v")


def test_cli_create_partition_makes_a_partitioned_table(tmp_path: Path) -> None:
    warehouse = str(tmp_path / "wh")
    result = CliRunner().invoke(cli, [
        "create", "-w", warehouse, "db.t", "--schema", "dt string, id bigint, v string",
        "-k", "dt,id", "--partition", "dt", "-b", "2", "-o", "log.system=filesystem",
    ])
    assert result.exit_code == 0, result.output
    assert internals(tablelog.open_table(warehouse, "db.t")).files.partition_keys == ("dt",)
    described = CliRunner().invoke(cli, ["describe", "-w", warehouse, "db.t"])
    assert "partitioned by: dt" in described.output


def test_bucket_of_a_key_does_not_depend_on_its_partition(tmp_path: Path) -> None:
    table = create(tmp_path, partition_keys=["dt"], bucket=4)
    files = internals(table).files
    data = pa.Table.from_pylist([{"dt": day, "id": i, "v": "x"} for day in DAYS for i in range(40)], SCHEMA)
    by_id: dict[int, set[int]] = {}
    for bucket, indices in files.bucket_rows(data):
        for index in indices:
            by_id.setdefault(data["id"][index].as_py(), set()).add(bucket)
    assert len(by_id) == 40 and all(len(buckets) == 1 for buckets in by_id.values())
    assert len({b for buckets in by_id.values() for b in buckets}) == 4
