"""A transactional reader cut off from the broker in the middle of its polls while a
committer on another host goes on committing; the partition heals. Every committed
record is read once."""

from __future__ import annotations

import time
from collections import Counter

from .committers import ROWS, Program, commits, committer, final_outcomes, new_table
from .conftest import Cluster

COMMITS = 12
#: Longer than the reader's wait for a broker (kafka.socket.connection.setup.timeout.ms,
#: 5 s by default): the cut must show as an error, not as a hang.
CUT_S = 10.0


def test_a_reader_cut_off_from_the_broker_mid_poll_reads_every_committed_record_once_after_the_heal(
        cluster: Cluster) -> None:
    table, warehouse, options = new_table(cluster)
    net = cluster.network
    writes = committer(net["b"], {"warehouse": warehouse, "table": "db.t", "who": "B", "options": options,
                                     "commits": commits("driver", range(1, COMMITS + 1)), "pause_s": 0.5})
    reader = Program(net["a"], "reader", {"warehouse": warehouse, "table": "db.t", "options": options,
                                          "expect": COMMITS * ROWS, "deadline_s": 120})
    reader.wait_for(lambda line: len(line.get("ids", [])) > 0)
    net.partition([net["a"]], [net["broker"]])
    cut_at = time.monotonic()
    time.sleep(CUT_S)
    net.heal()
    outcomes = final_outcomes(writes.finish())
    lines = reader.finish(timeout_s=150)

    assert all(o["outcome"] == "committed" for o in outcomes.values())
    read = Counter(i for line in lines for i in line.get("ids", []))
    assert read == Counter(range(ROWS, (COMMITS + 1) * ROWS))  # each committed record once
    # Cut off, a poll fails in bounded time naming what it could not reach; the loop goes on.
    errors = [line["error"] for line in lines if "error" in line]
    assert errors and all(f"cannot reach the Kafka brokers at {cluster.bootstrap}" in e for e in errors), errors
    assert time.monotonic() - cut_at > CUT_S
