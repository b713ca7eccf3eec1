"""A warehouse is a local directory, a file:// URL or an s3:// URL; anything else is
refused, never turned into a local folder named after the URL."""

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

import tablelog
from tablelog.cli import cli
from tablelog.demo_pipeline import run_demo
from tablelog.errors import OptionError, WarehouseError
from tablelog.store import warehouse_path

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


@pytest.fixture(autouse=True)
def in_empty_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test runs in an empty working directory, so a stray folder shows up."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.delenv("TABLELOG_WAREHOUSE", raising=False)
    return cwd


def assert_nothing_created(cwd: Path) -> None:
    assert list(cwd.iterdir()) == []


@pytest.mark.parametrize("url", ["hdfs://nn:8020/wh", "gs://b/wh", "abfs://c@acct/wh", "oss:/b/wh"])
def test_a_url_of_an_unsupported_scheme_is_refused_naming_its_scheme(url: str, in_empty_directory: Path) -> None:
    scheme = url.split(":")[0]
    with pytest.raises(OptionError, match=rf"scheme '{scheme}' is not supported.*local directory path, a file://"
                       r".* or an s3:// URL"):
        tablelog.create_table(url, "db.t", SCHEMA, primary_key=["id"])
    with pytest.raises(OptionError, match=f"scheme '{scheme}'"):
        tablelog.open_table(url, "db.t")
    assert_nothing_created(in_empty_directory)


@pytest.mark.parametrize(("url", "normalized"), [
    ("s3://bucket/wh", "s3://bucket/wh"), ("s3://bucket/a/b/", "s3://bucket/a/b"),
    ("S3A://bucket/wh", "s3://bucket/wh"), ("s3://bucket", "s3://bucket"),
])
def test_an_s3_url_is_an_object_store_warehouse(url: str, normalized: str, in_empty_directory: Path) -> None:
    assert warehouse_path(url) == normalized
    assert_nothing_created(in_empty_directory)


@pytest.mark.parametrize(("url", "problem"), [
    ("s3:/bucket/wh", "names a bucket"), ("s3:///wh", "names a bucket"), ("s3://b/wh?x=1", "no '\\?' query"),
])
def test_a_malformed_s3_url_is_refused(url: str, problem: str, in_empty_directory: Path) -> None:
    with pytest.raises(OptionError, match=problem):
        tablelog.create_table(url, "db.t", SCHEMA, primary_key=["id"])
    assert_nothing_created(in_empty_directory)


def test_s3_options_with_a_local_warehouse_are_refused(tmp_path: Path, in_empty_directory: Path) -> None:
    with pytest.raises(OptionError, match="s3.endpoint are for an s3:// warehouse"):
        tablelog.create_table(str(tmp_path / "wh"), "db.t", SCHEMA, options={"s3.endpoint": "http://x:1"})
    assert not (tmp_path / "wh").exists()


def test_an_unknown_s3_option_is_refused_with_a_hint(tmp_path: Path, in_empty_directory: Path) -> None:
    with pytest.raises(OptionError, match="unknown option 's3.secret_key'; did you mean 's3.secret-key'"):
        tablelog.create_table("s3://b/wh", "db.t", SCHEMA, options={"s3.secret_key": "x"})
    assert_nothing_created(in_empty_directory)


@pytest.mark.parametrize("empty", ["", "   "])
def test_an_empty_warehouse_is_refused_instead_of_the_working_directory(empty: str, in_empty_directory: Path) -> None:
    with pytest.raises(OptionError, match="the warehouse is empty"):
        tablelog.create_table(empty, "db.t", SCHEMA)
    assert_nothing_created(in_empty_directory)


