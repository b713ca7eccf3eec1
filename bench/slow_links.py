"""Commits and a transactional reader across separate hosts over slow links:
``python -m bench.slow_links [--commits N] [--rows R] [--rounds K] [--links clean,delay,loss,rate]``
(root: the hosts are network namespaces, :mod:`tablelog.testing.hosts`).

Hosts ``s3`` (SeaweedFS), ``broker`` (Tansu), ``writer`` and ``reader``. The writer and
the reader reach the store and the broker only through TCP proxies on the bridge
(:mod:`tablelog.testing.fault_proxy`; the broker advertises its proxy), so that each link
condition applies to every connection they make:

- ``clean``: the proxies forward at once;
- ``delay``: every chunk 100 ms late, each way;
- ``loss``: 5 % of the chunks lost, each costing TCP's retransmission timeout (200 ms,
  doubled for a loss in a row);
- ``rate``: a 10 Mbit/s token bucket on the writer's and the reader's links.

Per condition and round: the writer commits N times R rows (a write task, its commit),
the reader follows from the start. Measured: the commits' p50/p99 seconds and the rows
per second of the whole run, and the lag from a commit's end to the reader's last
record of it (p50/p99). Counted: every committed row read once, the table holding them
all, no commit twice; a round that loses or repeats one fails the run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

import tablelog
from tablelog.testing.fault_proxy import TcpProxy
from tablelog.testing.hosts import Network
from tablelog.testing.kafka_server import tansu_broker
from tablelog.testing.processes import free_port
from tablelog.testing.s3_server import seaweedfs

SCHEMA = pa.schema([("id", pa.int64()), ("payload", pa.string())])
LINKS = ("clean", "delay", "loss", "rate")

WRITER = """
import json, sys, time
import tablelog
from tablelog.testing.processes import child_config
config = child_config()
table = tablelog.open_table(config["warehouse"], "db.t", config["options"])
rows = config["rows"]
for identifier in range(1, config["commits"] + 1):
    began = time.time()
    task = table.write_task("writer", identifier)
    task.write([{"id": identifier * rows + i, "payload": "x" * 80} for i in range(rows)])
    result = table.commit("writer", identifier, [task.finish()])
    print(json.dumps({"identifier": identifier, "began": began, "ended": time.time(),
                      "committed": result.committed}), flush=True)
"""
READER = """
import json, time
import tablelog
from tablelog.testing.processes import child_config
config = child_config()
table = tablelog.open_table(config["warehouse"], "db.t", config["options"])
expect, seen, deadline = config["commits"] * config["rows"], 0, time.monotonic() + config["deadline_s"]
with table.reader(consistency="transactional", scan_mode="earliest") as reader:
    while seen < expect and time.monotonic() < deadline:
        changes = reader.poll(timeout_s=0.2)
        if changes:
            seen += len(changes)
            print(json.dumps({"at": time.time(), "ids": [c.row["id"] for c in changes]}), flush=True)
