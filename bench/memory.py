"""Reader memory: RSS of a process that reads N committed records with a transactional
reader, through the built-in ``filesystem`` log (no broker: 10 M records through
Tansu's in-memory storage do not fit this machine's time and memory budget).

The table (4 buckets, 100-byte records) is written by the parent in commits of
1 M rows; a fresh process then reads every change with ``poll(max_records=10_000)``,
dropping each batch (what a streaming consumer does), and samples its RSS after
every poll. Growth = peak RSS - RSS after the first poll.
"""

from __future__ import annotations

import multiprocessing as mp
import tempfile
import time
from typing import Any

from bench.common import batches, create_table, make_rows, unique

_SPAWN = mp.get_context("spawn")
COMMIT_ROWS = 1_000_000


def _read(warehouse: str, identifier: str, total: int, out: Any) -> None:
    import tablelog
    from bench.common import rss_mb

    table = tablelog.open_table(warehouse, identifier)
    samples: list[tuple[int, float]] = [(0, rss_mb())]
    seen = 0
    began = time.perf_counter()
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        while seen < total:
            got = len(reader.poll(max_records=10_000, timeout_s=1.0))
            if not got and time.perf_counter() - began > 3600:
                break
            seen += got
            if len(samples) < 2 or seen - samples[-1][0] >= max(total // 400, 10_000) or seen >= total:
                samples.append((seen, rss_mb()))
    elapsed = time.perf_counter() - began
    out.put({"seen": seen, "seconds": elapsed, "samples": samples})


def measure(records: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-mem-") as warehouse:
        table = create_table(warehouse, 4, {"log.system": "filesystem"})
        began = time.perf_counter()
        written = 0
        writer = table.writer(unique("w"))
        while written < records:
            n = min(COMMIT_ROWS, records - written)
            for part in batches(make_rows(n, 100, start=1_000_000 + written), 100_000):
                writer.write(part)
            writer.commit()
            written += n
        write_seconds = time.perf_counter() - began
        out = _SPAWN.Queue()
        proc = _SPAWN.Process(target=_read, args=(warehouse, table.identifier, records, out))
        proc.start()
        result = out.get(timeout=7200)
        proc.join(60)
    samples = result["samples"]
    after_first = samples[1][1] if len(samples) > 1 else samples[0][1]
    peak = max(rss for _, rss in samples)
    return {
        "records": records, "record_bytes": 100, "log": "filesystem", "partitions": 4,
        "write_seconds": write_seconds, "read_seconds": result["seconds"], "seen": result["seen"],
        "read_rate": result["seen"] / result["seconds"],
        "rss_start_mb": samples[0][1], "rss_after_first_poll_mb": after_first, "rss_peak_mb": peak,
        "rss_growth_mb": peak - after_first, "samples": samples,
    }


if __name__ == "__main__":
    import json
    import sys

    r = measure(int(sys.argv[1]))
    r.pop("samples")
    print(json.dumps(r, indent=1))