def test_a_file_url_is_the_local_directory_it_names(tmp_path: Path, in_empty_directory: Path) -> None:
    target = tmp_path / "my wh"
    table = tablelog.create_table(f"file://{target.as_posix().replace(' ', '%20')}", "db.t", SCHEMA,
                                  primary_key=["id"])
    assert table.warehouse.path == str(target)
    assert tablelog.open_table(f"file://localhost{target}", "db.t").warehouse.path == str(target)
    assert tablelog.open_table(str(target), "db.t").identifier == "db.t"
    assert_nothing_created(in_empty_directory)


@pytest.mark.parametrize(("url", "problem"), [
    ("file://server/share/wh", "not the host 'server'"),
    ("file:///wh?x=1", "no '\\?' query"),
])
def test_a_file_url_that_is_not_a_local_path_is_refused(url: str, problem: str, in_empty_directory: Path) -> None:
    with pytest.raises(OptionError, match=problem):
        tablelog.create_table(url, "db.t", SCHEMA)
    assert_nothing_created(in_empty_directory)


@pytest.mark.parametrize(("url", "problem"), [
    ("file:wh", "a file:// URL needs an absolute path"),
    ("FILE:data/wh", "a file:// URL needs an absolute path"),
    ("s3:bucket/wh", "an s3:// URL names a bucket"),
    ("hdfs:wh", "the URL scheme 'hdfs' is not supported"),
    ("gs:bucket", "the URL scheme 'gs' is not supported"),
])
def test_a_storage_url_without_slashes_is_refused_not_made_a_local_folder(
    url: str, problem: str, in_empty_directory: Path
) -> None:
    with pytest.raises(OptionError, match=problem):
        tablelog.create_table(url, "db.t", SCHEMA, primary_key=["id"])
    result = CliRunner().invoke(cli, ["create", "-w", url, "db.t", "--schema", "id bigint"])
    assert result.exit_code == 2 and problem in " ".join(result.output.split())
    assert_nothing_created(in_empty_directory)


def test_relative_and_home_paths_stay_local_paths(in_empty_directory: Path) -> None:
    assert warehouse_path("wh") == str(in_empty_directory / "wh")
    assert warehouse_path("data:2024/wh") == str(in_empty_directory / "data:2024" / "wh")
    assert warehouse_path("~/wh") == os.path.expanduser("~/wh")


def test_the_cli_takes_a_warehouse_url_from_the_option_or_the_environment(
    tmp_path: Path, in_empty_directory: Path
) -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["create", "-w", "hdfs://nn/wh", "db.t", "--schema", "id bigint"])
    assert result.exit_code == 2 and "scheme 'hdfs' is not supported" in result.output
    result = runner.invoke(cli, ["create", "db.t", "--schema", "id bigint"],
                           env={"TABLELOG_WAREHOUSE": f"file://{tmp_path}/envwh"})
    assert result.exit_code == 0, result.output
    assert tablelog.open_table(str(tmp_path / "envwh"), "db.t").identifier == "db.t"
    result = runner.invoke(cli, ["create", "-w", "", "db.u", "--schema", "id bigint"])
    assert result.exit_code == 2 and "the warehouse is empty" in result.output
    assert_nothing_created(in_empty_directory)


def test_the_demo_refuses_an_unsupported_warehouse(in_empty_directory: Path) -> None:
    with pytest.raises(OptionError, match="scheme 'gs'"):
        run_demo("gs://b/wh", say=lambda line: None)
    with pytest.raises(OptionError, match="the warehouse is empty"):
        run_demo("", say=lambda line: None)
    assert_nothing_created(in_empty_directory)


