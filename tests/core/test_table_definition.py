"""Options that define a table are fixed when it is created: given again when it is
opened or written, an equal value is fine, a different one is an error before
anything is written. Runtime options (secrets, client settings, time-outs, reader
defaults) may differ."""

from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

import tablelog
from tablelog.cli import cli
from tablelog.errors import OptionError, SchemaMismatchError
from tablelog.table import internals
from tablelog.verify import verify

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


@pytest.fixture
def table(tmp_path: Path) -> tablelog.Table:
    table = tablelog.create_table(
        str(tmp_path / "wh"), "db.t", SCHEMA, primary_key=["id"], bucket=2,
        options={"log.system": "filesystem", "file.format": "parquet"},
    )
    with table.writer() as writer:
        writer.write([{"id": 1, "name": "a"}, {"id": 2, "name": "b"}])
        writer.commit()
    return table


def reopen(table: tablelog.Table, **options: str) -> tablelog.Table:
    return tablelog.open_table(table.warehouse.path, table.identifier, options)


def definition_of(table: tablelog.Table) -> tuple[object, ...]:
    return (table.options.log_system, table.options.log_format, table.changelog_mode, table.topic,
            table.log_partitions, table.primary_key, internals(table).files.bucket, internals(table).files.properties)


def assert_unchanged(table: tablelog.Table) -> None:
    """One snapshot, nothing more in the log, and tail/verify still agree."""
    assert [s.id for s in table.snapshots()] == [1]
    assert verify(table).consistent
    with table.reader(consistency="eventual", scan_mode="earliest") as reader:
        assert len(reader.read_all(idle_timeout_s=0.2)) == 2


@pytest.mark.parametrize(("key", "value", "actual", "given"), [
    ("log.format", "json", "'debezium-json'", "'json'"),
    ("log.system", "none", "'filesystem'", "'none'"),
    ("log.changelog-mode", "all", "'auto'", "'all'"),
    ("log.system.partitions", "4", "2", "4"),  # unset means one partition per bucket
    ("filesystem.topic", "other", "'db.t'", "'other'"),
    ("primary-key", "name", "'id'", "'name'"),
    ("bucket", "3", "2", "3"),
    ("file.format", "orc", "'parquet'", "'orc'"),
    ("merge-engine", "first-row", "'deduplicate'", "'first-row'"),
    ("target-file-size", "1 mb", "it unset", "'1 mb'"),
])
def test_a_different_defining_option_is_refused_when_the_table_is_opened(
    table: tablelog.Table, key: str, value: str, actual: str, given: str
) -> None:
    with pytest.raises(OptionError, match=rf"{key}: the table has {actual}, given {given}\).*fixed when the table is created"):
        reopen(table, **{key: value})
    assert_unchanged(table)


@pytest.mark.parametrize(("key", "value"), [
    ("log.format", "DEBEZIUM-JSON"),
    ("log.system", "filesystem"),
    ("log.system.partitions", "2"),  # unset means one partition per bucket
    ("filesystem.topic", "db.t"),  # the derived default
    ("primary-key", " id "),
    ("bucket", "2"),
    ("file.format", "parquet"),
    ("merge-engine", "deduplicate"),  # Paimon's default, not stored
])
def test_an_equal_defining_option_is_accepted(table: tablelog.Table, key: str, value: str) -> None:
    assert definition_of(reopen(table, **{key: value})) == definition_of(table)


@pytest.mark.parametrize(("key", "value"), [
    ("log.consistency", "eventual"),
    ("scan.mode", "earliest"),
    ("log.flush-timeout-ms", "1000"),
    ("log.fetch-timeout-ms", "1000"),
    ("log.max-record-bytes", "5000"),
    ("log.foreign-records", "skip"),
    ("log.system.auto-register", "false"),
    ("filesystem.path", "/elsewhere/log"),  # where the log is reached may differ per client
])
def test_runtime_options_may_differ_when_the_table_is_opened(table: tablelog.Table, key: str, value: str) -> None:
    reopen(table, **{key: value})


def test_a_write_through_a_table_opened_with_another_log_format_is_impossible(table: tablelog.Table) -> None:
    with pytest.raises(OptionError, match="log.format"), reopen(table, **{"log.format": "json"}).writer() as writer:
        writer.write([{"id": 3, "name": "c"}])
        writer.commit()
    assert_unchanged(table)


def test_create_with_exist_ok_refuses_a_different_definition(table: tablelog.Table) -> None:
    with pytest.raises(OptionError, match="bucket: the table has 2, given 4"):
        tablelog.create_table(table.warehouse.path, "db.t", SCHEMA, primary_key=["id"], bucket=4,
                              options={"log.system": "filesystem"}, exist_ok=True)
    same = tablelog.create_table(table.warehouse.path, "db.t", SCHEMA, primary_key=["id"], bucket=2,
                                 options={"log.system": "filesystem"}, exist_ok=True)
    assert definition_of(same) == definition_of(table)


def test_every_difference_is_named_in_one_error(table: tablelog.Table) -> None:
    with pytest.raises(OptionError) as err:
        reopen(table, **{"log.format": "json", "bucket": "5"})
    assert "log.format: the table has 'debezium-json', given 'json'" in str(err.value)
    assert "bucket: the table has 2, given 5" in str(err.value)


@pytest.mark.parametrize("command", ["describe", "tail", "verify"])
def test_the_cli_refuses_a_different_defining_option(table: tablelog.Table, command: str) -> None:
    result = CliRunner().invoke(cli, [command, "-w", table.warehouse.path, "db.t", "-o", "log.format=json"])
    assert result.exit_code == 1, result.output
    assert "log.format: the table has 'debezium-json', given 'json'" in result.output
    assert_unchanged(table)


def test_create_with_exist_ok_refuses_a_different_schema(table: tablelog.Table) -> None:
    other = pa.schema([("id", pa.int64()), ("name", pa.int32())])
    with pytest.raises(SchemaMismatchError, match="already exists with columns id int64, name string; the given schema has id int64, name int32"):
        tablelog.create_table(table.warehouse.path, "db.t", other, primary_key=["id"], bucket=2,
                              options={"log.system": "filesystem"}, exist_ok=True)
    same = pa.schema([("id", pa.int64()), ("name", pa.large_string())])  # as Paimon stores it: string
    tablelog.create_table(table.warehouse.path, "db.t", same, primary_key=["id"], bucket=2,
                          options={"log.system": "filesystem"}, exist_ok=True)


def test_keys_are_compared_whatever_their_case(table: tablelog.Table) -> None:
    with pytest.raises(OptionError, match="log.format: the table has 'debezium-json', given 'json'"):
        reopen(table, **{"LOG.Format": "json"})
    assert reopen(table, **{"Log.Consistency": "eventual"}).options.log_consistency.value == "eventual"
