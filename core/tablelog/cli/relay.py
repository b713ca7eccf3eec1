"""`tablelog relay`: publish other writers' commits into the table's log, and keep doing so.

SIGTERM or Ctrl-C (SIGINT) stop the relay after the step under way (produce, then
commit), at once while it waits for new snapshots; a second one during a step stops at
once too. A step cut short (that, or SIGKILL) loses nothing and repeats nothing: the
next run finds what it had produced (:mod:`tablelog.relay`).
"""

from __future__ import annotations

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
from tablelog.cli.stop_signals import stop_on_signals
from tablelog.relay import Relay
from tablelog.table import internals
from tablelog.tables import open_table


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
    with stop_on_signals(second_interrupts=True) as stop, \
            Relay(internals(t), from_snapshot=from_snapshot, max_snapshots=max_snapshots,
                  consumer_id=consumer_id) as relay:
        if not once:
            console.print(f"relaying {t.identifier} (Ctrl-C or SIGTERM stops)", markup=False)
        try:
            while not stop.is_set():
                step = relay.step()
                if step.relayed:
                    console.print(step.summary(), markup=False)
                    snapshots += len(step.relayed)
                    changes += step.changes
                    continue
                if once:
                    break
                stop.wait(interval)
        except KeyboardInterrupt:
            err_console.print("interrupted during a step: the next run finds what it produced, and commits it once",
                              markup=False)
    console.print(f"{t.identifier}: {snapshots} foreign snapshot(s) relayed, {changes} change(s)", markup=False)
