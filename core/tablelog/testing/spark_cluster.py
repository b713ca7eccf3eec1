"""A real Spark cluster for tests and benchmarks, from the pyspark wheel, on loopback.

:func:`spark_standalone` starts a standalone master and its workers as separate JVMs
(``spark-class org.apache.spark.deploy.master.Master`` / ``…deploy.worker.Worker``) and
waits until every worker is registered; :func:`spark_connect_server` starts a Spark Connect
server (``spark-submit --class …SparkConnectServer``). Both stop their JVMs on exit.

``SPARK_HOME`` is the installed pyspark package; the Python workers run this
interpreter (``PYSPARK_PYTHON``), so whatever this environment has installed is what the
executors import.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import attrs

from tablelog.testing.processes import Launch, die_with_parent, free_port, free_ports, stop


class Placement(Protocol):
    """Where a JVM runs: an address to bind, and what starts it there (a
    :class:`~tablelog.testing.hosts.Host`)."""

    @property
    def address(self) -> str: ...

    @property
    def popen(self) -> Launch: ...


class _Loopback(NamedTuple):
    address: str
    popen: Launch

_LOG4J = """\
status = error
rootLogger.level = {level}
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{{HH:mm:ss.SSS}} %p %c{{1}}: %m%n%ex
"""


def spark_home() -> Path:
    """The pyspark package folder: the wheel ships ``bin/spark-class`` and ``jars/`` there."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def spark_environment(workdir: Path, extra: Mapping[str, str] | None = None,
                      log_level: str = "info") -> dict[str, str]:
    """The environment of a Spark JVM started from the wheel: loopback only, Python
    workers on this interpreter, logs at ``log_level`` to stderr, nothing read from a
    user's ``conf/``."""
    conf_dir = workdir / "conf"
    conf_dir.mkdir(parents=True, exist_ok=True)
    (conf_dir / "log4j2.properties").write_text(_LOG4J.format(level=log_level))
    env = dict(os.environ)
    env.update({
        "SPARK_HOME": str(spark_home()),
        "SPARK_CONF_DIR": str(conf_dir),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOCAL_HOSTNAME": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "SPARK_LOG_DIR": str(workdir / "logs"),
        "SPARK_PID_DIR": str(workdir),
    })
    env.update(extra or {})
    return env


def _start(command: Sequence[str], workdir: Path, env: Mapping[str, str], log_name: str,
           launch: Launch = subprocess.Popen) -> tuple[subprocess.Popen[bytes], Path]:
    log_path = workdir / log_name
    with open(log_path, "wb") as log:
        # spark-class execs the JVM, so the process (and its parent-death signal) is the JVM's.
        process = launch(list(command), cwd=workdir, env=dict(env), stdout=log, stderr=subprocess.STDOUT,
                         preexec_fn=die_with_parent if os.name == "posix" else None)
    return process, log_path


def _on(address: str) -> dict[str, str]:
    """The environment that makes a Spark JVM bind and name itself at ``address``."""
    return {"SPARK_LOCAL_IP": address, "SPARK_LOCAL_HOSTNAME": address}


def _check_alive(process: subprocess.Popen[bytes], log_path: Path, what: str) -> None:
    if process.poll() is not None:
        tail = log_path.read_text(errors="replace")[-3000:]
        raise RuntimeError(f"{what} exited with code {process.returncode}; log:\n{tail}")


@attrs.define
class StandaloneCluster:
    """A running standalone cluster: submit applications to ``master_url``."""

    master_url: str
    #: The master's web UI (``""`` for a cluster this process did not start).
    web_ui: str = ""
    #: The JVMs, when this process started them (a test may kill a worker and start it again).
    master: subprocess.Popen[bytes] | None = attrs.field(default=None, repr=False)
    workers: list[subprocess.Popen[bytes]] = attrs.field(factory=list, repr=False)
    workdir: Path | None = None
    _start_worker: Callable[[int], tuple[subprocess.Popen[bytes], Path]] | None = attrs.field(
        default=None, repr=False)

    def status(self) -> dict[str, Any]:
        """The master's JSON status (``/json``): workers, their state, applications."""
        with urllib.request.urlopen(f"{self.web_ui}/json", timeout=5) as response:
            return dict(json.load(response))

    def alive_workers(self) -> int:
        workers = self.status().get("workers", [])
        return sum(1 for w in workers if isinstance(w, dict) and w.get("state") == "ALIVE")

    def worker_dir(self, index: int) -> Path:
        """Worker ``index``'s work dir: its executors run in ``<dir>/<app id>/<executor id>``."""
        if self.workdir is None:
            raise RuntimeError(f"the cluster at {self.master_url} was not started here: its workers are not ours")
        return self.workdir / f"worker-{index}"

    def kill_worker(self, index: int) -> list[int]:
        """SIGKILL worker ``index`` and every process running in its work dir (its executors
        and their Python workers), as if its host died; returns the killed process ids."""
        victims = [self.workers[index].pid, *processes_under(self.worker_dir(index))]
        for pid in victims:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.workers[index].wait(timeout=30)
        return victims

    def restart_worker(self, index: int, timeout_s: float = 120.0) -> None:
        """Start worker ``index`` again (after :meth:`kill_worker`) and wait until the master
        counts every worker alive again."""
        if self._start_worker is None:
            raise RuntimeError(f"the cluster at {self.master_url} was not started here: its workers are not ours")
        process, log_path = self._start_worker(index)
        self.workers[index] = process
        _wait_for_workers(self, len(self.workers), timeout_s, {f"Spark worker {index}": (process, log_path)})


