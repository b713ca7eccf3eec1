"""The demo pipeline: write inserts, updates and deletes, read the changelog back live,
and check that the log and the table agree. Runs on the embedded defaults (a local
warehouse and the built-in `filesystem` log); Kafka or Pulsar on request."""

from __future__ import annotations

import random
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

import attrs
import pyarrow as pa

from tablelog.normalize import Normalizer
from tablelog.reading import Change
from tablelog.table import Table
from tablelog.tables import create_table
from tablelog.verify import VerifyReport, verify

SCHEMA = pa.schema([
    ("order_id", pa.int64()),
    ("customer", pa.string()),
    ("amount", pa.float64()),
    ("status", pa.string()),
])


@attrs.define
class DemoResult:
    warehouse: str
    table: str
    committed_changes: int = 0
    changes_read: int = 0
    uncommitted_records: int = 0
    normalized_matches_table: bool = False
    report: VerifyReport | None = None


def demo_options(log_system: str, kafka_bootstrap: str | None, pulsar_url: str | None,
                 log_path: str | None = None) -> dict[str, str]:
    options = {"log.system": log_system}
    if log_path:
        options["filesystem.path"] = log_path
    if kafka_bootstrap:
        options["kafka.bootstrap.servers"] = kafka_bootstrap
    if pulsar_url:
        options["pulsar.service-url"] = pulsar_url
    return options


def next_changes(
    rng: random.Random, batch: int, rows: int, live: dict[int, dict[str, Any]]
) -> list[tuple[str, dict[str, Any]]]:
    """Inserts of new orders, updates of some live ones, deletes of a few; ``live`` (the
    rows the table holds) is brought up to date with them."""
    changes: list[tuple[str, dict[str, Any]]] = []
    for i in range(rows):
        order_id = batch * rows + i
        row = {"order_id": order_id, "customer": f"c{rng.randrange(50)}", "amount": round(rng.uniform(1, 500), 2),
               "status": "new"}
        changes.append(("+I", row))
    existing = sorted(live)
    for order_id in rng.sample(existing, min(len(existing), rows // 4)):
        old = live[order_id]
        changes.append(("-U", old))
        changes.append(("+U", {**old, "status": "paid", "amount": round(old["amount"] * 1.1, 2)}))
    for order_id in rng.sample(existing, min(len(existing), rows // 10)):
        if all(c[1]["order_id"] != order_id for c in changes[rows:]):
            changes.append(("-D", live[order_id]))
    for kind, changed in changes:
        if kind in ("+I", "+U"):
            live[changed["order_id"]] = changed
        elif kind == "-D":
            live.pop(changed["order_id"], None)
    return changes


def run_demo(
    warehouse: str | None = None,
    options: dict[str, str] | None = None,
    batches: int = 5,
    rows: int = 200,
    say: Callable[[str], None] = print,
    seed: int = 7,
) -> DemoResult:
    identifier = f"demo.orders_{int(time.time() * 1000)}"
    # An empty or unsupported warehouse is an error (create_table says why), not a temporary one.
    table = create_table(tempfile.mkdtemp(prefix="tablelog-demo-") if warehouse is None else warehouse,
                         identifier, SCHEMA, primary_key=["order_id"], bucket=2,
                         options=options or {"log.system": "filesystem"})
    warehouse = table.warehouse.path
    result = DemoResult(warehouse, identifier)
    say(f"table {identifier} in {warehouse}: log.system={table.options.log_system}, "
        f"topic {table.topic!r}, {table.log_partitions} partitions")

    seen: list[Change] = []
    stop = threading.Event()
    reader_error: list[BaseException] = []

    def follow() -> None:
        try:
            with table.reader(consistency="transactional") as reader:
                while not stop.is_set():
                    for change in reader.poll(timeout_s=0.05):
                        seen.append(change)
                        if len(seen) <= 8 or len(seen) % 250 == 0:
                            say(f"  read #{len(seen):>5} (snapshot {change.snapshot_id}) {change.kind.value} {change.row}")
        except BaseException as err:  # surfaced after the writer is done
            reader_error.append(err)

    follower = threading.Thread(target=follow, name="tablelog-demo-reader", daemon=True)
    follower.start()
    rng = random.Random(seed)
    live: dict[int, dict[str, Any]] = {}
    with table.writer("demo-writer") as writer:
        for batch in range(batches):
            changes = next_changes(rng, batch, rows, live)
            if batch == 1:
                result.uncommitted_records += _failed_attempt(table, writer.commit_identifier, changes)
                say(f"batch {batch}: an attempt produced {len(changes)} records and died before committing "
                    "(transactional readers will never see them)")
            writer.write(changes)
            commit = writer.commit()
            result.committed_changes += commit.records
            say(f"batch {batch}: committed snapshot {commit.snapshot_id}: {commit.rows} rows, "
                f"{commit.records} log records; reader has {len(seen)} changes")
    deadline = time.monotonic() + 30
    while len(seen) < result.committed_changes and time.monotonic() < deadline and not reader_error:
        time.sleep(0.05)
    stop.set()
    follower.join(timeout=10)
    if reader_error:
        raise reader_error[0]
    result.changes_read = len(seen)
    say(f"transactional reader: {result.changes_read} changes read, {result.committed_changes} committed")

    normalizer = Normalizer(table.primary_key)
    with table.reader(consistency="eventual", scan_mode="earliest") as eventual:
        raw = eventual.read_all(idle_timeout_s=0.5)
    normalizer.apply(raw)
    table_rows = {r["order_id"]: r for r in table.rows().to_pylist()}
    result.normalized_matches_table = {r["order_id"]: dict(r) for r in normalizer.rows()} == table_rows
    say(f"eventual reader: {len(raw)} records (duplicates included); normalized to {len(normalizer.state)} rows, "
        f"{'equal to' if result.normalized_matches_table else 'DIFFERENT from'} the table's {len(table_rows)} rows")
    result.report = verify(table)
    say(result.report.summary())
    return result


def _failed_attempt(table: Table, commit_identifier: int, changes: list[tuple[str, dict[str, Any]]]) -> int:
    """A write attempt that produces to the log and dies without a receipt."""
    task = table.write_task("demo-writer", commit_identifier, task="doomed")
    task.write(changes)
    receipt = task.finish()  # the records are durable in the log...
    del receipt  # ...but the receipt never reaches the committer
    return len(changes)
