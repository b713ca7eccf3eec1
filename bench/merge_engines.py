"""What a merge engine costs a writer: ``python -m bench.merge_engines [--sizes N,N]
[--batch B] [--rounds R] [--hits F,F]``.

Three tables of the same rows (``id`` key, ``seq``, ``payload``; 100-byte rows, 4
buckets, the built-in ``filesystem`` log): ``deduplicate`` (the log carries the writes),
``partial-update`` and ``aggregation`` (``seq`` summed, ``payload`` its last non-null
value; the log carries the table's changelog, which the writer computes by looking up
the keys it wrote). Each table is pre-loaded with N rows (keys 0..N-1, commits of
``PRELOAD_COMMIT`` rows, not timed). A round then writes one batch of B rows with a
``Writer`` (Arrow batches of 10,000) and commits it, timed from the first ``write`` to
the end of ``commit()``; a fraction ``hit`` of the batch's keys is already in the table
(drawn from 0..N-1), the rest are new (never written before). Every variant gets the
same rows in a round, in an order that rotates every round; the ratio to deduplicate
is taken per round.

Automatic compaction is off during the timed commits (``num-sorted-run.compaction-trigger``
above the number of commits; ``--compaction-trigger``): one commit that compacts would
time the compaction of a whole bucket, not the write. Each table is compacted fully
before the rounds of each hit fraction (not timed), as a table written steadily is kept
compacted in the background: a round's lookups read the compacted files and the files
of the rounds before it, at most ``rounds`` sorted runs more, not every commit's since
the table was created. Each table size ends with a timed
full compaction of each table (``Table.compact()``) instead.

Memory: after the timed rounds, one more batch per variant and hit fraction with a
sampler thread recording the process's RSS and Arrow's allocated bytes every 5 ms, and
``tracemalloc`` tracing the Python objects; each figure is the peak during the write
and commit minus its value just before. Run at two table sizes, it shows whether what
the lookups hold grows with the table or only with the batch.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import tempfile
import threading
import time
import tracemalloc
from typing import Any

import pyarrow as pa

from bench.common import SCHEMA, batches, create_table, make_rows, rss_mb, stats, unique
from tablelog.table import Table

PRELOAD_COMMIT = 200_000

VARIANTS: dict[str, dict[str, str]] = {
    "deduplicate": {},
    "partial-update": {"merge-engine": "partial-update"},
    "aggregation": {
        "merge-engine": "aggregation",
        "fields.seq.aggregate-function": "sum",
        "fields.payload.aggregate-function": "last_non_null_value",
    },
}


#: The log's record format (``--log-format``): Debezium JSON, Paimon's and tablelog's default, unless asked.
LOG_FORMAT = {"log.format": "debezium-json"}


def preload(warehouse: str, options: dict[str, str], size: int, compaction_trigger: int) -> Table:
    table = create_table(warehouse, 4, {
        "log.system": "filesystem", "num-sorted-run.compaction-trigger": str(compaction_trigger), **LOG_FORMAT,
        **options})
    writer = table.writer(unique("load"))
    for start in range(0, size, PRELOAD_COMMIT):
        for part in batches(make_rows(min(PRELOAD_COMMIT, size - start), 100, start=start)):
            writer.write(part)
        writer.commit()
    writer.close()
    return table


def batch_rows(size: int, batch: int, hit: float, fresh_from: int, rng: random.Random) -> pa.Table:
    """``batch`` rows: ``hit`` of them keys of the pre-loaded 0..size-1, the rest new keys
    from ``fresh_from`` on, shuffled."""
    old = int(batch * hit)
    ids = rng.sample(range(size), old) + list(range(fresh_from, fresh_from + batch - old))
    rng.shuffle(ids)
    rows = make_rows(batch, 100)
    return rows.set_column(0, SCHEMA.field("id"), pa.array(ids, pa.int64()))


def write_commit(table: Table, rows: pa.Table) -> float:
    writer = table.writer(unique("w"))
    began = time.perf_counter()
    for part in batches(rows):
        writer.write(part)
    writer.commit()
    elapsed = time.perf_counter() - began
    writer.close()
    return elapsed


class _Peaks:
    """Samples RSS and Arrow's allocated bytes until stopped; the peaks over the start values."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self.rss0, self.arrow0 = rss_mb(), pa.total_allocated_bytes()
        self.rss, self.arrow = self.rss0, self.arrow0
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        self.rss = max(self.rss, rss_mb())
        self.arrow = max(self.arrow, pa.total_allocated_bytes())

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(0.005)

    def stop(self) -> dict[str, float]:
        self._stop.set()
        self._thread.join()
        self._sample()
        return {"rss_mb": self.rss - self.rss0, "arrow_mb": (self.arrow - self.arrow0) / 2**20}


