"""The Arrow log format against the raw per-record clients (issue #17's targets).

    python -m bench.arrow_log [--rows 300000] [--rounds 3] [--systems kafka,pulsar,filesystem]
                              [--compression lz4|zstd|none] [--only whole-writer]

For each log system, in one run, on one broker, with the same 100-byte rows
(``bench.common.make_rows``), alternating the variants every round:

* **write**: raw per-record client producing the rows' pre-encoded Debezium JSON one
  record each, flushed (Kafka: confluent-kafka; Pulsar: pulsar-client; the file log:
  its own ``produce`` hook, 10,000 records a call) against the tablelog writer's log
  path with ``log.format=arrow`` (Arrow in → every record acknowledged; Paimon
  stubbed out, as in ``bench.throughput``);
* **read**: the raw consumer of the per-record topic with ``orjson.loads`` per record
  against the transactional reader's ``poll_arrow()`` of the arrow topic;
* **pruning**: the transactional reader of a 20-column arrow table asked for 2
  columns (``table.reader(columns=...)``) against the same reader with all 20, on a
  table written 10,000 rows a write (records of ~2,500 rows: one write's rows of one
  partition) and on one written 100,000 rows a write (records of up to ~10,000 rows,
  near ``log.max-record-bytes``);
* **batch size**: the arrow writer and reader at several ``log.max-record-bytes``;
* **projection stream**: a third 20-column table (10,000-row writes) with
  ``log.arrow.projection=c1,c3``: its reader of those 2 columns (which reads the
  projection stream) against its reader of all 20 (the table topic), its reader of 2
  other columns (``c4,c6``: the table topic, pruned on decoding), and the writer's log
  path on it against the same on a table without the projection;
* **columns requested**: the reader of the 20-column table (10,000-row writes) asked for
  the first 1, 2, 5, 10 and 20 of its columns;
* **whole writer**: a ``Writer`` writing the rows in Arrow batches of 10,000 and committing
  them (Paimon data files, the log, the snapshot: ``commit()`` included) on a table with
  ``log.format=arrow``, against the same raw per-record producer in the same round; warm
  (a first commit of 100 rows, untimed, opens its log connection and the table), a fresh
  table each round. ``--only whole-writer`` runs it alone (``python -m bench.arrow_log
  --only whole-writer --rows 1000000 --rounds 5 --systems kafka``), into
  ``bench/results/arrow_log_whole_writer.json``.

Prints a JSON summary, writes ``bench/results/arrow_log.json`` and plots rows/s against
the record size bound and against the columns requested (``bench.plots.arrow_log``) into
``bench/results/plots/`` and ``docs/performance/`` (``--no-docs``: not there;
``--plots-only``: plot the JSON of an earlier run).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa

import tablelog
from bench.common import (
    batches,
    create_table,
    encoded_records,
    interleave,
    make_rows,
    unique,
    write_full,
    write_log_path,
)
from bench.throughput import KafkaRaw, PulsarRaw
from tablelog.logs.discovery import load_log_system
from tablelog.records import LogConfig, ProduceBatch

ROOT = Path(__file__).resolve().parents[1]
PARTITIONS = 4
WIDE_COLUMNS = 20
BATCH_BYTES = (64_000, 250_000, 1_000_000)
COLUMNS_REQUESTED = (1, 2, 5, 10, 20)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class FileRaw:
    """The file log's own hooks with per-record pre-encoded values: its raw client."""

    name = "filesystem"

    def __init__(self, address: str) -> None:
        self.path = address

    @staticmethod
    @contextlib.contextmanager
    def broker() -> Iterator[str]:
        with tempfile.TemporaryDirectory(prefix="bench-filelog-") as path:
            yield path

    def table_options(self) -> dict[str, str]:
        return {"log.system": "filesystem", "filesystem.path": self.path}

    def _client(self, topic: str, partitions: int) -> Any:
        config = LogConfig("filesystem", "bench.raw", topic, partitions, True, {"path": self.path})
        client = load_log_system("filesystem").open(config)
        client.ensure_topic()
        return client

    def new_topic(self, partitions: int) -> str:
        return unique("raw")

    def produce(self, topic: str, records: dict[int, tuple[list[Any], list[bytes]]], headers: bool) -> float:
        client = self._client(topic, PARTITIONS)
        began = time.perf_counter()
        stamp = int(time.time() * 1000)
        for partition, (keys, values) in records.items():
            for i in range(0, len(values), 10_000):
                client.produce(ProduceBatch("0123456789abcdef", partition, keys[i:i + 10_000],
                                            values[i:i + 10_000], stamp, i))
        client.flush(120)
        elapsed = time.perf_counter() - began
        client.close()
        return elapsed

    def fetch(self, topic: str, partitions: int, ends: dict[int, int], mode: str) -> int:
        """Read ``ends[p]`` records of every partition (file log positions are not dense:
        here ``ends`` are counts)."""
        client = self._client(topic, partitions)
        loads = orjson.loads
        seen = 0
        for partition in range(partitions):
            position, got = 0, 0
            while got < ends.get(partition, 0):
                result = client.fetch(partition, position, 10_000, 1.0)
                for record in result.records:
                    loads(record.value)
                got += len(result.records)
                position = result.next_position
            seen += got
        client.close()
        return seen

    @staticmethod
    def ends(receipt: Any) -> dict[int, int]:
        return {r.partition: r.last + 1 for r in receipt.ranges}


