"""Separate hosts on one machine, and the network faults between them, for tests.

A host is a Linux network namespace with its own network stack and one address on a
private bridge (``ip netns``, a veth pair, a bridge: iproute2, as root). Servers and
clients started on a host (:meth:`Host.popen`, :meth:`Host.start_python`) reach the
others only by address, as on separate machines; the test process itself sits on the
bridge too (:attr:`Network.controller_address`) and reaches every host.

Faults, one call each:

- :meth:`Network.partition`: hosts of one set stop hearing hosts of the other, silently
  (packets dropped at the receiving host's input, as a failed switch drops them: a
  connection attempt times out, an open connection goes quiet), until :meth:`Network.heal`;
- :meth:`Host.link_down` / :meth:`Host.link_up`: the host's cable pulled (every peer, the
  test process too);
- :meth:`Host.limit_rate`: a token bucket on the host's link, both ways (``tc tbf``);
  delay and loss go through a user-space proxy (:mod:`tablelog.testing.fault_proxy`):
  this machine's kernel has no ``netem``;
- :meth:`Host.pause` / :meth:`Host.resume`: ``SIGSTOP``/``SIGCONT`` to one process or to
  every process of the host (a GC pause, a frozen VM);
- :meth:`Host.kill`: ``SIGKILL`` to every process of the host.

Everything a :class:`Network` made is removed when it closes, also when the test failed,
and namespaces left by a killed test run are removed by the next one. Without root or
without iproute2 :func:`check_capabilities` raises with what is missing: tests that need
hosts fail, they are never skipped.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import random
import shutil
import signal
import subprocess
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from tablelog.testing.processes import die_with_parent, python_command, send_config

#: Every namespace of this rig is named ``tlhost-<pid of its test process>-<network>-<host>``.
_PREFIX = "tlhost-"
#: The preference of the rules that drop a partitioned peer's packets, ahead of the
#: ``local`` table's rule (moved from 0 to :data:`_LOCAL_PREF` in every host).
_DROP_PREF = 10
_LOCAL_PREF = 100


class HostsUnavailable(RuntimeError):
    """This machine cannot run network-namespace hosts (what is missing is in the message)."""


def check_capabilities() -> None:
    """Raise :class:`HostsUnavailable` naming what is missing: root, ``ip`` and ``tc``
    (Debian/Ubuntu: ``apt-get install iproute2``)."""
    missing = [tool for tool in ("ip", "tc") if shutil.which(tool) is None]
    if missing:
        raise HostsUnavailable(f"separate hosts need {' and '.join(missing)} from iproute2: "
                               "apt-get install iproute2 (Debian, Ubuntu) or dnf install iproute-tc (Fedora)")
    if os.geteuid() != 0:
        raise HostsUnavailable("separate hosts are network namespaces and need root (ip netns add): "
                               f"run the tests as root (user id {os.geteuid()} here)")


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and done.returncode != 0:
        raise HostsUnavailable(f"ip {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
    return done


def _run(args: Sequence[str]) -> None:
    done = subprocess.run(list(args), capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise HostsUnavailable(f"{' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")


def _namespace_pids(namespace: str) -> list[int]:
    done = _ip("netns", "pids", namespace, check=False)
    return [int(pid) for pid in done.stdout.split()] if done.returncode == 0 else []


def _signal_all(namespace: str, signum: int) -> None:
    for pid in _namespace_pids(namespace):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)


class Host:
    """One network namespace on the bridge of a :class:`Network` (made by it)."""

    def __init__(self, name: str, namespace: str, address: str, outer_link: str) -> None:
        self.name = name
        self.namespace = namespace
        #: Its address on the bridge, where its servers listen and peers reach it.
        self.address = address
        self._outer = outer_link
        self._processes: list[subprocess.Popen[Any]] = []

    def __repr__(self) -> str:
        return f"Host({self.name!r}, {self.address})"

    # -- processes -----------------------------------------------------------------------

    def command(self, args: Sequence[str]) -> list[str]:
        """``args`` as run on this host."""
        return ["ip", "netns", "exec", self.namespace, *args]

    def popen(self, args: Sequence[str], **popen: Any) -> subprocess.Popen[Any]:
        """Start ``args`` on this host (``subprocess.Popen``'s keywords); killed when the
        test process dies, and when the network closes."""
        popen.setdefault("preexec_fn", die_with_parent)
        process = subprocess.Popen(self.command([str(a) for a in args]), **popen)
        self._processes.append(process)
        return process

    def start_python(self, program: str | Path, config: Mapping[str, Any], **popen: Any) -> subprocess.Popen[Any]:
        """:func:`tablelog.testing.processes.start_python` on this host: ``config`` on the
        child's standard input (it holds secrets), read there with ``child_config()``."""
        process = self.popen(python_command(program), stdin=subprocess.PIPE, **popen)
        send_config(process, config)
        return process

    def pause(self, process: subprocess.Popen[Any] | None = None) -> None:
        """Freeze ``process`` (else every process of the host): it keeps its sockets and
        its state, and runs on from where it was at :meth:`resume`."""
        if process is None:
            _signal_all(self.namespace, signal.SIGSTOP)
        elif process.poll() is None:
            os.kill(process.pid, signal.SIGSTOP)

    def resume(self, process: subprocess.Popen[Any] | None = None) -> None:
        if process is None:
            _signal_all(self.namespace, signal.SIGCONT)
        elif process.poll() is None:
            os.kill(process.pid, signal.SIGCONT)

    def kill(self) -> None:
        """SIGKILL every process of the host (a host that dies), and reap those started here."""
        _signal_all(self.namespace, signal.SIGKILL)
        for process in self._processes:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=10)

    # -- its link ------------------------------------------------------------------------

    def link_down(self) -> None:
        """Pull the host's cable: nothing reaches it and nothing leaves it, silently."""
        _ip("link", "set", self._outer, "down")

    def link_up(self) -> None:
        _ip("link", "set", self._outer, "up")

    def limit_rate(self, rate: str = "1mbit", burst: str = "32kbit", latency: str = "400ms") -> None:
        """A token bucket (``tc tbf``) of ``rate`` on the host's link, both ways."""
        shape = ["root", "tbf", "rate", rate, "burst", burst, "latency", latency]
        _run(["tc", "qdisc", "replace", "dev", self._outer, *shape])
        _run(self.command(["tc", "qdisc", "replace", "dev", "eth0", *shape]))

    def unlimit_rate(self) -> None:
        for args in (["tc", "qdisc", "del", "dev", self._outer, "root"],
                     self.command(["tc", "qdisc", "del", "dev", "eth0", "root"])):
            subprocess.run(args, capture_output=True, timeout=30)  # none there: nothing to do


