"""The separate-hosts rig itself (:mod:`tablelog.testing.hosts`): hosts reach each other
by address, and each fault does what it says and undoes cleanly."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tablelog.testing import hosts as rig
from tablelog.testing.fault_proxy import TcpProxy
from tablelog.testing.hosts import Host, HostsUnavailable, Network

ECHO = Path(__file__).with_name("echo_server.py")
PORT = 9000
#: What one connection attempt reports, run on a host (or here): "ok", "silence" or the error.
PROBE = """
import socket, sys
try:
    with socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=float(sys.argv[3])) as c:
        c.sendall(b"ping"); print("ok" if c.recv(4) == b"ping" else "garbled")
except TimeoutError:
    print("silence")
except OSError as e:
    print(type(e).__name__)
"""


def reach(source: Host | None, target: Host | str, timeout_s: float = 1.5, port: int = PORT) -> str:
    """What connecting from ``source`` (None: the test process) to ``target`` (a host or
    an address) on ``port`` gives."""
    address = target if isinstance(target, str) else target.address
    args = [sys.executable, "-c", PROBE, address, str(port), str(timeout_s)]
    done = subprocess.run(source.command(args) if source else args, capture_output=True, text=True, timeout=30)
    return done.stdout.strip() or done.stderr.strip()[-300:]


def echo_on(host: Host) -> subprocess.Popen[bytes]:
    server = host.popen([sys.executable, str(ECHO), str(PORT)])
    deadline = time.monotonic() + 10
    while reach(None, host, 0.5) != "ok":
        assert time.monotonic() < deadline, "the echo server did not start"
        time.sleep(0.05)
    return server


def test_hosts_reach_each_other_and_the_test_process_by_address(hosts: Callable[..., Network]) -> None:
    net = hosts("a", "b")
    echo_on(net["b"])
    assert reach(net["a"], net["b"]) == "ok"
    assert reach(None, net["b"]) == "ok"
    assert len({net["a"].address, net["b"].address, net.controller_address}) == 3


def test_a_host_has_its_own_network_stack(hosts: Callable[..., Network]) -> None:
    net = hosts("a", "b")
    echo_on(net["b"])
    assert reach(net["a"], net["b"], port=PORT + 1) == "ConnectionRefusedError"
    # b's server listens on every address of b's stack: a's loopback is not one of them.
    assert reach(net["a"], "127.0.0.1") == "ConnectionRefusedError"


def test_a_partition_is_silence_both_ways_and_spares_other_hosts(hosts: Callable[..., Network]) -> None:
    net = hosts("a", "b", "c")
    for host in (net["a"], net["b"]):
        echo_on(host)
    net.partition([net["a"]], [net["b"]])
    assert reach(net["a"], net["b"]) == "silence"
    assert reach(net["b"], net["a"]) == "silence"
    assert reach(net["c"], net["b"]) == "ok"
    assert reach(net["c"], net["a"]) == "ok"


def test_an_open_connection_goes_quiet_in_a_partition_and_works_after_it_heals(
        hosts: Callable[..., Network]) -> None:
    net = hosts("a", "b")
    echo_on(net["b"])
    net.partition([net["a"]], [net["b"]])
    net.heal()
    assert reach(net["a"], net["b"]) == "ok"
    net.partition([net["a"]], [net["b"]])
    net.partition([net["a"]], [net["b"]])  # twice is once
    net.heal()
    assert reach(net["a"], net["b"]) == "ok"


def test_a_host_partitioned_from_the_test_process_is_silent_to_it(hosts: Callable[..., Network]) -> None:
    net = hosts("a")
    echo_on(net["a"])
    net.partition([net["a"]], [net.controller])
    assert reach(None, net["a"]) == "silence"
    net.heal()
    assert reach(None, net["a"]) == "ok"


def test_a_link_down_cuts_the_host_from_everyone_until_it_is_up(hosts: Callable[..., Network]) -> None:
    net = hosts("a", "b")
    echo_on(net["b"])
    net["b"].link_down()
    assert reach(net["a"], net["b"]) == "silence"
    assert reach(None, net["b"]) == "silence"
    net["b"].link_up()
    deadline = time.monotonic() + 10
    while reach(net["a"], net["b"]) != "ok":
        assert time.monotonic() < deadline, "the link did not come back"


#: Counts the bytes of one connection on port 9001: prints the count and the seconds
#: from the connection to its end.
COUNT = """
import socket, time
server = socket.create_server(("0.0.0.0", 9001))
client, _ = server.accept()
began, total = time.monotonic(), 0
while data := client.recv(65536):
    total += len(data)
