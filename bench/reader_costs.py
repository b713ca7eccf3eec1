"""What the reader's speed tricks buy: ``python -m bench.reader_costs [N] [ROUNDS]``.

Prints, per record (CPU time of this process, median of ROUNDS; defaults 150,000 and 5):

* ``change``: building a :class:`tablelog.reading.Change` with ``tuple.__new__`` (what
  the reader does), with ``Change(...)``, and a frozen attrs class with the same fields;
* ``decode``: values of 100 B, 1 KB and 10 KB decoded all at once by Arrow's JSON
  reader (``RecordCodec.values_to_arrow``) against one by one with orjson
  (``decode_record``): where ``_AT_ONCE_MAX_AVERAGE_BYTES`` comes from;
* ``gc``: a transactional ``poll()``, ``poll_arrow()`` and an eventual ``poll()`` of N
  committed 100-byte records, with the collector left on (the default) and paused
  while each batch is built (``log.reader.pause-gc=true``). The log is
  :class:`tablelog.testing.memory_log.MemoryLog` (Kafka-like positions, in this
  process), so that the figures are the reader's own work, not a broker's.
"""

from __future__ import annotations

import gc
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import attrs
import pyarrow as pa

from tablelog.formats import record_codec
from tablelog.logs import discovery
from tablelog.options import LogFormat
from tablelog.reading import Change
from tablelog.records import RowKind
from tablelog.tables import create_table
from tablelog.testing.memory_log import MemoryLog

SCHEMA = pa.schema([("id", pa.int64()), ("seq", pa.int64()), ("payload", pa.string())])


def per_record(run: Callable[[], int], rounds: int) -> float:
    """Median CPU µs per record of ``run`` (which returns how many records it handled)."""
    times = []
    for _ in range(rounds):
        began = time.process_time()
        count = run()
        times.append((time.process_time() - began) / count * 1e6)
    return statistics.median(times)


def change_costs(n: int, rounds: int) -> None:
    @attrs.frozen
    class Frozen:
        kind: RowKind
        row: dict[str, Any]
        snapshot_id: int | None = None
        partition: int | None = None
        position: int | None = None

    row = {"id": 1}
    new = tuple.__new__

    def with_new() -> int:
        for i in range(n):
            new(Change, (RowKind.INSERT, row, 1, 0, i))
        return n

    def with_call() -> int:
        for i in range(n):
            Change(RowKind.INSERT, row, 1, 0, i)
        return n

    def with_attrs() -> int:
        for i in range(n):
            Frozen(RowKind.INSERT, row, 1, 0, i)
        return n

    for name, run in (("tuple.__new__", with_new), ("Change(...)", with_call), ("frozen attrs", with_attrs)):
        print(f"change  {name:<14} {per_record(run, rounds):6.3f} µs")


def decode_costs(n: int, rounds: int) -> None:
    codec = record_codec(SCHEMA, ("id",), LogFormat.DEBEZIUM_JSON)
    for size in (100, 1_000, 10_000):
        count = max(100, n * 100 // size // 10)
        payload = "x" * max(1, size - 90)  # the envelope takes ~90 bytes
        rows = pa.table({"id": range(count), "seq": range(count), "payload": [payload] * count}, schema=SCHEMA)
        values: list[bytes | None] = list(codec.encode(rows, [RowKind.INSERT] * count, 0).values)

        def at_once(values: list[bytes | None] = values) -> int:
            codec.values_to_arrow(values)
            return len(values)

        def one_by_one(values: list[bytes | None] = values) -> int:
            decode, python_row = codec.decode_record, codec.python_row  # what the reader calls
            for value in values:
                python_row(decode(value)[1])  # type: ignore[arg-type]
            return len(values)

        print(f"decode  {size:>6} B  all at once {per_record(at_once, rounds):6.2f} µs   "
              f"one by one {per_record(one_by_one, rounds):6.2f} µs")


def gc_costs(n: int, rounds: int) -> None:
    memory = MemoryLog()
    discovery.register_log_system("bench-memory", memory.plugin())
    try:
        table = create_table(tempfile.mkdtemp(), "bench.reader_costs", SCHEMA, primary_key=["id"], bucket=4,
                             options={"log.system": "bench-memory"})
        task = table.write_task("bench", 1)
        for start in range(0, n, 10_000):
            count = min(10_000, n - start)
            task.write(pa.table({"id": range(start, start + count), "seq": range(count),
                                 "payload": ["x" * 10] * count}, schema=SCHEMA))
        table.commit("bench", 1, [task.finish()])

        def read(consistency: str, arrow: bool, pause: bool) -> Callable[[], int]:
            def run() -> int:
                seen = 0
                with table.reader(consistency=consistency, scan_mode="earliest",
                                  **{"log.reader.pause-gc": str(pause).lower()}) as reader:
                    while got := (reader.poll_arrow().num_rows if arrow else len(reader.poll())):
                        seen += got
                assert seen == n, (seen, n)
                return seen
            return run

        for name, consistency, arrow in (("transactional poll()", "transactional", False),
                                         ("transactional poll_arrow()", "transactional", True),
                                         ("eventual poll()", "eventual", False)):
            on = per_record(read(consistency, arrow, False), rounds)
            paused = per_record(read(consistency, arrow, True), rounds)
            print(f"gc      {name:<27} collector on {on:5.2f} µs   paused per batch {paused:5.2f} µs")
    finally:
        discovery.unregister_log_system("bench-memory")


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 150_000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    print(f"python {sys.version.split()[0]}, {n} records, median of {rounds} rounds, CPU µs per record; "
          f"gc threshold {gc.get_threshold()}")
    change_costs(n, rounds)
    decode_costs(n, rounds)
    gc_costs(n, rounds)


if __name__ == "__main__":
    main()
