"""The scenarios across hosts, as functions of their fault timing: the CI tests run each
once at fixed points, ``test_fault_matrix.py`` (``tox -e faults``) many times at random
ones. Each counts what it wrote and read (:func:`~.committers.check_exactly_once`, or the
reader's records) before it returns what its programs answered."""

from __future__ import annotations

import contextlib
import random
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tablelog.testing.kafka_server import TansuBroker, s3_storage
from tablelog.testing.processes import free_port
from tablelog.testing.pulsar_server import PulsarBroker, pulsar_lite_binary
from tablelog.testing.s3_faults import Rule, S3FaultProxy

from .committers import (
    ROWS,
    Program,
    check_answers,
    check_exactly_once,
    commits,
    committer,
    final_outcomes,
    makers,
    new_table,
)
from .conftest import Cluster

OFFSETS = {"driver": 0, "other": 100_000}
LAST = 6  # the driver commits identifiers 1..LAST
Outcomes = dict[tuple[str, int], dict[str, Any]]


def _arm(proxy: S3FaultProxy, phase: str, cut_at: int) -> Rule:
    """The rule that holds the cut-off committer's request at ``phase`` of the snapshot
    put of identifier ``cut_at`` (its snapshot id: the table has no other commits)."""
    put = f"/snapshot/snapshot-{cut_at}"
    if phase == "before":
        return proxy.hang("PUT", put)
    if phase == "during":
        return proxy.apply_then_hang("PUT", put)
    return proxy.hang("PUT", "/snapshot/LATEST")  # after: the next request, the hint


def wait_fired(rule: Rule, proxy: S3FaultProxy, timeout_s: float = 60) -> None:
    """Until ``rule`` has taken a request (the proxy's last requests in the failure)."""
    deadline = time.monotonic() + timeout_s
    while not rule.fired:
        assert time.monotonic() < deadline, proxy.requests[-20:]
        time.sleep(0.01)


def cut_off_at_snapshot_put(cluster: Cluster, phase: str, cut_at: int, *, heal_after_s: float = 0.0,
                            pause: bool = False) -> tuple[Outcomes, Outcomes, dict[int, str]]:
    """Committer A (host a, through the S3 fault proxy) commits the driver's identifiers;
    at ``phase`` of identifier ``cut_at``'s snapshot put it is cut off from S3 (partitioned,
    or with ``pause`` frozen: a zombie), and committer B (host b: the restarted driver)
    commits ``cut_at..LAST`` of the driver and two of another writer; A is healed (or
    resumed) ``heal_after_s`` after B has finished. Checks each identifier committed once
    and every answer true (:func:`~.committers.check_answers`); returns (A's, B's) outcomes
    and who made each of the driver's commits."""
    table, warehouse, options = new_table(cluster)
    net = cluster.network
    with S3FaultProxy(cluster.s3.endpoint, listen_host=net.controller_address) as proxy:
        first = committer(net["a"], {"warehouse": warehouse, "table": "db.t", "who": "A", "offsets": OFFSETS,
                                     "options": {**options, "s3.endpoint": proxy.endpoint},
                                     "commits": commits("driver", range(1, LAST + 1)), "retry_unknown_s": 0.5})
        if cut_at > 1:
            first.wait_for(lambda line: line["identifier"] == cut_at - 1)
        wait_fired(_arm(proxy, phase, cut_at), proxy)
        if pause:
            net["a"].pause(first.process)
        else:
            net.partition([net["a"]], [net.controller, net["s3"]])
        proxy.clear()  # the held request's connection closes: the cut-off committer does not hear it
        restarted = committer(net["b"], {"warehouse": warehouse, "table": "db.t", "who": "B", "offsets": OFFSETS,
                                         "options": options,
                                         "commits": commits("driver", range(cut_at, LAST + 1)) + commits("other", [1, 2])})
        second = final_outcomes(restarted.finish())
        time.sleep(heal_after_s)
        if pause:
            net["a"].resume(first.process)
        else:
            net.heal()
        cut_off = final_outcomes(first.finish())

    for outcomes in (cut_off, second):
        assert all(line["outcome"] in ("committed", "already") for line in outcomes.values()), outcomes
    expected = [*(("driver", i) for i in range(1, LAST + 1)), ("other", 1), ("other", 2)]
    check_exactly_once(table, cluster, warehouse, expected, OFFSETS)
    made_by = makers(table, "driver", range(1, LAST + 1), OFFSETS)
    check_answers({"A": cut_off, "B": second}, made_by, "driver")
    return cut_off, second, made_by