def refusals_of(warehouse: str) -> dict[str, str]:
    """What each entry point says for ``warehouse``: the Python API, every CLI command
    that takes one (its exit code and its one line), the dashboard and the Spark options."""
    from tablelog.spark.options import SourceOptions
    from tablelog.ui.state import Dashboard

    said: dict[str, str] = {}
    for name, call in {
        "create_table": lambda: tablelog.create_table(warehouse, "db.t", SCHEMA, primary_key=["id"]),
        "open_table": lambda: tablelog.open_table(warehouse, "db.t"),
        "dashboard": lambda: Dashboard(warehouse),
        "spark": lambda: SourceOptions.parse({"warehouse": warehouse, "table": "db.t"}),
    }.items():
        with pytest.raises(WarehouseError) as refused:
            call()
        said[name] = str(refused.value)
    for command in (["create", "db.t", "--schema", "id bigint", "-o", "log.system=filesystem"],
                    ["describe", "db.t"], ["tail", "db.t"], ["verify", "db.t"], ["alter", "db.t", "--drop", "x"],
                    ["compact", "db.t"], ["expire", "db.t"], ["ui"]):
        result = CliRunner().invoke(cli, [command[0], "-w", warehouse, *command[1:]])
        assert isinstance(result.exception, SystemExit), result.exception  # no traceback
        said[f"tablelog {command[0]} (exit {result.exit_code})"] = " ".join(result.output.split())
    return said


def test_a_warehouse_that_is_a_file_is_refused_as_such_by_every_entry_point(tmp_path: Path) -> None:
    file = tmp_path / "wh"
    file.write_text("not a warehouse")
    said = refusals_of(str(file))
    expected = f"warehouse '{file}' is a file, not a directory"
    assert {name: expected in text for name, text in said.items()} == dict.fromkeys(said, True), said
    assert all("exit 2" in name for name in said if name.startswith("tablelog")), said
    assert file.read_text() == "not a warehouse"


def test_a_warehouse_under_a_file_is_refused_naming_the_file(tmp_path: Path) -> None:
    file = tmp_path / "data"
    file.write_text("")
    said = refusals_of(f"file://{file}/wh/inner")
    expected = f"warehouse '{file}/wh/inner' cannot be a directory: '{file}' is a file, not a directory"
    assert {name: expected in text for name, text in said.items()} == dict.fromkeys(said, True), said
    assert all("exit 2" in name for name in said if name.startswith("tablelog")), said


def as_another_user(call: Callable[[], str]) -> str:
    """``call()``'s result, run as a user the permissions apply to: root reads any
    directory, so as root it runs in a child process that is 'nobody' (uid 65534)."""
    if os.geteuid() != 0:
        return call()
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child
        os.close(reader)
        try:
            os.setgid(65534)
            os.setuid(65534)
            text = call()
        except BaseException as err:
            text = f"{type(err).__name__}: {err}"
        os.write(writer, text.encode())
        os._exit(0)
    os.close(writer)
    with os.fdopen(reader, "rb") as pipe:
        text = pipe.read().decode()
    os.waitpid(child, 0)
    return text


def test_a_warehouse_this_process_may_not_read_or_write_is_refused_in_one_line() -> None:
    with tempfile.TemporaryDirectory() as top:  # pytest's own are the user's alone
        os.chmod(top, 0o755)
        refusals_of_unusable_directories(Path(top))


def refusals_of_unusable_directories(top: Path) -> None:
    unreadable, unwritable = top / "unreadable", top / "unwritable"
    tablelog.create_table(str(unreadable), "db.t", SCHEMA, primary_key=["id"])
    unreadable.chmod(0)
    unwritable.mkdir(mode=0o555)

    def attempts() -> str:
        said = []
        for call in (lambda: tablelog.open_table(str(unreadable), "db.t"),
                     lambda: tablelog.create_table(str(unwritable), "db.t", SCHEMA, primary_key=["id"])):
            try:
                call()
                said.append("no error")
            except WarehouseError as err:
                said.append(str(err))
        return "\n".join(said)

    try:
        opened, created = as_another_user(attempts).split("\n")
    finally:
        unreadable.chmod(0o755)
    assert opened == f"warehouse '{unreadable}' cannot be read: this process may not read the directory " \
        "(permission denied)"
    assert created.startswith(f"warehouse '{unwritable}': cannot create table 'db.t': Permission denied")