SYSTEMS: dict[str, Any] = {"kafka": KafkaRaw, "pulsar": PulsarRaw, "filesystem": FileRaw}


def wide_rows(n: int) -> pa.Table:
    """``n`` rows of a key and ``WIDE_COLUMNS - 1`` columns of mixed types."""
    columns: dict[str, pa.Array] = {"id": pa.array(range(n), pa.int64())}
    for c in range(1, WIDE_COLUMNS):
        if c % 3 == 0:
            columns[f"c{c}"] = pa.array([f"value-{i % 1000}-{c}" for i in range(n)], pa.string())
        elif c % 3 == 1:
            columns[f"c{c}"] = pa.array([i * c for i in range(n)], pa.int64())
        else:
            columns[f"c{c}"] = pa.array([i / (c + 1) for i in range(n)], pa.float64())
    return pa.table(columns)


def timed_write_then_commit(table: Any, parts: list[pa.Table]) -> float:
    """Seconds of the writer's log path (Paimon stubbed out, nothing committed); then the
    same rows written whole and committed (untimed), for the readers to read."""
    elapsed, _ = write_log_path(table, parts)
    write_full(table, parts)
    return elapsed


def whole_writer(table: Any, parts: list[pa.Table]) -> tuple[float, float]:
    """Seconds of a warm ``Writer``'s writes of ``parts`` and of its ``commit()`` of them."""
    with table.writer() as writer:
        writer.write(parts[0].slice(0, 100))  # warm: the log connection and the table open
        writer.commit()
        began = time.perf_counter()
        for part in parts:
            writer.write(part)
        written = time.perf_counter()
        writer.commit()
        committed = time.perf_counter()
    return written - began, committed - written