class Network:
    """Hosts named ``names`` on a private bridge (see the module docstring); a context
    manager that removes them all on exit."""

    def __init__(self, names: Iterable[str]) -> None:
        check_capabilities()
        remove_stale()
        self._token = uuid.uuid4().hex[:6]
        #: The bridge's name, in the test process's network stack.
        self.bridge = f"tlb{self._token}"
        subnet = _free_subnet()
        addresses = subnet.hosts()
        self.controller_address = str(next(addresses))
        #: The test process, on the bridge, as a peer :meth:`partition` can cut hosts from.
        self.controller = Host("controller", "", self.controller_address, self.bridge)
        self._prefix = subnet.prefixlen
        self.hosts: dict[str, Host] = {}
        self._partitions: set[tuple[str, str]] = set()  # (receiving namespace, dropped address)
        try:
            _ip("link", "add", self.bridge, "type", "bridge")
            _ip("addr", "add", f"{self.controller_address}/{self._prefix}", "dev", self.bridge)
            _ip("link", "set", self.bridge, "up")
            for index, name in enumerate(names):
                self.hosts[name] = self._add_host(name, index, str(next(addresses)))
        except BaseException:
            self.close()
            raise

    def _add_host(self, name: str, index: int, address: str) -> Host:
        namespace = f"{_PREFIX}{os.getpid()}-{self._token}-{name}"
        outer, inner = f"tlv{self._token}{index}", f"tli{self._token}{index}"
        _ip("netns", "add", namespace)
        host = Host(name, namespace, address, outer)
        self.hosts[name] = host  # removed with the others from here on
        _ip("link", "add", outer, "type", "veth", "peer", "name", inner)
        _ip("link", "set", inner, "netns", namespace)
        _ip("-n", namespace, "link", "set", inner, "name", "eth0")
        _ip("-n", namespace, "addr", "add", f"{address}/{self._prefix}", "dev", "eth0")
        for link in ("eth0", "lo"):
            _ip("-n", namespace, "link", "set", link, "up")
        _ip("link", "set", outer, "master", self.bridge, "up")
        # A packet for a local address is delivered by the rule at preference 0 before any
        # other: moved behind the partitions' drop rules so that those can apply.
        _ip("-n", namespace, "rule", "add", "pref", str(_LOCAL_PREF), "lookup", "local")
        _ip("-n", namespace, "rule", "del", "pref", "0")
        return host

    def __getitem__(self, name: str) -> Host:
        return self.hosts[name]

    def __enter__(self) -> Network:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- partitions ----------------------------------------------------------------------

    def partition(self, one: Iterable[Host], other: Iterable[Host]) -> None:
        """Every host of ``one`` stops hearing every host of ``other`` and the reverse
        (both drop the other's packets on arrival): silence, not refusals. Either set may
        hold :attr:`controller`, the test process (its stack is the machine's and is not
        touched: the host's side drops, which silences a TCP connection both ways)."""
        one, other = list(one), list(other)
        for a in one:
            for b in other:
                for receiver, sender in ((a, b), (b, a)):
                    if receiver is not self.controller and (receiver.namespace, sender.address) not in self._partitions:
                        _ip("-n", receiver.namespace, "rule", "add", "pref", str(_DROP_PREF),
                            "from", sender.address, "blackhole")
                        self._partitions.add((receiver.namespace, sender.address))

    def isolate(self, host: Host) -> None:
        """:meth:`partition` ``host`` from every other host (the test process still reaches it)."""
        self.partition([host], [h for h in self.hosts.values() if h is not host])

    def heal(self) -> None:
        """Remove every partition."""
        for namespace, address in sorted(self._partitions):
            _ip("-n", namespace, "rule", "del", "pref", str(_DROP_PREF), "from", address, "blackhole", check=False)
        self._partitions.clear()

    # -- the end -------------------------------------------------------------------------

    def close(self) -> None:
        """Kill every process of every host and remove the namespaces and the bridge."""
        for host in self.hosts.values():
            host.resume()  # a stopped process dies of SIGKILL too, but its children may wait on it
            host.kill()
            _ip("netns", "del", host.namespace, check=False)
        self.hosts.clear()
        self._partitions.clear()
        _ip("link", "del", self.bridge, check=False)


