"""Table options hold passwords and keys. The programs the test kits and the tests start
(killed writers, Spark drivers, racing committers) get them on standard input: never on a
command line or in an environment, which every user of the machine can read (``ps``,
``/proc/PID/cmdline``)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import textwrap
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tablelog.tables import create_table
from tablelog.testing.processes import run_python, start_python
from tablelog.testing.scenarios import SCHEMA, ExactlyOnceScenarios

SENTINEL = "SENTINEL-password-5c1e"


def _visible_to_other_users(pid: int) -> str:
    """What ``ps`` shows of a process: its command line (and, for the same user, its environment)."""
    parts = []
    for name in ("cmdline", "environ"):
        with contextlib.suppress(OSError):  # it ended meanwhile
            parts.append((Path("/proc") / str(pid) / name).read_bytes().decode(errors="replace"))
    return "\0".join(parts)


class CommandLineWatch:
    """Scans every process's command line and environment while a test runs."""

    def __init__(self, needle: str) -> None:
        self.needle, self.seen, self.scans = needle, [], 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            for entry in os.scandir("/proc"):
                if entry.name.isdigit() and int(entry.name) != os.getpid() \
                        and self.needle in _visible_to_other_users(int(entry.name)):
                    self.seen.append(_visible_to_other_users(int(entry.name)).replace("\0", " ")[:300])
            self.scans += 1

    def __enter__(self) -> CommandLineWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@pytest.fixture
def watch() -> Iterator[CommandLineWatch]:
    with CommandLineWatch(SENTINEL) as watching:
        yield watching


def test_a_child_gets_its_config_on_standard_input_not_on_its_command_line_or_in_its_environment() -> None:
    script = textwrap.dedent("""
        import sys, time
        from tablelog.testing.processes import child_config
        config = child_config()
        print(config["options"]["kafka.sasl.password"][::-1], flush=True)
        time.sleep(30)
    """)
    child = start_python(script, {"options": {"kafka.sasl.password": SENTINEL}},
                         stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == SENTINEL[::-1]  # it got the whole config
        shown = _visible_to_other_users(child.pid)
        assert "child_config" in shown  # what is read is the right process
        assert SENTINEL not in shown
    finally:
        child.kill()
        child.wait()


def test_run_python_hands_the_config_over_the_same_way_and_returns_the_result() -> None:
    script = "from tablelog.testing.processes import child_config; print(len(child_config()['secret']))"
    result = run_python(script, {"secret": SENTINEL}, timeout_s=60, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(len(SENTINEL))


def test_the_kits_killed_writer_runs_with_no_table_option_on_any_command_line(
    tmp_path: Path, watch: CommandLineWatch
) -> None:
    # The file log's path stands for a plugin's password: an option value the child needs.
    log_options = {"log.system": "filesystem", "filesystem.path": str(tmp_path / SENTINEL / "log")}
    warehouse = str(tmp_path / "wh")
    table = create_table(warehouse, f"db.t_{uuid.uuid4().hex[:8]}", SCHEMA, primary_key=["id"], bucket=2,
                         options=log_options)
    began = time.monotonic()
    ExactlyOnceScenarios().test_attempt_killed_in_another_process_after_producing_is_never_returned(
        table, warehouse, log_options)
    assert time.monotonic() - began > 0.5 and watch.scans > 3  # the watch saw the child's lifetime
    assert watch.seen == []
