"""The reader and writer of two git revisions, on the same machine in the same run:
``python -m bench.compare_revisions REV_A REV_B [--records N] [--rounds R]``.

Each revision is checked out into a temporary worktree and imported from there (its
``core/`` and its plugins ahead of the installed package) in a process of its own; the
processes alternate A, B, B, A, … so that a slower stretch of the machine hits both. Each
process writes N records of four columns (two strings, a bigint key, a double) to a
table on the built-in file log, commits them, and times (best of three, records/s) a
transactional ``poll()``, ``poll_arrow()`` and an eventual ``poll()`` over them, and the
write of the records up to the commit. The file log keeps a broker's spread out of the
figures: they are tablelog's own work. Prints the median of each figure per revision and
the ratio B / A.

Use it to check a change for a regression: ``python -m bench.compare_revisions main HEAD``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_MEASURE = r'''
import json, sys, tempfile, time
import pyarrow as pa
from tablelog import options as tl_options
from tablelog.tables import create_table
n = int(sys.argv[1])
schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("score", pa.float64()), ("note", pa.string())])
options = {"log.system": "filesystem"}
import attrs
if any(f.metadata.get("key") == "log.reader.pause-gc" for f in attrs.fields(tl_options.TableOptions)):
    options["log.reader.pause-gc"] = "true"  # revisions before it paused the collector always
data = pa.table({"id": pa.array(range(n), pa.int64()), "name": [f"name-{i}" for i in range(n)],
                 "score": [i * 0.5 for i in range(n)], "note": ["x" * 40] * n})
result = {}
with tempfile.TemporaryDirectory(prefix="bench-revisions-") as warehouse:
    best = 0.0
    for attempt in range(3):
        table = create_table(warehouse, f"db.t{attempt}", schema, primary_key=["id"], bucket=2, options=options)
        start = time.perf_counter()
        with table.writer("w") as writer:
            writer.write(data)
            writer.commit()
        best = max(best, n / (time.perf_counter() - start))
    result["write+commit"] = best
    for variant in ("poll", "poll_arrow", "eventual poll"):
        best = 0.0
        for _ in range(3):
            consistency = "eventual" if variant.startswith("eventual") else "transactional"
            with table.reader(consistency=consistency, scan_mode="earliest") as reader:
                got, start = 0, time.perf_counter()
                while got < n:
                    got += (reader.poll_arrow(timeout_s=0.5).num_rows if variant == "poll_arrow"
                            else len(reader.poll(timeout_s=0.5)))
                best = max(best, n / (time.perf_counter() - start))
        result[variant] = best
print(json.dumps(result))
'''


def _measure(tree: Path, records: int) -> dict[str, float]:
    path = ":".join(str(p) for p in (tree / "core", *sorted((tree / "plugins").glob("*")), tree))
    out = subprocess.run([sys.executable, "-c", _MEASURE, str(records)], cwd=tree, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": path})
    if out.returncode != 0:
        raise SystemExit(f"the measurement failed in {tree}:\n{out.stderr[-3000:]}")
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("revisions", nargs=2, metavar="REV")
    parser.add_argument("--records", type=int, default=150_000)
    parser.add_argument("--rounds", type=int, default=4, help="processes per revision (alternating)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-revisions-") as tmp:
        trees = {}
        for label, rev in zip("AB", args.revisions, strict=True):
            trees[label] = Path(tmp) / label
            subprocess.run(["git", "worktree", "add", "--detach", "-q", str(trees[label]), rev], cwd=ROOT, check=True)
        try:
            runs: dict[str, list[dict[str, float]]] = {"A": [], "B": []}
            for round_ in range(args.rounds):
                for label in ("AB" if round_ % 2 == 0 else "BA"):
                    runs[label].append(_measure(trees[label], args.records))
                    print(f"round {round_ + 1} {label}: " + ", ".join(
                        f"{k} {v:,.0f}" for k, v in runs[label][-1].items()), file=sys.stderr, flush=True)
        finally:
            for tree in trees.values():
                subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, check=False)
    print(f"{args.records:,} records, {args.rounds} processes per revision; records/s (median)")
    print(f"{'':16}{'A ' + args.revisions[0]:>22}{'B ' + args.revisions[1]:>22}{'B / A':>8}")
    for key in runs["A"][0]:
        a = statistics.median(r[key] for r in runs["A"])
        b = statistics.median(r[key] for r in runs["B"])
        print(f"{key:16}{a:>22,.0f}{b:>22,.0f}{b / a:>8.2f}")


if __name__ == "__main__":
    main()
