"""The measurements run in processes of their own, each timed and its memory taken:

- a full compaction of one table partition by ``tablelog compact --partition`` (peak RSS:
  the child's ``ru_maxrss``, from ``os.wait4``);
- ``tablelog.spark.compact`` of one table partition, and a full scan to ``noop``, each in
  a new Spark session (:mod:`bench.scale.spark_job`: peak task RSS from its workers);
- ``tablelog expire``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from typing import Any


def _cli(*args: str) -> list[str]:
    """``tablelog ARGS`` run by this interpreter, so the child imports the tablelog this
    process does (``PYTHONPATH``), not whichever the ``tablelog`` script belongs to."""
    return [sys.executable, "-c", "from tablelog.cli import main; main()", *args]


def _options_args(options: Mapping[str, str]) -> list[str]:
    return [arg for key, value in options.items() for arg in ("-o", f"{key}={value}")]


#: Runs a command and writes its peak RSS (KB) to a file. Forked from this small process,
#: not from the benchmark's: Linux counts in a process's ``ru_maxrss`` the memory of the
#: process it was forked from, up to its ``exec`` (the benchmark's few hundred MB).
_PEAK_RSS = """\
import json, os, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as out:
    json.dump(usage.ru_maxrss, out)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def measured(command: list[str], timeout_s: float = 7200.0) -> dict[str, Any]:
    """Run ``command``: its wall seconds, peak RSS (MB, its ``ru_maxrss``) and stdout.
    Raises with the end of its stderr when it fails."""
    with tempfile.NamedTemporaryFile("r", suffix=".json") as peak:
        began = time.perf_counter()
        process = subprocess.Popen([sys.executable, "-c", _PEAK_RSS, peak.name, *command], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            stdout, stderr = process.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise
        seconds = time.perf_counter() - began
        if process.returncode != 0:
            raise RuntimeError(f"{' '.join(command[3:6])} failed ({process.returncode}): {stderr[-2000:]}")
        peak_kb = json.loads(peak.read())
    return {"seconds": seconds, "peak_rss_mb": peak_kb / 1024, "stdout": stdout}


def compact_partition(warehouse: str, table: str, options: Mapping[str, str], partition: int,
                      threads: int | None = None) -> dict[str, Any]:
    """``tablelog compact --partition p=N`` in a child process (``threads``: its
    ``--threads``; None: its default)."""
    threads_args = () if threads is None else ("--threads", str(threads))
    got = measured(_cli("compact", "--warehouse", warehouse, table, "-p", f"p={partition}", *threads_args,
                        *_options_args(options)))
    return {"seconds": got["seconds"], "peak_rss_mb": got["peak_rss_mb"], "summary": got["stdout"].strip()[-300:]}


def spark_job(job: dict[str, Any]) -> dict[str, Any]:
    """:mod:`bench.scale.spark_job` in a child process: its JSON line, and the child's
    own (the driver's) peak RSS."""
    got = measured([sys.executable, "-m", "bench.scale.spark_job", json.dumps(job)])
    out = json.loads(got["stdout"].strip().splitlines()[-1])
    out["driver_peak_rss_mb"] = got["peak_rss_mb"]
    return out


def expire(warehouse: str, table: str, options: Mapping[str, str]) -> dict[str, Any]:
    """``tablelog expire`` keeping only the latest snapshot, with ``snapshot.expire.limit``
    raised so that one run expires them all: seconds, peak RSS, what it removed."""
    keep_one = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1",
                "snapshot.time-retained": "1 ms", "snapshot.expire.limit": "1000000"}
    got = measured(_cli("expire", "--warehouse", warehouse, table, "--format", "json",
                        *_options_args({**options, **keep_one})))
    document = json.loads(got["stdout"])
    return {"seconds": got["seconds"], "peak_rss_mb": got["peak_rss_mb"],
            "expired_snapshots": len(document["expired_snapshots"]), "data_files": len(document["data_files"]),
            "manifest_files": len(document["manifest_files"]), "earliest_kept": document["earliest_kept"],
            "latest": document["latest"]}
