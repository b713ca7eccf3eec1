"""An option given twice with different values is an error naming both values, on the
command line and in the Python API; an identical repeat passes."""

from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

import tablelog
from tablelog.cli import cli
from tablelog.errors import OptionError
from tablelog.table import internals

SCHEMA = pa.schema([("id", pa.int64()), ("x", pa.string())])


def create(tmp_path: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(
        cli, ["create", "-w", str(tmp_path / "wh"), "db.t", "--schema", "id bigint, x string", *args]
    )
    return result.exit_code, result.output


@pytest.mark.parametrize(("args", "message"), [
    (["-b", "2", "-o", "bucket=3"], "option 'bucket' is given twice with different values: -o bucket=3 and -b/--bucket 2"),
    (["-k", "id", "-o", "primary-key=x"], "-o primary-key=x and -k/--primary-key id"),
    (["-o", "log.format=json", "-o", "log.format=debezium-json"], "-o log.format=json and -o log.format=debezium-json"),
    (["-o", "kafka.topic=a", "-o", "KAFKA.TOPIC=b"], "-o kafka.topic=a and -o KAFKA.TOPIC=b"),
    (["-o", "file.format=orc", "-o", "file.format=avro"], "-o file.format=orc and -o file.format=avro"),
])
def test_a_cli_option_given_twice_with_different_values_is_refused(
    tmp_path: Path, args: list[str], message: str
) -> None:
    code, output = create(tmp_path, *args)
    assert code == 1, output
    assert message in " ".join(output.split())
    assert not (tmp_path / "wh" / "db.db" / "t").exists()


@pytest.mark.parametrize(("args", "message"), [
    (["-b", "2", "-b", "3"], "option '-b/--bucket' is given twice with different values: -b 2 and -b 3"),
    (["-b2", "--bucket=3"], "-b2 and --bucket=3"),
    (["-k", "id", "--primary-key", "x"], "option '-k/--primary-key' is given twice with different values: -k id and --primary-key x"),
    (["--schema", "id bigint"], "option '--schema' is given twice with different values: --schema 'id bigint, x string' and --schema 'id bigint'"),
    (["-w", "{tmp}/elsewhere"], "option '-w/--warehouse' is given twice with different values"),
])
def test_a_single_valued_cli_option_given_twice_with_different_values_is_refused(
    tmp_path: Path, args: list[str], message: str
) -> None:
    code, output = create(tmp_path, *(a.replace("{tmp}", str(tmp_path)) for a in args))
    assert code == 1, output
    assert message in " ".join(output.split())
    assert not (tmp_path / "wh" / "db.db" / "t").exists()
    assert not (tmp_path / "elsewhere").exists()


def test_a_tail_option_given_twice_with_different_values_is_refused(tmp_path: Path) -> None:
    create(tmp_path)
    result = CliRunner().invoke(
        cli, ["tail", "-w", str(tmp_path / "wh"), "db.t", "--format", "json", "--format", "text"]
    )
    assert result.exit_code == 1, result.output
    assert "option '--format' is given twice with different values: --format json and --format text" in (
        " ".join(result.output.split())
    )


@pytest.mark.parametrize("args", [
    ["-b", "2", "-b", "2"],
    ["-b", "2", "--bucket=02"],
    ["-k", "id", "--primary-key", "id", "-o", "log.system=none", "-o", "log.system=none"],
])
def test_a_single_valued_cli_option_repeated_with_an_equal_value_passes(tmp_path: Path, args: list[str]) -> None:
    code, output = create(tmp_path, *args)
    assert code == 0, output


@pytest.mark.parametrize("args", [
    ["-b", "2", "-o", "bucket=2"],
    ["-k", "id", "-o", "primary-key=id"],
    ["-o", "log.system=filesystem", "-o", "log.system=filesystem"],
    ["-o", "log.format=JSON", "-o", "log.format=json"],
])
def test_an_identical_repeat_passes(tmp_path: Path, args: list[str]) -> None:
    code, output = create(tmp_path, *args)
    assert code == 0, output


def test_a_secret_given_twice_is_not_echoed(tmp_path: Path) -> None:
    code, output = create(tmp_path, "-o", "kafka.sasl.password=first-s3cret", "-o", "kafka.sasl.password=second-s3cret")
    assert code == 1 and "given twice" in output
    assert "s3cret" not in output


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"bucket": 2, "options": {"bucket": "3"}}, r"'bucket' is given twice with different values: bucket='2' and options\['bucket'\]='3'"),
    ({"primary_key": ["id"], "options": {"primary-key": "x"}}, "primary_key='id' and options"),
    ({"options": {"bucket": "2", "BUCKET": "3"}}, "option 'bucket' is given twice with different values: bucket='2' and BUCKET='3'"),
])
def test_the_python_api_refuses_one_option_given_twice_with_different_values(
    tmp_path: Path, kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(OptionError, match=message):
        tablelog.create_table(str(tmp_path / "wh"), "db.t", SCHEMA, **kwargs)  # type: ignore[arg-type]
    assert not (tmp_path / "wh" / "db.db" / "t").exists()


def test_the_python_api_accepts_an_identical_repeat(tmp_path: Path) -> None:
    table = tablelog.create_table(str(tmp_path / "wh"), "db.t", SCHEMA, primary_key=["id"], bucket=2,
                                  options={"primary-key": "id", "bucket": 2, "Bucket": "2"})
    assert table.primary_key == ("id",) and internals(table).files.bucket == 2


@pytest.mark.parametrize(("args", "message"), [
    (["--consistency", "eventual", "-o", "log.consistency=transactional"],
     "-o log.consistency=transactional and --consistency eventual"),
    (["--scan-mode", "earliest", "-o", "scan.mode=latest"], "-o scan.mode=latest and --scan-mode earliest"),
])
def test_a_tail_flag_and_a_different_option_for_the_same_key_are_refused(
    tmp_path: Path, args: list[str], message: str
) -> None:
    assert create(tmp_path, "-o", "log.system=filesystem")[0] == 0
    result = CliRunner().invoke(cli, ["tail", "-w", str(tmp_path / "wh"), "db.t", *args])
    assert result.exit_code == 1, result.output
    assert message in " ".join(result.output.split())


def test_a_tail_flag_repeated_as_an_equal_option_passes(tmp_path: Path) -> None:
    assert create(tmp_path, "-o", "log.system=filesystem")[0] == 0
    result = CliRunner().invoke(cli, ["tail", "-w", str(tmp_path / "wh"), "db.t", "--consistency", "eventual",
                                      "-o", "log.consistency=eventual", "--idle-timeout", "0.1"])
    assert result.exit_code == 0, result.output