def _free_subnet() -> ipaddress.IPv4Network:
    """A /24 in 10.0.0.0/8 that no route of this machine covers."""
    routes = _ip("-4", "route", "show", "table", "all").stdout.split("\n")
    taken = [ipaddress.ip_network(word, strict=False) for line in routes for word in line.split()[:2]
             if "/" in word or word.count(".") == 3]
    for _ in range(100):
        subnet = ipaddress.IPv4Network(f"10.{random.randint(64, 250)}.{random.randint(0, 255)}.0/24")
        if not any(subnet.overlaps(t) for t in taken if t.version == 4):
            return subnet
    raise HostsUnavailable("no free /24 subnet in 10.0.0.0/8 for the hosts' bridge")


def remove_stale() -> None:
    """Remove the namespaces and bridges of test processes that died without closing them."""
    listed = _ip("netns", "list", check=False).stdout.split("\n")
    for namespace in (line.split()[0] for line in listed if line.startswith(_PREFIX)):
        pid, token = namespace[len(_PREFIX):].split("-")[:2]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            _signal_all(namespace, signal.SIGKILL)
            _ip("netns", "del", namespace, check=False)
            _ip("link", "del", f"tlb{token}", check=False)


@contextlib.contextmanager
def network(names: Iterable[str]) -> Iterator[Network]:
    """A :class:`Network` of hosts named ``names``, removed on exit."""
    with Network(names) as made:
        yield made