def random_cut(cluster: Cluster, seed: int) -> str:
    """:func:`cut_off_at_snapshot_put` at a fault chosen from ``seed``; what was chosen."""
    rng = random.Random(seed)
    phase, cut_at = rng.choice(["before", "during", "after"]), rng.randint(1, LAST - 1)
    pause, heal_after_s = rng.random() < 0.5, rng.choice([0.0, rng.uniform(0, 3.0)])
    chosen = f"{'pause' if pause else 'partition'} {phase} snapshot put {cut_at}, healed {heal_after_s:.1f} s after"
    cut_off_at_snapshot_put(cluster, phase, cut_at, heal_after_s=heal_after_s, pause=pause)
    return chosen


def reader_cut_off_from_broker(cluster: Cluster, *, cut_after_records: int, cut_s: float, commits_made: int = 12,
                               pulsar: Path | None = None) -> list[dict[str, Any]]:
    """A transactional reader (host a) follows a table another host commits to (every
    0.5 s); once it has read ``cut_after_records`` records it is partitioned from the
    broker for ``cut_s``. The log is the cluster's Kafka broker, or with ``pulsar`` (a
    work directory) a pulsar-lite broker on host ``broker``. Checks every committed record
    read once, and that every failed poll named the broker; returns the reader's lines."""
    with contextlib.ExitStack() as stack:
        quick: dict[str, str] = {}
        if pulsar is None:
            log, named = None, f"cannot reach the Kafka brokers at {cluster.bootstrap}"
        else:
            broker = _RestartableBroker(cluster, pulsar, "pulsar")
            stack.callback(broker.kill)
            # The client's round trips (a reader's creation, a look at what is available)
            # wait up to its operation time-out: short for the hosts, so that the cut shows
            # as an error; the table's creation here, on a broker just started, keeps the
            # default.
            log, quick = broker.options, {"pulsar.operation-timeout-seconds": "3"}
            named = broker.options["pulsar.service-url"]
        table, warehouse, options = new_table(cluster, log, **quick)
        net = cluster.network
        writes = committer(net["b"], {"warehouse": warehouse, "table": "db.t", "who": "B", "options": options,
                                      "commits": commits("driver", range(1, commits_made + 1)), "pause_s": 0.5})
        reader = Program(net["a"], "reader", {"warehouse": warehouse, "table": "db.t", "options": options,
                                              "expect": commits_made * ROWS, "deadline_s": 120})
        reader.wait_for(lambda line: sum(len(seen.get("ids", [])) for seen in reader.lines) >= cut_after_records)
        net.partition([net["a"]], [net["broker"]])
        time.sleep(cut_s)
        net.heal()
        outcomes = final_outcomes(writes.finish())
        lines = reader.finish(timeout_s=150)
    assert all(o["outcome"] == "committed" for o in outcomes.values())
    read = Counter(i for line in lines for i in line.get("ids", []))
    assert read == Counter(range(ROWS, (commits_made + 1) * ROWS))  # each committed record once
    assert all(named in line["error"] for line in lines if "error" in line), lines
    return lines


