"""What the conformance suite cannot see: the position encoding, the stream layout,
options and secrets, failures of the server, foreign and corrupt entries, a restart,
and discovery through the entry point."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa
import pytest
import redis
from click.testing import CliRunner
from conftest import RedisServer, start_server

import tablelog
from tablelog.plugin import (
    CorruptRecordError,
    LogConfig,
    LogUnavailableError,
    OptionError,
    PositionOutOfRangeError,
    ProduceBatch,
    ProduceError,
    SeekSpec,
    TopicError,
)
from tablelog.testing import (
    ClientOpener,
    LogClient,
    cli,
    installed_log_systems,
    load_log_system,
    opened_clients,
)
from tablelog_redis import positions

SECRET = "SENTINEL-redis-pw-7c1e"

ConfigFactory = Callable[..., LogConfig]


def now_ms() -> int:
    return int(time.time() * 1000)


@pytest.fixture
def open_client() -> Iterator[ClientOpener]:
    with opened_clients() as open_:
        yield open_


def read(client: LogClient, partition: int, start: int, count: int) -> list:  # type: ignore[type-arg]
    records, position, deadline = [], start, time.monotonic() + 10
    while len(records) < count and time.monotonic() < deadline:
        result = client.fetch(partition, position, count - len(records), 0.2)
        records += result.records
        position = result.next_position
    return records


# ---------------------------------------------------------------------- positions


@pytest.mark.parametrize(
    "entry_id",
    ["0-0", "0-1", "1-0", "1795306084341-0", "1795306084341-7",
     f"{2**64 - 1}-{2**64 - 1}", f"5-{2**20}", f"{2**43}-{2**63}"],
)
def test_positions_round_trip_every_entry_id_exactly(entry_id: str) -> None:
    position = positions.encode(entry_id)
    assert position >= 0
    assert positions.entry_id(position) == entry_id
    assert positions.encode(positions.entry_id(position)) == position


def test_positions_keep_the_order_of_entry_ids() -> None:
    ids = ["0-1", "0-2", "1-0", "1-1048577", "2-0", "1795306084341-0", "1795306084341-1",
           "1795306084342-0", f"1795306084342-{2**64 - 1}", "1795306084343-0"]
    encoded = [positions.encode(i) for i in ids]
    assert encoded == sorted(encoded) and len(set(encoded)) == len(ids)
    # "the entry just before a position" is exact: XREAD's exclusive start id
    assert positions.entry_id(positions.encode("1795306084343-0") - 1) == f"1795306084342-{2**64 - 1}"


@pytest.mark.parametrize("bad", [-1, 2**128, True, "5"])
def test_positions_reject_what_is_not_a_position(bad: object) -> None:
    with pytest.raises(ValueError):
        positions.decode(bad)  # type: ignore[arg-type]


def test_positions_are_the_entry_ids_xadd_returned(
    redis_server: RedisServer, redis_log_config_factory: ConfigFactory, open_client
) -> None:  # type: ignore[no-untyped-def]
    config = redis_log_config_factory(partitions=2)
    client = open_client(config)
    client.ensure_topic()
    client.produce(ProduceBatch("tok-1", 1, [b"k1", None], [b"v1", b""], 1234, first_seq=5))
    (produced,) = client.flush(10)
    raw = redis_server.client().xrange(f"{config.topic}:1")
    assert [positions.encode(i) for i, _ in raw] == [produced.first, produced.last]
    assert [fields for _, fields in raw] == [
        {b"token": b"tok-1", b"seq": b"5", b"ts": b"1234", b"value": b"v1", b"key": b"k1"},
        {b"token": b"tok-1", b"seq": b"6", b"ts": b"1234", b"value": b""},  # null key: no field
    ]
    meta = redis_server.client().hgetall(f"{config.topic}:meta")
    assert meta[b"partitions"] == b"2" and meta[b"table"] == b"db.t"


# ---------------------------------------------------------------------- options


def test_missing_url_is_an_option_error_naming_the_key() -> None:
    config = LogConfig("redis", "db.t", "t", 1, True, options={})
    with pytest.raises(OptionError, match=r"'redis\.url'"):
        load_log_system("redis").open(config)


def test_create_table_without_url_fails_before_the_table_exists(tmp_path: Path) -> None:
    with pytest.raises(OptionError, match=r"needs option 'redis\.url'"):
        tablelog.create_table(str(tmp_path), "db.t", pa.schema([("id", pa.int64())]),
                              primary_key=["id"], options={"log.system": "redis"})
    assert not list(tmp_path.rglob("schema*"))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"url": "http://127.0.0.1:6379"}, r"scheme must be one of"),
        ({"url": "redis://127.0.0.1:6379", "wait-replicas": "-1"}, r"'redis\.wait-replicas'"),
        ({"url": "redis://127.0.0.1:6379", "pipeline-size": "many"}, r"'redis\.pipeline-size'"),
        ({"url": "redis://127.0.0.1:6379", "no-such-setting": "1"}, r"'redis\.no-such-setting'"),
        ({"url": "redis://127.0.0.1:6379", "port": "7000"}, r"part of 'redis\.url'"),
    ],
)
def test_bad_options_name_their_key(options: dict[str, str], message: str) -> None:
    with pytest.raises(OptionError, match=message):
        load_log_system("redis").open(LogConfig("redis", "db.t", "t", 1, True, options=options))


def test_a_password_in_the_url_is_refused_without_showing_it() -> None:
    config = LogConfig("redis", "db.t", "t", 1, True,
                       options={"url": f"redis://ada:{SECRET}@127.0.0.1:6379/0"})
    with pytest.raises(OptionError, match=r"redis\.password") as raised:
        load_log_system("redis").open(config)
    assert SECRET not in str(raised.value) and "ada:******@" in str(raised.value)


def test_client_options_pass_through_to_redis_py(
    redis_log_config_factory: ConfigFactory, open_client
) -> None:  # type: ignore[no-untyped-def]
    config = redis_log_config_factory(options={"client-name": "tablelog-test", "socket-timeout": "7"})
    client = open_client(config)
    client.ensure_topic()
    redis_client = client.connection.client
    assert redis_client.connection_pool.connection_kwargs["socket_timeout"] == 7.0
    assert redis_client.client_getname() in (b"tablelog-test", "tablelog-test")


# ---------------------------------------------------------------------- secrets and auth


@pytest.fixture(scope="module")
def auth_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = start_server(tmp_path_factory.mktemp("redis-auth"), "--requirepass", SECRET)
    yield server
    server.kill()


def test_password_option_authenticates_and_is_never_shown(
    auth_server: RedisServer, open_client
) -> None:  # type: ignore[no-untyped-def]
    config = LogConfig("redis", "db.t", f"auth-{uuid.uuid4().hex[:8]}", 1, True,
                       options={"url": auth_server.url, "password": SECRET})
    client = open_client(config)
    assert client.ensure_topic() == 1
    client.produce(ProduceBatch("t", 0, [None], [b"v"], now_ms()))
    assert len(client.flush(10)) == 1
    for shown in (repr(client.connection), str(client.connection), repr(config), repr(client)):
        assert SECRET not in shown
    assert "******" in repr(client.connection)


def test_wrong_password_is_a_clear_unavailable_error_without_the_password(
    auth_server: RedisServer, open_client
) -> None:  # type: ignore[no-untyped-def]
    wrong = SECRET + "-wrong"
    client = open_client(LogConfig("redis", "db.t", "t", 1, True,
                                   options={"url": auth_server.url, "password": wrong}))
    with pytest.raises(LogUnavailableError, match="refused the credentials") as raised:
        client.ensure_topic()
    assert wrong not in str(raised.value) and SECRET not in str(raised.value)


def test_a_table_with_a_redis_password_stores_and_prints_no_secret(
    auth_server: RedisServer, tmp_path: Path
) -> None:
    warehouse = str(tmp_path / "wh")
    options = {"log.system": "redis", "redis.url": auth_server.url, "redis.password": SECRET}
    table = tablelog.create_table(warehouse, "db.secret", pa.schema([("id", pa.int64())]),
                                  primary_key=["id"], options=options)
    with table.writer() as writer:
        writer.write([{"id": 1}, {"id": 2}])
        writer.commit()
    for path in Path(warehouse).rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    result = CliRunner().invoke(cli, ["describe", "--warehouse", warehouse, "db.secret",
                                      "-o", f"redis.password={SECRET}"])
    assert SECRET not in result.output
    reopened = tablelog.open_table(warehouse, "db.secret", {"redis.password": SECRET})
    with reopened.reader(consistency="transactional", scan_mode="earliest") as reader:
        assert sorted(c.row["id"] for c in reader.read_all(idle_timeout_s=0.5)) == [1, 2]


# ---------------------------------------------------------------------- failures


def test_an_unreachable_server_is_a_log_unavailable_error(open_client) -> None:  # type: ignore[no-untyped-def]
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nobody listens once closed
    client = open_client(LogConfig("redis", "db.t", "t", 1, True,
                                   options={"url": f"redis://127.0.0.1:{port}/0"}))
    began = time.monotonic()
    with pytest.raises(LogUnavailableError, match=f"127.0.0.1:{port}"):
        client.ensure_topic()
    assert time.monotonic() - began < 10


def test_flush_fails_when_fewer_replicas_than_wait_replicas_acknowledge(
    redis_log_config_factory: ConfigFactory, open_client
) -> None:  # type: ignore[no-untyped-def]
    client = open_client(redis_log_config_factory(options={"wait-replicas": "1", "wait-timeout-ms": "100"}))
    client.ensure_topic()
    client.produce(ProduceBatch("t", 0, [None], [b"v"], now_ms()))
    with pytest.raises(ProduceError, match=r"only 0 of the 1 replicas"):
        client.flush(5)


def test_a_deleted_stream_fails_fetch_and_ensure_topic_clearly(
    redis_server: RedisServer, redis_log_config_factory: ConfigFactory, open_client
) -> None:  # type: ignore[no-untyped-def]
    config = redis_log_config_factory(partitions=2)
    client = open_client(config)
    client.ensure_topic()
    end = client.end_positions([1])[1]
    redis_server.client().delete(f"{config.topic}:1")
    with pytest.raises(PositionOutOfRangeError, match="does not exist"):
        client.fetch(1, end, 10, 0.1)
    with pytest.raises(TopicError, match=r":1' is missing"):
        open_client(config).ensure_topic()
    client.produce(ProduceBatch("t", 1, [None], [b"v"], now_ms()))
    with pytest.raises(ProduceError, match="does not exist"):
        client.flush(5)


def test_foreign_entries_come_back_without_token_and_corrupt_ones_never_as_data(
    redis_server: RedisServer, redis_log_config_factory: ConfigFactory, open_client
) -> None:  # type: ignore[no-untyped-def]
    config = redis_log_config_factory(partitions=1)
    client = open_client(config)
    client.ensure_topic()
    start = client.seek(0, SeekSpec.latest())
    raw = redis_server.client()
    stream = f"{config.topic}:0"
    foreign_id = raw.xadd(stream, {"value": b"someone else's"})
    client.produce(ProduceBatch("t", 0, [b"k"], [b"ours"], now_ms()))
    client.flush(5)
    corrupt_id = raw.xadd(stream, {"token": b"t", "seq": b"not-a-number", "ts": b"1", "value": b"x"})
    client.produce(ProduceBatch("t", 0, [b"k"], [b"after"], now_ms(), first_seq=1))
    client.flush(5)

    result = client.fetch(0, start, 100, 1.0)
    foreign, ours = result.records
    assert (foreign.token, foreign.seq, foreign.value) == (None, None, b"someone else's")
    assert foreign.timestamp_ms == positions.parse_id(foreign_id)[0]
    assert (ours.token, ours.seq, ours.value) == ("t", 0, b"ours")
    assert result.next_position == positions.encode(corrupt_id)
    with pytest.raises(CorruptRecordError, match=f"position {result.next_position}"):
        client.fetch(0, result.next_position, 100, 0.1)
    after = client.fetch(0, result.next_position + 1, 100, 0.1)
    assert [r.value for r in after.records] == [b"after"]


def test_seek_timestamp_finds_a_record_stamped_ahead_of_the_server_clock(
    redis_log_config_factory: ConfigFactory, open_client
) -> None:  # type: ignore[no-untyped-def]
    client = open_client(redis_log_config_factory(partitions=1))
    client.ensure_topic()
    ahead = now_ms() + 30_000  # the writer's clock runs 30 s ahead: within timestamp-skew-ms
    client.produce(ProduceBatch("t", 0, [None], [b"early"], now_ms() - 1000))
    client.produce(ProduceBatch("t", 0, [None], [b"ahead"], ahead, first_seq=1))
    produced = client.flush(5)
    assert client.seek(0, SeekSpec.timestamp(ahead - 5_000)) == produced[0].last


def test_flushed_records_survive_a_server_kill_and_restart(
    tmp_path: Path, open_client
) -> None:  # type: ignore[no-untyped-def]
    server = start_server(tmp_path)
    try:
        config = LogConfig("redis", "db.t", "restart", 2, True, options={"url": server.url})
        client = open_client(config)
        client.ensure_topic()
        start = client.seek(1, SeekSpec.latest())
        client.produce(ProduceBatch("t", 1, [None] * 500, [b"v%d" % i for i in range(500)], now_ms()))
        (produced,) = client.flush(10)
        before = read(client, 1, start, 500)
        server.kill()  # SIGKILL: only what the AOF fsynced (appendfsync always) is left
        server.start()
        reopened = open_client(config)
        assert reopened.ensure_topic() == 2
        assert read(reopened, 1, start, 500) == before
        assert reopened.end_positions([1])[1] == produced.last + 1
    finally:
        server.kill()


# ---------------------------------------------------------------------- discovery


def test_tablelog_plugins_lists_redis_with_its_distribution() -> None:
    (item,) = [i for i in installed_log_systems() if i.name == "redis"]
    assert (item.distribution, item.module, item.error) == (
        "tablelog-redis-streams", "tablelog_redis.plugin", None
    )
    result = CliRunner().invoke(cli, ["plugins"], terminal_width=200)
    assert result.exit_code == 0, result.output
    (line,) = [line for line in result.output.splitlines() if " redis " in line]
    assert "tablelog-redis-streams" in line and "tablelog_redis.plugin" in line and "ok" in line


def test_the_cli_creates_and_tails_a_redis_table(redis_url: str, tmp_path: Path) -> None:
    runner = CliRunner()
    warehouse = str(tmp_path / "wh")
    created = runner.invoke(cli, ["create", "--warehouse", warehouse, "db.cli", "--schema",
                                  "id bigint, name string", "-k", "id", "-b", "2",
                                  "-o", "log.system=redis", "-o", f"redis.url={redis_url}"])
    assert created.exit_code == 0, created.output
    table = tablelog.open_table(warehouse, "db.cli")
    assert table.options.log_system == "redis"
    with table.writer() as writer:
        writer.write([{"id": i, "name": f"n{i}"} for i in range(6)])
        writer.commit()
    tailed = runner.invoke(cli, ["tail", "--warehouse", warehouse, "db.cli", "--scan-mode", "earliest"])
    assert tailed.exit_code == 0, tailed.output
    assert sum(line.startswith("+I ") for line in tailed.output.splitlines()) == 6


def test_the_plugin_imports_only_the_plugin_api_of_tablelog() -> None:
    import ast

    package = Path(positions.__file__).parent
    allowed = {"tablelog.plugin"}
    for source in package.glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tablelog"):
                assert node.module in allowed, f"{source.name} imports {node.module}"
            if isinstance(node, ast.Import):
                assert not any(a.name.startswith("tablelog.") or a.name == "tablelog" for a in node.names)


def test_redis_py_errors_never_leak_unwrapped(redis_log_config_factory: ConfigFactory, open_client) -> None:  # type: ignore[no-untyped-def]
    client = open_client(redis_log_config_factory())
    client.ensure_topic()
    with pytest.raises(PositionOutOfRangeError):
        client.fetch(0, -1, 10, 0)
    with pytest.raises(PositionOutOfRangeError):
        client.seek(0, SeekSpec.position(2**128))
    assert not issubclass(PositionOutOfRangeError, redis.RedisError)


def test_the_plugin_guide_documents_every_option() -> None:
    from tablelog_redis.config import option_specs

    guide = Path(__file__).resolve().parents[3] / "docs" / "plugins.md"
    documented = set(re.findall(r"^\| `(redis\.[a-z-]+)` \|", guide.read_text(), re.MULTILINE))
    assert documented == {spec.key for spec in option_specs()}
