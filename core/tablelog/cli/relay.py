"""`tablelog relay`: publish other writers' commits into the table's log, and keep doing so.

SIGTERM or Ctrl-C (SIGINT) stop the relay after the step under way (produce, then
commit), at once while it waits for new snapshots; a second one during a step stops at
once too. A step cut short (that, or SIGKILL) loses nothing and repeats nothing: the
next run finds what it had produced (:mod:`tablelog.relay`).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

import click

from tablelog.cli.common import (
    console,
    err_console,
    friendly_errors,
    options_option,
    parse_options,
    table_argument,
    warehouse_option,
)
from tablelog.relay import Relay
from tablelog.table import internals
from tablelog.tables import open_table

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class _StopRequests:
    """SIGTERM and SIGINT as a request to stop once the step under way is committed; a
    second one as an interrupt."""

    def __init__(self) -> None:
        self.requested = threading.Event()

    def __call__(self, signum: int, frame: Any) -> None:
        if self.requested.is_set():
            raise KeyboardInterrupt
        self.requested.set()


@contextlib.contextmanager
def _stop_on_signal() -> Iterator[_StopRequests]:
    stops = _StopRequests()
    try:
        previous = {s: signal.signal(s, stops) for s in _SIGNALS}
    except ValueError:  # not the main thread (an embedding application): leave the signals alone
        yield stops
        return
    try:
        yield stops
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


@click.command("relay")
@warehouse_option
@table_argument
@click.option("--once", is_flag=True, help="Relay what is there, then stop.")
@click.option("--interval", type=click.FloatRange(0.05), default=1.0, show_default=True,
              help="Seconds between looks for new snapshots while there is nothing to relay.")
@click.option("--from-snapshot", type=click.IntRange(1), default=None, metavar="ID",
              help="The first snapshot to relay when the table has no relay commit yet (default: after the "
                   "first kept snapshot with a log-commit record), or to skip snapshots that expired unpublished.")
@click.option("--max-snapshots", type=click.IntRange(1), default=100, show_default=True,
              help="The most foreign snapshots one relay commit carries.")
@click.option("--consumer-id", default=None, metavar="ID",
              help="A Paimon consumer kept at the snapshots the relay still needs: snapshot expiry keeps them "
                   "while the relay is behind or stopped (until consumer.expiration-time).")
@options_option
@friendly_errors
def relay_command(warehouse: str, table: str, once: bool, interval: float, from_snapshot: int | None,
                  max_snapshots: int, consumer_id: str | None, raw_options: tuple[str, ...]) -> None:
    """Publish into the table's log the changes of snapshots other writers committed
    (pypaimon directly, a Flink or Spark Paimon job, a procedure), so that consumers that
    know nothing of tablelog (a plain Kafka consumer, Flink's debezium-json) see them.

    Each foreign snapshot's changes go to the log once, in commit order, followed by a
    snapshot of the relay's own recording them; a restarted relay goes on where it
    stopped. One line per relay commit; SIGTERM or Ctrl-C stop after the step under way.
    An error (the log unreachable: exit 3) stops the relay: run it under a supervisor that
    starts it again. Run one relay per table.
    """
    t = open_table(warehouse, table, parse_options(raw_options))
    snapshots = changes = 0
    with _stop_on_signal() as stops, Relay(internals(t), from_snapshot=from_snapshot, max_snapshots=max_snapshots,
                                           consumer_id=consumer_id) as relay:
        if not once:
            console.print(f"relaying {t.identifier} (Ctrl-C or SIGTERM stops)", markup=False)
        try:
            while not stops.requested.is_set():
                step = relay.step()
                if step.relayed:
                    console.print(step.summary(), markup=False)
                    snapshots += len(step.relayed)
                    changes += step.changes
                    continue
                if once:
                    break
                stops.requested.wait(interval)
        except KeyboardInterrupt:
            err_console.print("interrupted during a step: the next run finds what it produced, and commits it once",
                              markup=False)
    console.print(f"{t.identifier}: {snapshots} foreign snapshot(s) relayed, {changes} change(s)", markup=False)