#: What the store does wrong, each a few times over a committer's run (by its name).
STORE_FAULTS: dict[str, Callable[[S3FaultProxy], Rule]] = {
    # pypaimon-rust's writer makes one attempt per request: its write attempt fails and is made again.
    "503 on data files": lambda proxy: proxy.fail("PUT", "/bucket-", times=3),
    "503 on the snapshot put": lambda proxy: proxy.fail("PUT", "/snapshot/snapshot-", times=2),
    "503 on reads": lambda proxy: proxy.fail("GET", "/t-", times=3),
    "a snapshot put applied and never answered": lambda proxy: proxy.apply_then_hang("PUT", "/snapshot/snapshot-3"),
    "a snapshot put applied and its connection reset": lambda proxy: proxy.apply_then_drop(
        "PUT", "/snapshot/snapshot-", times=2),
}


def store_answers_errors(cluster: Cluster, fault: str, *, after_requests: int = 0) -> Outcomes:
    """A committer (host a) commits five identifiers through the S3 fault proxy, whose
    ``fault`` is armed once ``after_requests`` requests went through. Checks each committed
    once, each answer ``committed``; returns the outcomes."""
    table, warehouse, options = new_table(cluster, **{"s3.max-attempts": "4"})  # past three errors in a row
    with S3FaultProxy(cluster.s3.endpoint, listen_host=cluster.network.controller_address) as proxy:
        run = committer(cluster.network["a"], {"warehouse": warehouse, "table": "db.t", "who": "A",
                                               "options": {**options, "s3.endpoint": proxy.endpoint},
                                               "commits": commits("driver", range(1, 6)), "retry_unknown_s": 0.2})
        while len(proxy.requests) < after_requests and run.process.poll() is None:
            time.sleep(0.005)
        rule = STORE_FAULTS[fault](proxy)
        lines = run.finish()
    outcomes = final_outcomes(lines)
    assert sorted(outcomes) == [("driver", i) for i in range(1, 6)], (lines, proxy.broken)
    assert all(line["outcome"] == "committed" for line in outcomes.values()), (lines, proxy.broken)
    check_exactly_once(table, cluster, warehouse, [("driver", i) for i in range(1, 6)], {})
    assert rule.fired or after_requests, proxy.requests  # armed late, a fault may find no request left
    return outcomes


class _RestartableBroker:
    """The broker of one scenario on host ``broker``: ``kafka``, Tansu on memory storage (a
    restart loses every record); ``kafka-on-s3``, Tansu on its S3 storage engine in a bucket
    of the cluster's store (records survive); ``pulsar``, pulsar-lite on its data directory
    (records survive)."""

    def __init__(self, cluster: Cluster, workdir: Path, system: str) -> None:
        self.host, self.system = cluster.network["broker"], system
        port = free_port()
        storage: dict[str, Any] = {}  # TansuBroker's default: memory
        if system == "kafka-on-s3":
            storage["storage"], storage["environment"] = s3_storage(cluster.s3, f"tansu-{port}")
        self._tansu = TansuBroker(workdir / "tansu", port=port, address=self.host.address, launch=self.host.popen,
                                  **storage)
        self._pulsar = PulsarBroker(pulsar_lite_binary(), workdir / "pulsar", port,
                                    address=self.host.address, launch=self.host.popen)
        self.start()

    @property
    def options(self) -> dict[str, str]:
        if self.system == "pulsar":
            return {"log.system": "pulsar", "pulsar.service-url": self._pulsar.service_url}
        return {"log.system": "kafka", "kafka.bootstrap.servers": self._tansu.bootstrap}

    def start(self) -> None:
        if self.system == "pulsar":
            self._pulsar.start()
        else:
            self._tansu.start()

    def kill(self) -> None:
        self._tansu.kill()  # SIGKILL
        self._pulsar.kill()


