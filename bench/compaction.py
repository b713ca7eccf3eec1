"""Compaction of one large bucket: ``python -m bench.compaction [--keys N] [--engine E]
[--rounds R] [--code DIR ...]``.

The setup of issue #30's measurement: a one-bucket primary-key table (``id`` bigint,
``seq`` bigint, a payload of about 100 bytes), its N keys (default 1,000,000) in a first
commit, every fourth key updated in a second and every fourth key from the third in a
third: three sorted runs, 1.5 N input rows. ``--engine``: ``deduplicate`` (default),
``partial-update`` or ``aggregation`` (``seq`` summed, ``payload`` its last non-null).

Each round copies the table and runs ``tablelog compact`` on it in a fresh process, once
per ``--code`` directory (a checkout whose ``core`` is put first on the path, e.g. an
older revision from ``git archive``; default: the installed tablelog), the order rotated
every round: the process's wall time (imports included; bytecode is compiled by an
untimed first run), input rows/s over that time, and its peak RSS (``VmHWM``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa

from bench.common import stats

ENGINES = {
    "deduplicate": {},
    "partial-update": {"merge-engine": "partial-update"},
    "aggregation": {"merge-engine": "aggregation", "fields.seq.aggregate-function": "sum",
                    "fields.payload.aggregate-function": "last_non_null_value"},
}
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("seq", pa.int64()), ("payload", pa.string())])


def make_table(warehouse: str, keys: int, engine: str) -> int:
    """The three runs; the input rows."""
    import tablelog

    table = tablelog.create_table(warehouse, "db.t", SCHEMA, primary_key=["id"], bucket=1, options={
        "log.system": "none", "num-sorted-run.compaction-trigger": "100", **ENGINES[engine]})
    rows = 0
    with table.writer() as writer:
        for seq, ids in enumerate([range(keys), range(0, keys, 4), range(2, keys, 4)]):
            for start in range(0, len(ids), 100_000):
                part = ids[start:start + 100_000]
                writer.write(pa.table({
                    "id": pa.array(part, pa.int64()), "seq": pa.array([seq] * len(part), pa.int64()),
                    "payload": pa.array([f"{i:020d}-payload-{seq}-" + "abcdefghij" * 4 for i in part]),
                }, schema=SCHEMA))
                rows += len(part)
            writer.commit()
    return rows


def compact(warehouse: str, code: str | None, cache: str) -> tuple[float, float]:
    """``tablelog compact`` in a fresh process: its wall seconds and peak RSS in MB."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = cache
    if code is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(Path(code) / "core"), env.get("PYTHONPATH", "")])
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _CLI, "compact", "-w", warehouse, "db.t"], env=env,
                          capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - began
    if done.returncode != 0 or "compacted bucket(s) 0" not in done.stdout:
        raise RuntimeError(f"tablelog compact failed ({done.returncode}): {done.stdout[-2000:]}{done.stderr[-2000:]}")
    return seconds, int(done.stderr.rsplit("peak-rss-kb ", 1)[1].split()[0]) / 1024


#: ``tablelog`` telling, as it exits, its peak RSS: that of its own memory since it started
#: (``ru_maxrss`` would count the memory of the process that forked it).
_CLI = """
import atexit, sys
def peak():
    status = open("/proc/self/status").read()
    print("peak-rss-kb", status.split("VmHWM:")[1].split()[0], file=sys.stderr)
atexit.register(peak)
from tablelog.cli import cli
cli()
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--engine", choices=sorted(ENGINES), default="deduplicate")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--code", action="append", help="a checkout to run the compaction with (repeatable)")
    args = parser.parse_args()
    codes: list[str | None] = list(args.code or [None])
    with tempfile.TemporaryDirectory(prefix="bench-compaction-") as scratch:
        base, run = os.path.join(scratch, "base"), os.path.join(scratch, "run")
        rows = make_table(base, args.keys, args.engine)
        results: dict[str, list[tuple[float, float]]] = {str(c): [] for c in codes}
        for round_ in range(-1, args.rounds):  # round -1 compiles each checkout's bytecode
            shift = max(round_, 0) % len(codes)
            for code in codes[shift:] + codes[:shift]:
                shutil.rmtree(run, ignore_errors=True)
                shutil.copytree(base, run)
                one = compact(run, code, os.path.join(scratch, f"pycache-{codes.index(code)}"))
                if round_ >= 0:
                    results[str(code)].append(one)
        print(f"{args.engine}: {rows:,} input rows in 3 sorted runs of one bucket; {args.rounds} rounds")
        for code, measured in results.items():
            seconds = stats([s for s, _ in measured])
            rss = stats([m for _, m in measured])
            print(f"  {code}: {seconds['median']:.2f} s ({seconds['min']:.2f}-{seconds['max']:.2f}), "
                  f"{rows / seconds['median']:,.0f} input rows/s, peak RSS {rss['median']:.0f} MB "
                  f"({rss['min']:.0f}-{rss['max']:.0f})")


if __name__ == "__main__":
    main()