def measure_whole_writer(system: str, n: int, rounds: int) -> dict[str, Any]:
    """The whole writer against the raw per-record producer, alone (``--only whole-writer``)."""
    raw_cls = SYSTEMS[system]
    parts = batches(make_rows(n, 100))
    times: dict[str, list[float]] = {"raw_write": [], "whole_writer": [], "whole_writer_write": [],
                                     "whole_writer_commit": []}
    with raw_cls.broker() as address, tempfile.TemporaryDirectory(prefix="bench-arrow-") as warehouse:
        raw = raw_cls(address)
        records = encoded_records(create_table(warehouse, PARTITIONS, raw.table_options()), make_rows(n, 100))
        for round_ in range(rounds):
            log(f"{system}: whole writer, round {round_ + 1}/{rounds}")

            def raw_round() -> None:
                times["raw_write"].append(raw.produce(raw.new_topic(PARTITIONS), records, False))

            def whole_round() -> None:
                table = create_table(warehouse, PARTITIONS, {**raw.table_options(), **arrow_options()})
                write, commit = whole_writer(table, parts)
                times["whole_writer"].append(write + commit)
                times["whole_writer_write"].append(write)
                times["whole_writer_commit"].append(commit)

            interleave(round_, [("raw", raw_round), ("whole", whole_round)])
        with contextlib.suppress(Exception):
            raw.close()
    ratios = [r / w for r, w in zip(times["raw_write"], times["whole_writer"], strict=True)]
    result = {
        "system": system, "rows": n, "rounds": rounds, "runs_s": times,
        "rows_per_s": {k: median_rate(n, v) for k, v in times.items()},
        "whole_writer / raw_write": {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios),
                                     "runs": ratios},
    }
    log(json.dumps(result["whole_writer / raw_write"], indent=1))
    return result


def read_arrow(table: Any, total: int, columns: list[str] | None = None) -> float:
    """Seconds for the transactional reader's ``poll_arrow()`` to return ``total`` rows."""
    reader = table.reader(consistency="transactional", scan_mode="earliest", columns=columns,
                          options={"log.reader.pause-gc": "true"})
    seen = 0
    began = time.perf_counter()
    deadline = time.monotonic() + 300
    while seen < total:
        seen += reader.poll_arrow(max_records=50_000, timeout_s=1.0).num_rows
        if time.monotonic() > deadline:
            raise RuntimeError(f"reader got {seen} of {total}")
    elapsed = time.perf_counter() - began
    reader.close()
    if seen != total:
        raise RuntimeError(f"reader got {seen} rows, expected {total}")
    return elapsed


#: The columns of the projection stream (``log.arrow.projection``) of the pruning table that has one:
#: the two the pruned reads ask for (an int64 and a string column).
PROJECTED = ["c1", "c3"]


def median_rate(rows: int, seconds: list[float]) -> float:
    return rows / statistics.median(seconds)


#: ``log.arrow.compression`` of the arrow tables (``--compression``; None: the table default).
COMPRESSION: str | None = None


def arrow_options() -> dict[str, str]:
    """The options that make a table of the measured ``arrow`` records."""
    chosen = {} if COMPRESSION is None else {"log.arrow.compression": COMPRESSION}
    return {"log.format": "arrow", **chosen}