def broker_restarted_mid_commit(cluster: Cluster, workdir: Path, system: str, *, after_commits: int,
                                delay_s: float, down_s: float, commits_made: int = 10) -> list[dict[str, Any]]:
    """A committer (host b) commits every 0.3 s to a table whose log (``system``: kafka,
    kafka-on-s3 or pulsar: :class:`_RestartableBroker`) is a broker of its own on host
    ``broker``, while a transactional reader (host a) follows it. ``delay_s`` after the
    committer's ``after_commits``-th answer the broker is killed (SIGKILL: whatever commit
    is under way, producing, flushing or putting its snapshot) and ``down_s`` later started
    again on its address: Tansu on memory empty (every record lost), Tansu on S3 and
    pulsar-lite on their data. Checks each identifier committed once and every committed
    record read once (those the log lost, from the table files); returns the reader's lines."""
    broker = _RestartableBroker(cluster, workdir, system)
    try:
        table, warehouse, options = new_table(cluster, broker.options, **{"log.flush-timeout-ms": "4000"})
        writes = committer(cluster.network["b"], {
            "warehouse": warehouse, "table": "db.t", "who": "B", "options": options, "pause_s": 0.3,
            "commits": commits("driver", range(1, commits_made + 1))})
        reader = Program(cluster.network["a"], "reader", {"warehouse": warehouse, "table": "db.t",
                                                          "options": options, "expect": commits_made * ROWS,
                                                          "deadline_s": 150})
        writes.wait_for(lambda _: sum(line["outcome"] == "committed" for line in writes.lines) >= after_commits)
        time.sleep(delay_s)
        broker.kill()
        time.sleep(down_s)
        broker.start()
        outcomes = final_outcomes(writes.finish(timeout_s=150))
        lines = reader.finish(timeout_s=180)
        assert sorted(outcomes) == [("driver", i) for i in range(1, commits_made + 1)], writes.lines
        assert all(o["outcome"] == "committed" for o in outcomes.values()), writes.lines
        read = Counter(i for line in lines for i in line.get("ids", []))
        assert read == Counter(range(ROWS, (commits_made + 1) * ROWS)), lines  # each committed record once
        check_exactly_once(table, cluster, warehouse, [("driver", i) for i in range(1, commits_made + 1)], {})
    finally:
        broker.kill()
    return lines


#: A write attempt cut off from the store fails within this (its first reads' request
#: timeouts, or ``s3.write-timeout``: 4 s in :func:`committer_cut_off_from_s3`).
WRITE_FAILS_WITHIN_S = 10.0


def committer_cut_off_from_s3(cluster: Cluster, *, after_commits: int, delay_s: float,
                              cut_s: float) -> list[dict[str, Any]]:
    """A committer (host a) commits identifiers 1..5 of a table of the default layout
    (thin files: pypaimon-rust's writer) every 0.5 s; ``delay_s`` after its
    ``after_commits``-th answer it is partitioned from S3 for ``cut_s``. Checks that every
    write attempt that failed did so within :data:`WRITE_FAILS_WITHIN_S`, that every answer
    is true (``committed``, or ``already`` after an ``unknown``) and each identifier
    committed once; returns the committer's lines."""
    table, warehouse, options = new_table(cluster, **{"s3.write-timeout": "4 s"})
    net = cluster.network
    run = committer(net["a"], {"warehouse": warehouse, "table": "db.t", "who": "A", "options": options,
                               "commits": commits("driver", range(1, 6)), "pause_s": 0.5, "write_attempts": 20,
                               "retry_unknown_s": 0.5})
    run.wait_for(lambda _: sum(line["outcome"] == "committed" for line in run.lines) >= after_commits)
    time.sleep(delay_s)
    net.partition([net["a"]], [net["s3"]])
    time.sleep(cut_s)
    net.heal()
    lines = run.finish(timeout_s=180)
    failures = [line for line in lines if line["outcome"] == "write failed"]
    assert all(line["seconds"] < WRITE_FAILS_WITHIN_S for line in failures), failures
    outcomes = final_outcomes(lines)
    assert sorted(outcomes) == [("driver", i) for i in range(1, 6)], lines
    check_answers({"A": outcomes}, makers(table, "driver", range(1, 6), {}), "driver")
    check_exactly_once(table, cluster, warehouse, [("driver", i) for i in range(1, 6)], {})
    return lines