def memory_of(table: Table, rows: pa.Table) -> dict[str, float]:
    gc.collect()
    peaks = _Peaks()
    tracemalloc.start()
    write_commit(table, rows)
    _, python_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    out = peaks.stop()
    out["python_mb"] = python_peak / 2**20
    return out


def run_size(
    size: int, batch: int, rounds: int, hits: list[float], seed: int, compaction_trigger: int,
) -> dict[str, Any]:
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="bench-merge-") as warehouse:
        began = time.perf_counter()
        tables = {name: preload(warehouse, options, size, compaction_trigger) for name, options in VARIANTS.items()}
        print(f"table of {size:,} rows: pre-loaded the {len(tables)} tables in "
              f"{time.perf_counter() - began:.0f} s", flush=True)
        fresh = size
        result: dict[str, Any] = {"size": size, "batch": batch, "hits": {}}
        for hit in hits:
            for table in tables.values():
                table.compact()  # not timed: a table written steadily is compacted in the background
            seconds: dict[str, list[float]] = {name: [] for name in VARIANTS}
            for round_ in range(rounds):
                rows = batch_rows(size, batch, hit, fresh, rng)
                fresh += batch
                names = list(VARIANTS)
                shift = round_ % len(names)
                for name in names[shift:] + names[:shift]:
                    seconds[name].append(write_commit(tables[name], rows))
                line = ", ".join(f"{n} {batch / s[-1]:,.0f}" for n, s in seconds.items())
                print(f"  size {size:,} hit {hit:.0%} round {round_ + 1}: rows/s {line}", flush=True)
            rates = {name: stats([batch / s for s in v]) for name, v in seconds.items()}
            ratios = {
                name: stats([d / s for d, s in zip(seconds["deduplicate"], v, strict=True)])
                for name, v in seconds.items() if name != "deduplicate"
            }
            rows = batch_rows(size, batch, hit, fresh, rng)
            fresh += batch
            memory = {name: memory_of(tables[name], rows) for name in VARIANTS}
            result["hits"][hit] = {"rows_per_s": rates, "ratio_to_deduplicate": ratios, "memory": memory}
            _print(size, hit, rates, ratios, memory)
        rows = size + (fresh - size) - sum(int(batch * h) for h in hits) * (rounds + 1)
        result["compaction_seconds"] = {}
        for name, table in tables.items():
            began = time.perf_counter()
            table.compact()
            result["compaction_seconds"][name] = time.perf_counter() - began
        print(f"  full compaction of the table (every bucket, {rows:,} rows): " + ", ".join(
            f"{n} {s:.1f} s" for n, s in result["compaction_seconds"].items()), flush=True)
    return result


def _print(size: int, hit: float, rates: dict[str, Any], ratios: dict[str, Any], memory: dict[str, Any]) -> None:
    print(f"table {size:,} rows, {hit:.0%} of the batch's keys in the table:")
    for name, rate in rates.items():
        ratio = ratios.get(name)
        mem = memory[name]
        text = f"    {name:15} {rate['median']:>9,.0f} rows/s ({rate['min']:,.0f}-{rate['max']:,.0f})"
        if ratio is not None:
            text += f"  {ratio['median']:.2f}x of deduplicate ({ratio['min']:.2f}-{ratio['max']:.2f})"
        text += (f"  memory: RSS +{mem['rss_mb']:.0f} MB, Arrow +{mem['arrow_mb']:.0f} MB, "
                 f"Python peak {mem['python_mb']:.0f} MB")
        print(text, flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.merge_engines", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="200000,1000000", help="rows pre-loaded into each table, per run")
    parser.add_argument("--batch", type=int, default=50_000, help="rows per timed commit")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--hits", default="0.1,0.9", help="fractions of a batch's keys already in the table")
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--compaction-trigger", type=int, default=100,
                        help="the tables' num-sorted-run.compaction-trigger: by default above the commits a run "
                             "makes, so that no timed commit compacts (each size ends with a timed full compaction)")
    parser.add_argument("--json", help="write every run's figures to this file")
    parser.add_argument("--log-format", default="debezium-json", help="the tables' log.format")
    args = parser.parse_args(argv)
    hits = [float(h) for h in args.hits.split(",")]
    LOG_FORMAT["log.format"] = args.log_format
    results = [run_size(int(s), args.batch, args.rounds, hits, args.seed, args.compaction_trigger)
               for s in args.sizes.split(",")]
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=1, default=str)


if __name__ == "__main__":
    main()