def measure(system: str, n: int, rounds: int) -> dict[str, Any]:
    raw_cls = SYSTEMS[system]
    rows = make_rows(n, 100)
    parts = batches(rows)
    wide = wide_rows(n)
    wide_parts = batches(wide)
    big_wide_parts = batches(wide, 100_000)
    times: dict[str, list[float]] = {k: [] for k in ("raw_write", "arrow_write", "raw_read", "arrow_read",
                                                      "all_columns", "two_columns", "all_columns_big",
                                                      "two_columns_big", "all_columns_projection_table",
                                                      "two_columns_projection", "two_other_columns_projection_table",
                                                      "wide_write", "wide_write_projection",
                                                      "whole_writer")}
    sweep: dict[int, dict[str, list[float]]] = {b: {"write": [], "read": []} for b in BATCH_BYTES}
    columns_sweep: dict[int, list[float]] = {k: [] for k in COLUMNS_REQUESTED}
    with raw_cls.broker() as address, tempfile.TemporaryDirectory(prefix="bench-arrow-") as warehouse:
        raw = raw_cls(address)
        json_table = create_table(warehouse, PARTITIONS, raw.table_options())
        records = encoded_records(json_table, rows)
        for round_ in range(rounds):
            log(f"{system}: round {round_ + 1}/{rounds}")
            runs: list[tuple[str, Callable[[], None]]] = []

            def raw_round() -> None:
                topic = raw.new_topic(PARTITIONS)
                times["raw_write"].append(raw.produce(topic, records, False))
                ends = {p: len(v) for p, (_, v) in records.items()} if system != "pulsar" else None
                if ends is None:  # Pulsar positions are message ids: take them from a tablelog write
                    return
                began = time.perf_counter()
                got = raw.fetch(topic, PARTITIONS, ends, "json")
                times["raw_read"].append(time.perf_counter() - began)
                assert got >= n, (got, n)  # Kafka: the raw warm-up record too

            def arrow_round() -> None:
                table = create_table(warehouse, PARTITIONS, {**raw.table_options(), **arrow_options()})
                times["arrow_write"].append(timed_write_then_commit(table, parts))
                times["arrow_read"].append(read_arrow(table, n))

            def pruning_round() -> None:
                for parts_, suffix in ((wide_parts, ""), (big_wide_parts, "_big")):
                    table = tablelog.create_table(
                        warehouse, f"bench.{unique('wide')}", wide.schema, primary_key=["id"], bucket=PARTITIONS,
                        options={**raw.table_options(), **arrow_options()})
                    write_full(table, parts_)
                    times["all_columns" + suffix].append(read_arrow(table, n))
                    times["two_columns" + suffix].append(read_arrow(table, n, ["c1", "c3"]))
                    if not suffix:
                        for k in COLUMNS_REQUESTED:
                            columns_sweep[k].append(read_arrow(table, n, wide.column_names[:k]))
                # The same rows with a projection stream of the two columns: the table topic
                # read whole, the projection read, two other columns pruned from the table topic,
                # and what the projection costs the writer's log path.
                plain = tablelog.create_table(
                    warehouse, f"bench.{unique('wide')}", wide.schema, primary_key=["id"], bucket=PARTITIONS,
                    options={**raw.table_options(), **arrow_options()})
                times["wide_write"].append(write_log_path(plain, wide_parts)[0])
                table = tablelog.create_table(
                    warehouse, f"bench.{unique('wide')}", wide.schema, primary_key=["id"], bucket=PARTITIONS,
                    options={**raw.table_options(), **arrow_options(), "log.arrow.projection": ",".join(PROJECTED)})
                times["wide_write_projection"].append(write_log_path(table, wide_parts)[0])
                write_full(table, wide_parts)
                times["all_columns_projection_table"].append(read_arrow(table, n))
                times["two_columns_projection"].append(read_arrow(table, n, PROJECTED))
                times["two_other_columns_projection_table"].append(read_arrow(table, n, ["c4", "c6"]))

            def whole_round() -> None:
                table = create_table(warehouse, PARTITIONS, {**raw.table_options(), **arrow_options()})
                times["whole_writer"].append(sum(whole_writer(table, parts)))

            runs = [("raw", raw_round), ("arrow", arrow_round), ("pruning", pruning_round), ("whole", whole_round)]
            for _, run in runs[round_ % len(runs):] + runs[:round_ % len(runs)]:
                run()
            for size in BATCH_BYTES:
                table = create_table(warehouse, PARTITIONS, {
                    **raw.table_options(), **arrow_options(), "log.max-record-bytes": str(size)})
                sweep[size]["write"].append(timed_write_then_commit(table, parts))
                sweep[size]["read"].append(read_arrow(table, n))
        if system == "pulsar":  # the raw reader needs positions: read a tablelog-written per-record topic
            raw_pulsar_reads(raw, json_table, parts, n, rounds, times)
        with contextlib.suppress(Exception):
            raw.close()
    rates = {k: median_rate(n, v) for k, v in times.items() if v}
    result = {
        "system": system, "rows": n, "rounds": rounds, "rows_per_s": rates, "runs_s": times,
        "ratios": {
            "arrow_write / raw_write": rates["arrow_write"] / rates["raw_write"],
            "whole writer (Paimon files, log, commit) / raw_write": rates["whole_writer"] / rates["raw_write"],
            "arrow_read / raw_read+orjson": rates["arrow_read"] / rates["raw_read"],
            "2 of 20 columns / all 20": rates["two_columns"] / rates["all_columns"],
            "2 of 20 columns / all 20, 100,000-row writes": rates["two_columns_big"] / rates["all_columns_big"],
            "2 of 20 columns from the projection stream / all 20":
                rates["two_columns_projection"] / rates["all_columns_projection_table"],
            "2 other columns of that table / all 20":
                rates["two_other_columns_projection_table"] / rates["all_columns_projection_table"],
            "wide writer with the projection / without": rates["wide_write_projection"] / rates["wide_write"],
        },
        "batch_bytes": {str(b): {k: median_rate(n, v) for k, v in d.items()} for b, d in sweep.items()},
        "batch_bytes_runs_s": {str(b): d for b, d in sweep.items()},
        "columns_requested": {str(k): median_rate(n, v) for k, v in columns_sweep.items()},
        "columns_requested_runs_s": {str(k): v for k, v in columns_sweep.items()},
    }
    log(json.dumps(result["ratios"], indent=1))
    return result


