"""Probe (issue #15, fact d): on a standalone cluster (master + 2 workers), a Python data
source writer from an installed module runs in the executors' Python workers; one worker
JVM is SIGKILLed in the middle of the write, and the probe shows which task attempts ran
where and how long Spark took to carry on.

The module ``dsmodule/probe_datasource.py`` is made importable to this venv's python (a
``.pth`` file in site-packages, removed at the end), as an installed package would be.

    python tests/cluster/probes/standalone_worker_kill.py SHUFFLE(0|1) [DAEMON_JAVA_OPTS]

``PROBE_FREEZE=1`` SIGSTOPs worker-0 and every process in its work dir instead (a host that
hangs without closing its connections; SIGKILLed at the end); ``PROBE_DRIVER_CONF`` (JSON)
adds settings to the driver's session, e.g. ``{"spark.network.timeout": "20s"}``.
"""

from __future__ import annotations

import datetime
import json
import os
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from tablelog.testing.spark_cluster import processes_under, spark_environment, spark_standalone

HERE = Path(__file__).parent
TASKS, SLEEP = 6, 6.0


def main(shuffle: str, daemon_options: str) -> None:
    pth = Path(sysconfig.get_paths()["purelib"]) / "tablelog_probe_datasource.pth"
    pth.write_text(str(HERE / "dsmodule") + "\n")
    try:
        with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
            run(Path(tmp), shuffle, daemon_options)
    finally:
        pth.unlink()


def run(tmp: Path, shuffle: str, daemon_options: str) -> None:
    started = time.monotonic()
    with spark_standalone(tmp / "cluster", workers=2, daemon_options=daemon_options) as cluster:
        print(f"cluster up in {time.monotonic() - started:.1f}s, daemon options {daemon_options!r}", flush=True)
        out = tmp / "out"
        with open(tmp / "driver.log", "wb") as driver_log:
            driver = subprocess.Popen(
                [sys.executable, str(HERE / "worker_kill_driver.py"), cluster.master_url, str(out), str(TASKS),
                 str(SLEEP), shuffle], env=spark_environment(tmp / "driver", log_level="warn"),
                stdout=subprocess.PIPE, stderr=driver_log, text=True)
        assert driver.stdout is not None
        events: dict[str, float] = {}
        for line in driver.stdout:
            event = json.loads(line)
            events[event["event"]] = event["t"]
            print("driver:", event, flush=True)
            if event["event"] == "write-start":
                break
        if "write-start" not in events:
            raise RuntimeError("the driver failed: " + (tmp / "driver.log").read_text(errors="replace")[-3000:])
        victim = cluster.workers[0]
        started_file, deadline = out / "started.jsonl", time.monotonic() + 120
        while time.monotonic() < deadline:  # until a task attempt is asleep on worker-0's executor
            running = [json.loads(x) for x in started_file.read_text().splitlines()] if started_file.exists() else []
            if any(Path(t["cwd"]).parent.parent.name == "worker-0" for t in running):
                break
            time.sleep(0.1)
        time.sleep(1)
        killed_at = time.time()
        frozen = [victim.pid, *processes_under(tmp / "cluster" / "worker-0")] if os.environ.get("PROBE_FREEZE") else []
        for pid in frozen:
            os.kill(pid, signal.SIGSTOP)
        if not frozen:
            os.kill(victim.pid, signal.SIGKILL)
        clock = datetime.datetime.fromtimestamp(killed_at).strftime("%H:%M:%S.%f")[:-3]
        print(f"{'SIGSTOP' if frozen else 'SIGKILL'} worker-0 (pid {victim.pid}) at {clock}, "
              f"{killed_at - events['write-start']:.1f}s after the write started", flush=True)
        for line in driver.stdout:
            event = json.loads(line)
            events[event["event"]] = event["t"]
            print("driver:", {**event, "after_kill_s": round(event["t"] - killed_at, 1)}, flush=True)
        driver.wait(timeout=300)
        for pid in frozen:
            os.kill(pid, signal.SIGKILL)
        tasks = [json.loads(x) for x in (out / "tasks.jsonl").read_text().splitlines()] if (
            out / "tasks.jsonl").exists() else []
        commits = [json.loads(x) for x in (out / "commits.jsonl").read_text().splitlines()] if (
            out / "commits.jsonl").exists() else []
        for t in sorted(tasks, key=lambda t: (t["partition"], t["attempt"])):
            worker = Path(t["cwd"]).parent.parent.name
            print(f"  task stage {t['stage']} partition {t['partition']} attempt {t['attempt']} "
                  f"id {t['task_attempt_id']} "
                  f"on {worker} exec {Path(t['cwd']).name} python {t['python']}")
        print("commits:", commits)
        log = (tmp / "driver.log").read_text(errors="replace").splitlines()
        for line in log:
            if any(k in line for k in ("Lost executor", "lost", "Removed", "Executor added", "disconnected",
                                       "Resubmitted", "failed", "Failed")):
                print("  driver log:", line[:220])
        for name in ("master.log",):
            for line in (tmp / "cluster" / name).read_text(errors="replace").splitlines():
                if any(k in line for k in ("Removing worker", "lost", "timed out", "disassociated", "Removing executor")):
                    print(f"  {name}:", line[:220])
        print("processes still running in worker-0's work dir:", processes_under(tmp / "cluster" / "worker-0"))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "")