print(total, time.monotonic() - began)
"""
#: Sends argv[2] bytes to argv[1]:9001 once it listens.
SEND = """
import socket, sys, time
for _ in range(200):
    try:
        client = socket.create_connection((sys.argv[1], 9001))
        break
    except OSError:
        time.sleep(0.05)
client.sendall(b"x" * int(sys.argv[2]))
client.close()
"""


def test_a_rate_limit_slows_a_transfer_to_about_its_rate(hosts: Callable[..., Network]) -> None:
    net = hosts("a", "b")
    counter = net["b"].popen([sys.executable, "-c", COUNT], stdout=subprocess.PIPE, text=True)
    net["a"].limit_rate("2mbit")
    size = 500_000  # 4 Mbit: about 2 s at 2 Mbit/s
    subprocess.run(net["a"].command([sys.executable, "-c", SEND, net["b"].address, str(size)]),
                   capture_output=True, timeout=60, check=True)
    received, seconds = counter.communicate(timeout=30)[0].split()
    assert int(received) == size
    assert 1.2 < float(seconds) < 6, seconds
    net["a"].unlimit_rate()


def test_a_paused_process_is_silent_and_carries_on_when_resumed(hosts: Callable[..., Network]) -> None:
    net = hosts("a", "b")
    server = echo_on(net["b"])
    net["b"].pause(server)
    assert reach(net["a"], net["b"]) == "silence"
    net["b"].resume(server)
    assert reach(net["a"], net["b"]) == "ok"
    assert server.poll() is None


def test_a_killed_host_runs_nothing(hosts: Callable[..., Network]) -> None:
    net = hosts("a", "b")
    server = echo_on(net["b"])
    net["b"].kill()
    assert server.poll() is not None
    assert reach(net["a"], net["b"]) == "ConnectionRefusedError"


def test_closing_the_network_removes_every_namespace_link_and_process(hosts: Callable[..., Network]) -> None:
    net = hosts("a", "b")
    server = echo_on(net["a"])
    names = [h.namespace for h in net.hosts.values()]
    net.partition([net["a"]], [net["b"]])
    net.close()
    assert server.poll() is not None
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not any(name in listed for name in names)
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert net.bridge not in links


def test_a_proxy_between_hosts_delays_and_stalls_one_way(hosts: Callable[..., Network]) -> None:
    net = hosts("a", "b")
    echo_on(net["b"])
    with TcpProxy(PORT, upstream_host=net["b"].address, listen_host=net.controller_address) as proxy:
        through = net.controller_address
        assert reach(net["a"], through, port=proxy.port) == "ok"
        proxy.impair(0.3)
        began = time.monotonic()
        assert reach(net["a"], through, port=proxy.port) == "ok"
        assert time.monotonic() - began > 0.6  # a chunk each way, each 0.3 s late
        proxy.impair()
        proxy.pause("down")
        assert reach(net["a"], through, port=proxy.port, timeout_s=1.0) == "silence"
        proxy.resume()
        assert reach(net["a"], through, port=proxy.port) == "ok"


def test_without_root_the_rig_says_what_it_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(HostsUnavailable, match="need root"):
        rig.check_capabilities()


def test_without_iproute2_the_rig_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rig.shutil, "which", lambda tool: None)
    with pytest.raises(HostsUnavailable, match="apt-get install iproute2"):
        rig.check_capabilities()