def raw_pulsar_reads(raw: Any, json_table: Any, parts: list[pa.Table], n: int, rounds: int,
                     times: dict[str, list[float]]) -> None:
    """Pulsar's raw reader reads until the last message id of a per-record topic written by
    the JSON writer (``bench.throughput`` does the same)."""
    _, receipt = write_full(json_table, parts)
    topic = raw.raw_topic_of(json_table)
    for _ in range(rounds):
        began = time.perf_counter()
        got = raw.fetch(topic, PARTITIONS, raw.ends(receipt), "json")
        times["raw_read"].append(time.perf_counter() - began)
        assert got >= n, (got, n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--systems", default="kafka,pulsar,filesystem")
    parser.add_argument("--no-docs", action="store_true", help="do not copy the plots to docs/performance/")
    parser.add_argument("--plots-only", action="store_true", help="plot bench/results/arrow_log.json again")
    parser.add_argument("--compression", choices=("lz4", "zstd", "none"), default=None,
                        help="log.arrow.compression of the arrow tables (default: the table default)")
    parser.add_argument("--only", choices=("whole-writer",), default=None,
                        help="run only the whole writer against the raw producer")
    args = parser.parse_args()
    global COMPRESSION
    COMPRESSION = args.compression
    if args.only == "whole-writer":
        out = ROOT / "bench" / "results" / "arrow_log_whole_writer.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        whole = [measure_whole_writer(system, args.rows, args.rounds) for system in args.systems.split(",")]
        out.write_text(json.dumps({"results": whole}, indent=1))
        print(json.dumps([{k: r[k] for k in ("system", "rows", "rows_per_s", "whole_writer / raw_write")}
                          for r in whole], indent=1))
        return
    out = ROOT / "bench" / "results" / "arrow_log.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    if args.plots_only:
        results = json.loads(out.read_text())["results"]
    else:
        results = []
        for system in args.systems.split(","):
            results.append({**measure(system, args.rows, args.rounds), "compression": args.compression})
            out.write_text(json.dumps({"results": results}, indent=1))  # kept if a later system fails
        print(json.dumps([{"system": r["system"], "ratios": r["ratios"], "rows_per_s": r["rows_per_s"]}
                          for r in results], indent=1))
    from bench import plots

    made = plots.arrow_log(results, ROOT / "bench" / "results" / "plots")
    if not args.no_docs:
        docs = ROOT / "docs" / "performance"
        for path in made:
            shutil.copy(path, docs / path.name)
    log(f"plots: {', '.join(str(p) for p in made)}")


if __name__ == "__main__":
    main()