def processes_under(directory: Path) -> list[int]:
    """The processes whose working directory is ``directory`` or below it."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                cwd = os.readlink(entry / "cwd")
                if cwd == str(directory) or cwd.startswith(f"{directory}/"):
                    found.append(int(entry.name))
    return found


def _wait_for_workers(cluster: StandaloneCluster, count: int, timeout_s: float,
                      logs: Mapping[str, tuple[subprocess.Popen[bytes], Path]]) -> None:
    deadline = time.monotonic() + timeout_s
    last = ""
    while time.monotonic() < deadline:
        for what, (process, log_path) in logs.items():
            _check_alive(process, log_path, what)
        try:
            if cluster.alive_workers() >= count:
                return
        except (OSError, ValueError) as exc:  # the UI's port opens before it serves JSON
            last = str(exc)
        time.sleep(0.2)
    raise RuntimeError(f"the Spark master {cluster.master_url} had fewer than {count} workers "
                       f"after {timeout_s}s ({last or 'not all registered'}); logs in {cluster.workdir}")


@contextlib.contextmanager
def spark_standalone(workdir: Path, workers: int = 2, cores: int = 1, memory: str = "1g",
                     daemon_options: str = "", timeout_s: float = 120.0,
                     hosts: Sequence[Placement] | None = None) -> Iterator[StandaloneCluster]:
    """A standalone master and ``workers`` workers (each its own JVM with ``cores`` cores
    and ``memory``), all registered before this yields; ``daemon_options`` are JVM
    ``-Dspark.…`` settings of the master and workers (``SPARK_DAEMON_JAVA_OPTS``), e.g.
    ``-Dspark.worker.timeout=10``. ``hosts``: where each runs, the master on the first and
    worker ``i`` on host ``i + 1`` (:class:`~tablelog.testing.hosts.Host` s: their
    address and their ``popen``); default all on loopback."""
    workdir.mkdir(parents=True, exist_ok=True)
    env = spark_environment(workdir, {"SPARK_DAEMON_JAVA_OPTS": daemon_options})
    spark_class = str(spark_home() / "bin" / "spark-class")
    places: list[Placement] = list(hosts or [_Loopback("127.0.0.1", subprocess.Popen)] * (workers + 1))
    if len(places) != workers + 1:
        raise ValueError(f"{workers} workers and a master need {workers + 1} hosts, not {len(places)}")
    port, ui_port = free_ports(2)
    master_at = places[0].address
    master_url = f"spark://{master_at}:{port}"
    logs: dict[str, tuple[subprocess.Popen[bytes], Path]] = {}

    def start_worker(index: int) -> tuple[subprocess.Popen[bytes], Path]:
        work_dir = workdir / f"worker-{index}"
        work_dir.mkdir(exist_ok=True)
        place = places[index + 1]
        return _start([spark_class, "org.apache.spark.deploy.worker.Worker", master_url,
                       "--host", place.address, "--webui-port", "0", "--cores", str(cores),
                       "--memory", memory, "--work-dir", str(work_dir)],
                      workdir, {**env, **_on(place.address)}, f"worker-{index}.log", place.popen)

    master: subprocess.Popen[bytes] | None = None
    cluster = StandaloneCluster(master_url=master_url, web_ui=f"http://{master_at}:{ui_port}",
                                workdir=workdir, start_worker=start_worker)
    try:
        master, master_log = _start([spark_class, "org.apache.spark.deploy.master.Master", "--host", master_at,
                                     "--port", str(port), "--webui-port", str(ui_port)], workdir,
                                    {**env, **_on(master_at)}, "master.log", places[0].popen)
        cluster.master = master
        logs["the Spark master"] = (master, master_log)
        for i in range(workers):
            worker = start_worker(i)
            cluster.workers.append(worker[0])
            logs[f"Spark worker {i}"] = worker
        _wait_for_workers(cluster, workers, timeout_s, logs)
        yield cluster
    finally:
        # Workers first: a worker stopping kills its executors; SIGKILL after the grace period.
        for process in [*reversed(cluster.workers), *([master] if master is not None else [])]:
            stop(process, timeout_s=10)


def _wait_for_port(port: int, timeout_s: float, process: subprocess.Popen[bytes], log_path: Path,
                   what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        _check_alive(process, log_path, what)
        with socket.socket() as sock:
            sock.settimeout(0.5)
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port} within {timeout_s}s; log: {log_path}")


@contextlib.contextmanager
def spark_connect_server(workdir: Path, master: str = "local[2]", conf: Mapping[str, str] | None = None,
                         environment: Mapping[str, str] | None = None,
                         timeout_s: float = 120.0) -> Iterator[str]:
    """A Spark Connect server running ``master``; yields its ``sc://127.0.0.1:PORT`` URL.

    Its Python workers run this interpreter (with ``environment`` added to the server's
    environment, e.g. ``PYTHONPATH``), so a Python data source the server uses must be
    importable here: a client registers the class by reference to its module."""
    workdir.mkdir(parents=True, exist_ok=True)
    env = spark_environment(workdir, environment)
    port = free_port()
    settings = {
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port),
        "spark.pyspark.python": sys.executable,
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "2",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        **(conf or {}),
    }
    command = [str(spark_home() / "bin" / "spark-submit"), "--master", master,
               "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
               "--name", "tablelog Spark Connect server"]
    for key, value in settings.items():
        command += ["--conf", f"{key}={value}"]
    process, log_path = _start(command, workdir, env, "connect.log")
    try:
        _wait_for_port(port, timeout_s, process, log_path, "the Spark Connect server")
        yield f"sc://127.0.0.1:{port}"
    finally:
        stop(process, timeout_s=10)
