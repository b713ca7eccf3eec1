"""Partitioned tables: created through every entry point (Python, CLI, Paimon's
``partition`` option), refused where Paimon refuses them, and read by pypaimon alone.
Their writes and reads on each log system: the conformance group
:class:`tablelog.testing.conformance.partitioned.PartitionedTableTests` (the file log's in
test_filesystem_log.py, Kafka's in tests/kafka)."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

import tablelog
from tablelog import SetOption
from tablelog.cli import cli
from tablelog.errors import CommitError, OptionError, SchemaChangeError
from tablelog.partition_time import partition_time
from tablelog.store import PartitionDrop
from tablelog.table import internals
from tablelog.testing.partition_scenarios import (
    DAYS,
    SCHEMA,
    TableFilesReader,
    rows,
)
from tablelog.verify import verify
from tablelog.writing.routing import partition_order

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
    assert sorted(table.rows(partitions=[{"dt": DAYS[1]}])["id"].to_pylist()) == list(range(20))
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
    for bucket, indices in files.key_hash_rows(data, files.bucket):
        for index in indices:
            by_id.setdefault(data["id"][index].as_py(), set()).add(bucket)
    assert len(by_id) == 40 and all(len(buckets) == 1 for buckets in by_id.values())
    assert len({b for buckets in by_id.values() for b in buckets}) == 4
    order, groups = partition_order(files, data, 4)  # the writer's own routing (its integer-key hash)
    assert order is not None
    routed = {data["id"][int(order[i])].as_py(): log_partition
              for log_partition, start, stop in groups for i in range(start, stop)}
    assert routed == {key: buckets.pop() for key, buckets in by_id.items()}


def test_a_reader_of_some_partitions_polls_the_same_changes_as_arrow(tmp_path: Path) -> None:
    table = create(tmp_path, partition_keys=["dt"])
    with table.writer("w") as writer:
        for tag in ("v1", "v2"):
            writer.write(rows(10, tag=tag))
            writer.commit()
    wanted = [{"dt": DAYS[1]}]
    with table.reader(consistency="transactional", scan_mode="earliest", partitions=wanted) as reader:
        changes = reader.read_all()
    with table.reader(consistency="transactional", scan_mode="earliest", partitions=wanted) as reader:
        batch = reader.poll_arrow(max_records=100_000, timeout_s=0.5)
        assert reader.poll_arrow(timeout_s=0.2).num_rows == 0
    assert len(changes) == 20 and batch.to_pylist() == reader.to_arrow(changes).to_pylist()


def test_describe_json_names_the_partition_columns(tmp_path: Path) -> None:
    create(tmp_path, partition_keys=["dt"])
    described = CliRunner().invoke(cli, ["describe", "-w", str(tmp_path / "wh"), "db.t", "--format", "json"])
    assert described.exit_code == 0, described.output
    assert json.loads(described.output)["partition_keys"] == ["dt"]


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"options": {"partition.expiration-time": "2 d"}}, r"set on a table without partitions"),
    ({"primary_key": [], "partition_keys": ["dt"], "options": {"partition.expiration-time": "2 d"}},
     r"needs a primary-key table"),
    ({"partition_keys": ["dt"], "options": {"partition.expiration-time": "2 d", "partition.timestamp-pattern": "$day"}},
     r"names \['\$day'\], which are not partition columns"),
    ({"partition_keys": ["dt"], "options": {"partition.timestamp-formatter": "yyyy-MM-dd EEE"}},
     r"'EEE' is not a pattern letter"),
])
def test_partition_expiry_where_it_cannot_run_is_refused_at_create(tmp_path: Path, kwargs: dict, message: str) -> None:
    with pytest.raises(OptionError, match=message):
        create(tmp_path, **kwargs)
    assert not (tmp_path / "wh" / "db.db" / "t").exists()


def test_a_partition_written_after_its_rows_were_read_is_not_dropped(tmp_path: Path) -> None:
    table = create(tmp_path, partition_keys=["dt"])
    with table.writer("w") as writer:
        writer.write(rows(5))
        writer.commit()
        files = internals(table).files
        read_at = files.latest_snapshot().id  # type: ignore[union-attr]
        drop = PartitionDrop((("dt", DAYS[0]),), read_at)
        writer.write([{"dt": DAYS[0], "id": 99, "v": "late"}])  # a row the drop's -D records would miss
        writer.commit()
    task = table.write_task("expiry", 1)
    task.drop_partition(drop, files.read_rows(read_at, partitions=[{"dt": DAYS[0]}]))
    with pytest.raises(CommitError, match=r"wrote to partition \{'dt': '2026-11-22'\} since snapshot"):
        table.commit("expiry", 1, [task.finish()])
    assert len(table.rows()) == 3 * 5 + 1  # nothing dropped
    report = verify(table)
    assert report.consistent, report.summary()


def test_cli_expire_partitions_drops_the_expired_ones(tmp_path: Path) -> None:
    today = datetime.date.today()
    old, current = str(today - datetime.timedelta(days=5)), str(today)
    table = create(tmp_path, partition_keys=["dt"],
                   options={"partition.expiration-time": "2 d", "partition.expiration-check-interval": "1 d"})
    with table.writer("w") as writer:
        writer.write([{"dt": current, "id": 1, "v": "x"}])
        writer.commit()  # checks: nothing old yet; the next check is a day away
        writer.write([{"dt": old, "id": 1, "v": "x"}, {"dt": old, "id": 2, "v": "y"}])
        writer.commit()
    assert len(table.rows()) == 3
    runner = CliRunner()
    dry = runner.invoke(cli, ["expire", "-w", str(tmp_path / "wh"), "db.t", "--partitions", "--dry-run"])
    assert dry.exit_code == 0 and f"would drop partition dt={old}" in dry.output, dry.output
    done = runner.invoke(cli, ["expire", "-w", str(tmp_path / "wh"), "db.t", "--partitions"])
    assert done.exit_code == 0 and f"dropped partition dt={old}: 2 row(s)" in done.output, done.output
    assert [r["dt"] for r in table.rows().to_pylist()] == [current]
    assert verify(table).consistent


def test_cli_tail_partitions_prints_only_those_partitions_changes(tmp_path: Path) -> None:
    table = create(tmp_path, partition_keys=["dt"])
    with table.writer("w") as writer:
        writer.write(rows(4))
        writer.commit()
    result = CliRunner().invoke(cli, [
        "tail", "-w", str(tmp_path / "wh"), "db.t", "--scan-mode", "earliest", "--idle-timeout", "0.3",
        "--format", "json", "--partitions", f"dt={DAYS[0]};dt={DAYS[2]}",
    ])
    assert result.exit_code == 0, result.output
    printed = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert sorted((c["row"]["dt"], c["row"]["id"]) for c in printed) == sorted(
        (day, i) for day in (DAYS[0], DAYS[2]) for i in range(4))


@pytest.mark.parametrize(("given", "message"), [
    ([{"day": "x"}], r"\['day'\] are not partition columns of table 'db.t'; its partition columns: dt"),
    ([{"dt": "x"}, 0], r"give log partitions \(numbers\) or table partitions"),
])
def test_a_reader_of_partitions_the_table_does_not_have_is_refused_naming_them(
    tmp_path: Path, given: list, message: str
) -> None:
    table = create(tmp_path, partition_keys=["dt"])
    with pytest.raises(OptionError, match=message):
        table.reader(partitions=given)


def test_a_reader_of_table_partitions_of_an_unpartitioned_table_is_refused(tmp_path: Path) -> None:
    table = create(tmp_path)
    with pytest.raises(OptionError, match=r"table 'db.t' is not partitioned"):
        table.reader(partitions=[{"dt": DAYS[0]}])


def test_altering_a_table_to_expire_partitions_it_cannot_expire_is_refused(tmp_path: Path) -> None:
    table = create(tmp_path)  # no partitions
    with pytest.raises(SchemaChangeError, match=r"partition.expiration-time is set on a table without partitions"):
        table.alter(SetOption("partition.expiration-time", "2 d"))
    assert "partition.expiration-time" not in internals(tablelog.open_table(str(tmp_path / "wh"), "db.t")).files.properties
    partitioned = tablelog.create_table(str(tmp_path / "wh"), "db.p", SCHEMA, primary_key=["dt", "id"],
                                        partition_keys=["dt"], options=FILE_LOG)
    partitioned.alter(SetOption("partition.expiration-time", "2 d"))
    reopened = tablelog.open_table(str(tmp_path / "wh"), "db.p")
    assert reopened.options.partition_expiration_time == datetime.timedelta(days=2)


@pytest.mark.parametrize(("values", "pattern", "formatter", "expected"), [
    ({"dt": "2026-11-24"}, None, None, datetime.datetime(2026, 11, 24)),
    ({"dt": "2026-11-24 05:06:07"}, None, None, datetime.datetime(2026, 11, 24, 5, 6, 7)),
    ({"dt": "20261124", "hh": "05"}, "$dt $hh", "yyyyMMdd HH", datetime.datetime(2026, 11, 24, 5)),
    ({"dt": "2026-11-24", "hh": "05"}, "$dtT$hh", "yyyy-MM-dd'T'HH", datetime.datetime(2026, 11, 24, 5)),
    ({"dt": "20261124"}, None, None, None),  # Paimon's default format is yyyy-MM-dd
    ({"dt": "not a day"}, None, None, None),
])
def test_a_partitions_time_comes_from_its_values_as_paimon_reads_it(
    values: dict, pattern: str | None, formatter: str | None, expected: datetime.datetime | None
) -> None:
    assert partition_time(values, list(values), pattern, formatter) == expected


def test_a_reader_of_some_partitions_and_some_columns_of_an_append_table_returns_their_changes(
    tmp_path: Path,
) -> None:
    table = create(tmp_path, primary_key=[], partition_keys=["dt"], options={"log.format": "arrow"})
    with table.writer("w") as writer:
        writer.write(rows(5))
        writer.commit()
    with table.reader(consistency="transactional", scan_mode="earliest", columns=["v"],
                      partitions=[{"dt": DAYS[0]}]) as reader:
        changes = reader.read_all()
    assert sorted((c.row["dt"], c.row["v"]) for c in changes) == [(DAYS[0], f"v1-{i}") for i in range(5)]
