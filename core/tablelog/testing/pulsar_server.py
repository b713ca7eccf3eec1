"""A Pulsar-protocol broker for tests: pulsar-lite from its PyPI wheel.

:class:`PulsarBroker` is one ``pulsar_lite/bin/pulsar-lite`` process on a fixed address,
port and data directory, which a test may stop, kill, start and restart on the same data
(records survive a restart). A missing binary fails the test run; it never skips it.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

from tablelog.testing.processes import Launch, die_with_parent, free_port, required_wheel_binary

ENV_URL = "TABLELOG_TEST_PULSAR_URL"

# default_partitions = 0: auto-created topics are plain topics (the plugin's
# `<topic>-partition-N` topics must not become partitioned topics of their own).
# The metrics endpoint would bind 0.0.0.0:8080 for every broker: switch it off.
_BROKER_CONFIG = "default_partitions = 0\n\n[metrics]\nenabled = false\n"


def pulsar_lite_binary() -> Path:
    """The pulsar-lite executable shipped in the pulsar-lite wheel; fails clearly when absent."""
    return required_wheel_binary("pulsar_lite", "pulsar-lite", what="the Pulsar test broker", wheel="pulsar-lite",
                                 external=f"point the tests at a broker with {ENV_URL}=pulsar://host:6650")


class PulsarBroker:
    """One pulsar-lite process on a fixed address, port and data dir; stop/kill/start/restart
    keep all three. ``address`` and ``launch``: where it listens and what starts it (a
    host's :meth:`~tablelog.testing.hosts.Host.popen` and its address, to run it on that
    host)."""

    def __init__(self, binary: Path, data_dir: Path, port: int | None = None, *, address: str = "127.0.0.1",
                 launch: Launch = subprocess.Popen) -> None:
        self.binary = binary
        self.data_dir = data_dir
        self.address = address
        self.port = port or free_port()
        self._launch = launch
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = data_dir / "broker.log"
        data_dir.mkdir(parents=True, exist_ok=True)
        (data_dir / "pulsar-lite.toml").write_text(_BROKER_CONFIG)

    @property
    def service_url(self) -> str:
        return f"pulsar://{self.address}:{self.port}"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self, timeout_s: float = 30.0) -> None:
        if self.running:
            return
        with open(self.log_path, "ab") as log:
            self.process = self._launch(
                [str(self.binary), "--config", str(self.data_dir / "pulsar-lite.toml"),
                 "--addr", f"{self.address}:{self.port}", "--db-path", str(self.data_dir / "db")],
                cwd=self.data_dir, stdout=log, stderr=subprocess.STDOUT, preexec_fn=die_with_parent,
                env={**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", "warn")},
            )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"pulsar-lite exited with code {self.process.returncode} before accepting "
                    f"connections on {self.address}:{self.port}; log:\n{self.log_tail()}"
                )
            try:
                with socket.create_connection((self.address, self.port), timeout=0.25):
                    return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"pulsar-lite did not answer on {self.address}:{self.port} within {timeout_s}s; "
                           f"log:\n{self.log_tail()}")

    def stop(self) -> None:
        """SIGTERM (SIGKILL after 10 s): a broker shut down."""
        self._end(kill=False)

    def kill(self) -> None:
        """SIGKILL: a broker that crashed, with whatever it had not written to its data dir."""
        self._end(kill=True)

    def _end(self, *, kill: bool) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        if kill:
            process.kill()
        else:
            process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)

    def restart(self) -> None:
        self.stop()
        self.start()

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"
