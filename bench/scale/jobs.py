"""The measurements run in processes of their own, each timed and its memory taken:

- a full compaction of one table partition by ``tablelog compact --partition`` (peak RSS
  from ``os.wait4``: the child's ``ru_maxrss``);
- ``tablelog.spark.compact`` of one table partition, and a full scan to ``noop``, each in
  a new Spark session (:mod:`bench.scale.spark_job`: peak task RSS from its workers);
- ``tablelog expire``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from typing import Any


def _cli(*args: str) -> list[str]:
    """``tablelog ARGS`` run by this interpreter, so the child imports the tablelog this
    process does (``PYTHONPATH``), not whichever the ``tablelog`` script belongs to."""
    return [sys.executable, "-c", "from tablelog.cli import main; main()", *args]


def _options_args(options: Mapping[str, str]) -> list[str]:
    return [arg for key, value in options.items() for arg in ("-o", f"{key}={value}")]


def measured(command: list[str], timeout_s: float = 7200.0) -> dict[str, Any]:
    """Run ``command``, its output to files; its wall seconds, peak RSS (MB: the child's
    ``ru_maxrss`` from ``os.wait4``) and stdout. Raises with its stderr's end when it fails."""
    import tempfile

    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        began = time.perf_counter()
        process = subprocess.Popen(command, stdout=out, stderr=err, text=True)
        deadline = began + timeout_s
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                process.kill()
                raise TimeoutError(f"{command[3:5]} ran for more than {timeout_s} s")
            time.sleep(0.05)
        seconds = time.perf_counter() - began
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(command[3:6])} failed ({process.returncode}): {stderr[-2000:]}")
    return {"seconds": seconds, "peak_rss_mb": usage.ru_maxrss / 1024, "stdout": stdout}


def compact_partition(warehouse: str, table: str, options: Mapping[str, str], partition: int) -> dict[str, Any]:
    """``tablelog compact --partition p=N`` in a child process."""
    got = measured(_cli("compact", "--warehouse", warehouse, table, "-p", f"p={partition}", *_options_args(options)))
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
