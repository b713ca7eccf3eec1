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
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from tablelog.testing.processes import die_with_parent, free_port, stop

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


def _start(command: Sequence[str], workdir: Path, env: Mapping[str, str], log_name: str
           ) -> tuple[subprocess.Popen[bytes], Path]:
    log_path = workdir / log_name
    with open(log_path, "wb") as log:
        # spark-class execs the JVM, so the process (and its parent-death signal) is the JVM's.
        process = subprocess.Popen(list(command), cwd=workdir, env=dict(env), stdout=log,
                                   stderr=subprocess.STDOUT,
                                   preexec_fn=die_with_parent if os.name == "posix" else None)
    return process, log_path


def _check_alive(process: subprocess.Popen[bytes], log_path: Path, what: str) -> None:
    if process.poll() is not None:
        tail = log_path.read_text(errors="replace")[-3000:]
        raise RuntimeError(f"{what} exited with code {process.returncode}; log:\n{tail}")


@attrs.frozen
class StandaloneCluster:
    """A running standalone cluster: submit applications to ``master_url``."""

    master_url: str
    #: The master's web UI (``""`` for a cluster this process did not start).
    web_ui: str = ""
    #: The JVMs, when this process started them (a test may kill a worker).
    master: subprocess.Popen[bytes] | None = attrs.field(default=None, repr=False)
    workers: tuple[subprocess.Popen[bytes], ...] = attrs.field(default=(), repr=False)
    workdir: Path | None = None

    def status(self) -> dict[str, Any]:
        """The master's JSON status (``/json``): workers, their state, applications."""
        with urllib.request.urlopen(f"{self.web_ui}/json", timeout=5) as response:
            return dict(json.load(response))

    def alive_workers(self) -> int:
        workers = self.status().get("workers", [])
        return sum(1 for w in workers if isinstance(w, dict) and w.get("state") == "ALIVE")


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
                     daemon_options: str = "", timeout_s: float = 120.0) -> Iterator[StandaloneCluster]:
    """A standalone master and ``workers`` workers (each its own JVM with ``cores`` cores
    and ``memory``), all registered before this yields; ``daemon_options`` are JVM
    ``-Dspark.…`` settings of the master and workers (``SPARK_DAEMON_JAVA_OPTS``), e.g.
    ``-Dspark.worker.timeout=10``."""
    workdir.mkdir(parents=True, exist_ok=True)
    env = spark_environment(workdir, {"SPARK_DAEMON_JAVA_OPTS": daemon_options})
    spark_class = str(spark_home() / "bin" / "spark-class")
    port, ui_port = free_port(), free_port()
    master_url = f"spark://127.0.0.1:{port}"
    started: list[subprocess.Popen[bytes]] = []
    logs: dict[str, tuple[subprocess.Popen[bytes], Path]] = {}
    try:
        master = _start([spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                         "--port", str(port), "--webui-port", str(ui_port)], workdir, env, "master.log")
        started.append(master[0])
        logs["the Spark master"] = master
        for i in range(workers):
            work_dir = workdir / f"worker-{i}"
            work_dir.mkdir(exist_ok=True)
            worker = _start([spark_class, "org.apache.spark.deploy.worker.Worker", master_url,
                             "--host", "127.0.0.1", "--webui-port", "0", "--cores", str(cores),
                             "--memory", memory, "--work-dir", str(work_dir)],
                            workdir, env, f"worker-{i}.log")
            started.append(worker[0])
            logs[f"Spark worker {i}"] = worker
        cluster = StandaloneCluster(master_url=master_url, web_ui=f"http://127.0.0.1:{ui_port}",
                                    master=master[0], workers=tuple(started[1:]), workdir=workdir)
        _wait_for_workers(cluster, workers, timeout_s, logs)
        yield cluster
    finally:
        # Workers first: a worker stopping kills its executors; SIGKILL after the grace period.
        for process in reversed(started):
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
