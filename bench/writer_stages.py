"""Where a warm Kafka writer's time goes, per record: ``python -m bench.writer_stages [N] [ROUNDS]``.

Each round: the raw producer with tablelog's headers (as in ``bench.throughput``), then
one warm ``WriteTask`` (log path only, Paimon stubbed out) whose ``_encode`` and log
client ``produce`` are wrapped with timers. Prints µs per record for the raw producer
and for the writer's stages: encode (validate-free: rows grouped by partition, JSON,
size check, batches), produce (the plugin's loop), the rest of ``write``, ``finish()``.
"""

from __future__ import annotations

import sys
import tempfile
import time
from typing import Any

from bench import brokers
from bench.common import batches, create_table, encoded_records, make_rows, warm_log_task
from bench.throughput import KafkaRaw
from tablelog.logs.pool import LogPool


class _TimedLog:
    """The task's log client, with its ``produce`` calls timed."""

    def __init__(self, client: Any, spent: dict[str, float]):
        self._client = client
        self._spent = spent

    def produce(self, batch: Any) -> None:
        began = time.perf_counter()
        self._client.produce(batch)
        self._spent["produce"] += time.perf_counter() - began

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def one_round(raw: KafkaRaw, warehouse: str, rows: Any) -> dict[str, float]:
    parts = batches(rows)
    table = create_table(warehouse, 4, raw.table_options())
    out = {"raw+headers": raw.produce(raw.new_topic(4), encoded_records(table, rows), headers=True)}
    pool = LogPool()
    task = warm_log_task(table, parts, pool)
    spent = {"encode": 0.0, "produce": 0.0}
    encode = task._encode

    def timed_encode(arrow: Any, kinds: Any) -> Any:
        began = time.perf_counter()
        result = encode(arrow, kinds)
        spent["encode"] += time.perf_counter() - began
        return result

    task._encode = timed_encode  # type: ignore[method-assign]
    task._open()
    client = task._log
    task._log = _TimedLog(client, spent)  # type: ignore[assignment]
    began = time.perf_counter()
    for part in parts:
        task.write(part)
    written = time.perf_counter()
    task._log = client
    task.finish()
    finished = time.perf_counter()
    pool.close()
    out.update(spent)
    out["other"] = written - began - spent["encode"] - spent["produce"]
    out["finish"] = finished - written
    out["writer"] = finished - began
    return out


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 150_000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    rows = make_rows(n, 100)
    with brokers.kafka() as address, tempfile.TemporaryDirectory(prefix="bench-wh-") as warehouse:
        raw = KafkaRaw(address)
        for _ in range(rounds):
            us = {k: v / n * 1e6 for k, v in one_round(raw, warehouse, rows).items()}
            print(f"µs/record: raw+headers {us['raw+headers']:.2f} | writer {us['writer']:.2f} = "
                  f"encode {us['encode']:.2f} + produce {us['produce']:.2f} + other {us['other']:.2f} "
                  f"+ finish {us['finish']:.2f}", flush=True)


if __name__ == "__main__":
    main()