"""


@contextlib.contextmanager
def rig(work: Path) -> Iterator[dict[str, Any]]:
    """The hosts, the servers and a proxy in front of each; yields what a round needs."""
    with Network(["s3", "broker", "writer", "reader"]) as net:
        s3_host = net["s3"]
        with seaweedfs(work / "s3", address=s3_host.address, launch=s3_host.popen) as s3:
            s3.client().put_object(Bucket=s3.bucket, Key="warm-up", Body=b"x")
            store_port = int(s3.endpoint.rsplit(":", 1)[1])
            with TcpProxy(store_port, upstream_host=s3_host.address, listen_host=net.controller_address) as store, \
                    _broker_behind_proxy(work, net) as (kafka, bootstrap):
                yield {"net": net, "s3": s3, "store": store, "kafka": kafka, "bootstrap": bootstrap}


@contextlib.contextmanager
def _broker_behind_proxy(work: Path, net: Network) -> Iterator[tuple[TcpProxy, str]]:
    """Tansu on host ``broker``, telling its clients the address of a proxy in front of it."""
    broker, port = net["broker"], free_port()
    with TcpProxy(port, upstream_host=broker.address, listen_host=net.controller_address) as proxy, \
            tansu_broker(work / "tansu", address=broker.address, launch=broker.popen,
                         advertised_address=net.controller_address, advertised_port=proxy.port, port=port):
        yield proxy, proxy.address


def set_link(parts: dict[str, Any], link: str) -> None:
    net: Network = parts["net"]
    for proxy in (parts["store"], parts["kafka"]):
        proxy.impair(**({"delay_s": 0.1} if link == "delay" else {"loss": 0.05, "seed": 30} if link == "loss" else {}))
    for name in ("writer", "reader"):
        if link == "rate":
            net[name].limit_rate("10mbit")
        else:
            net[name].unlimit_rate()


def one_round(parts: dict[str, Any], commits: int, rows: int) -> dict[str, Any]:
    s3, net = parts["s3"], parts["net"]
    warehouse = s3.url(f"slow-{uuid.uuid4().hex[:8]}")
    direct = {**s3.tablelog_options(), "log.system": "kafka", "kafka.bootstrap.servers": parts["bootstrap"],
              "write-only": "true"}
    tablelog.create_table(warehouse, "db.t", SCHEMA, primary_key=["id"], bucket=2, options=direct)
    options = {**direct, "s3.endpoint": f"http://{net.controller_address}:{parts['store'].port}"}
    config = {"warehouse": warehouse, "options": options, "commits": commits, "rows": rows, "deadline_s": 600}
    reader = net["reader"].start_python(READER, config, stdout=subprocess.PIPE, text=True)
    began = time.time()
    writer = net["writer"].start_python(WRITER, config, stdout=subprocess.PIPE, text=True)
    written = [json.loads(line) for line in writer.communicate(timeout=900)[0].splitlines()]
    took = time.time() - began
    read = [json.loads(line) for line in reader.communicate(timeout=900)[0].splitlines()]
    if writer.returncode or reader.returncode:
        raise RuntimeError(f"writer exited {writer.returncode}, reader {reader.returncode}")
    _count(warehouse, s3, written, read, commits, rows)
    arrived = {i: poll["at"] for poll in read for i in poll["ids"]}
    lags = [max(arrived[c["identifier"] * rows + i] for i in range(rows)) - c["ended"] for c in written]
    seconds = [c["ended"] - c["began"] for c in written]
    return {"commit_p50_s": statistics.median(seconds), "commit_p99_s": _p99(seconds),
            "rows_per_s": commits * rows / took, "lag_p50_s": statistics.median(lags), "lag_p99_s": _p99(lags)}


def _count(warehouse: str, s3: Any, written: list[dict[str, Any]], read: list[dict[str, Any]], commits: int,
           rows: int) -> None:
    """Every row committed once, read once, in the table once: else the run fails."""
    expected = Counter(range(rows, (commits + 1) * rows))
    if [c["identifier"] for c in written if c["committed"]] != list(range(1, commits + 1)):
        raise AssertionError(f"commits lost or repeated: {written}")
    got = Counter(i for poll in read for i in poll["ids"])
    if got != expected:
        raise AssertionError(f"the reader read {sum(got.values())} records, {len(got)} distinct, of {commits * rows}")
    table = tablelog.open_table(warehouse, "db.t", s3.tablelog_options())
    if Counter(table.rows().column("id").to_pylist()) != expected:
        raise AssertionError("the table does not hold every committed row once")


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench.slow_links", description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=10)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--links", default=",".join(LINKS))
    args = parser.parse_args(argv)
    links = args.links.split(",")
    if unknown := set(links) - set(LINKS):
        parser.error(f"unknown link condition(s) {sorted(unknown)}; known: {', '.join(LINKS)}")
    results: dict[str, list[dict[str, Any]]] = {link: [] for link in links}
    with tempfile.TemporaryDirectory(prefix="bench-slow-links-") as work, rig(Path(work)) as parts:
        for round_ in range(args.rounds):
            for link in links[round_ % len(links):] + links[:round_ % len(links)]:  # rotated each round
                set_link(parts, link)
                results[link].append(one_round(parts, args.commits, args.rows))
                print(f"round {round_ + 1} {link}: {results[link][-1]}", file=sys.stderr, flush=True)
    summary = {link: {key: (statistics.median(r[key] for r in runs), min(r[key] for r in runs),
                            max(r[key] for r in runs)) for key in runs[0]} for link, runs in results.items()}
    for link, figures in summary.items():
        print(f"{link}: " + "; ".join(f"{key} {med:.3f} ({low:.3f}-{high:.3f})"
                                      for key, (med, low, high) in figures.items()))
    return {"args": vars(args), "summary": summary, "runs": results}


if __name__ == "__main__":
    main()
