"""An HTTP-aware proxy in front of an S3 server, for tests: make the S3 endpoint answer
errors or hang after applying a request.

A TCP proxy (:mod:`tablelog.testing.fault_proxy`) cuts or stalls whole connections; an object
store's clients must also survive the failure of one request: a 503 SlowDown, or a PUT the
store applied whose answer never arrives (to the client, as if never applied). The proxy
parses just enough HTTP/1.1 (:mod:`tablelog.testing.http_framing`) to find where each exchange
ends, and forwards the bytes unmodified: the clients' signatures stay valid (boto3, pyarrow's
AWS SDK and opendal send bodies with a Content-Length, the first two after an ``Expect:
100-continue`` that the proxy answers itself; chunked bodies pass as well). Clients must be
given its endpoint (:meth:`S3FaultProxy.through` a server): they sign the ``Host`` they send,
which passes unchanged, and SeaweedFS (path-style) checks the signature against that ``Host``.

Rules are matched in the order set, the first live one wins, each ``times`` times (None:
until :meth:`S3FaultProxy.clear`)::

    proxy.fail("PUT", "/snapshot/snapshot-")       # 503 SlowDown, the request not forwarded
    proxy.apply_then_hang("PUT")                   # applied upstream, the answer withheld
    proxy.apply_then_drop("PUT")                   # applied, then the connection reset
    proxy.hang("GET", re.compile(r"list-type=2"))  # not forwarded, silence
    proxy.delay(2.0, "GET")                        # forwarded two seconds late
    proxy.clear()                                  # no rules, held connections closed
"""

from __future__ import annotations

import contextlib
import re
import select
import socket
import struct
import threading
from http.client import responses
from typing import TYPE_CHECKING, BinaryIO, NamedTuple, TypeAlias
from urllib.parse import urlparse
from xml.sax.saxutils import escape

import attrs

from tablelog.testing.http_framing import read_body, read_head, read_response
from tablelog.testing.processes import free_port

if TYPE_CHECKING:
    from tablelog.testing.s3_server import S3Endpoint

#: What a rule's ``path`` may be: a substring of the request target, or a pattern searched in it.
PathMatch: TypeAlias = "str | re.Pattern[str] | None"


class Exchange(NamedTuple):
    """One request the proxy saw: its method, its target (path and query, as sent), and
    the upstream's status, or the name of the fault that took it instead."""

    method: str
    path: str
    outcome: int | str


@attrs.define(eq=False)
class Rule:
    """What to do with the requests of ``method`` (None: any) whose target contains
    ``path`` (a string) or matches it (a pattern, searched; None: any)."""

    fault: str
    method: str | None
    path: PathMatch
    times: int | None
    status: int = 503
    code: str = "SlowDown"
    seconds: float = 0.0
    fired: int = 0

    def matches(self, method: str, target: str) -> bool:
        if (self.times is not None and self.fired >= self.times) or \
                (self.method is not None and self.method.upper() != method.upper()):
            return False
        if self.path is None or isinstance(self.path, str):
            return self.path is None or self.path in target
        return self.path.search(target) is not None


def _error_response(rule: Rule, method: str, target: str) -> bytes:
    body = (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{escape(rule.code)}</Code>'
            f"<Message>{escape(rule.code)} injected by the test's S3 fault proxy</Message>"
            f"<Resource>{escape(target)}</Resource><RequestId>s3-fault-proxy</RequestId></Error>").encode()
    head = (f"HTTP/1.1 {rule.status} {responses.get(rule.status, 'Error')}\r\n"
            f"Content-Type: application/xml\r\nContent-Length: {len(body)}\r\n"
            "x-amz-request-id: s3-fault-proxy\r\n\r\n").encode()
    return head if method.upper() == "HEAD" else head + body


def _readable(sock: socket.socket) -> bool:
    """Whether ``sock`` has something to read now (or is closed). ``poll``, not ``select``:
    a long test session's descriptors pass 1024, which ``select`` refuses."""
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(0))


def _close(sock: socket.socket, reset: bool = False) -> None:
    """Close ``sock`` with a FIN (a shutdown first, which wakes a thread blocked reading it),
    or with an RST (SO_LINGER 0, no shutdown: like a dead peer)."""
    with contextlib.suppress(OSError):
        if reset:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        else:
            sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()


class S3FaultProxy:
    """Listens on ``listen_host`` at ``port`` (default a free one) and forwards each client
    connection's requests, one after another, over a connection of its own to the S3 server
    at ``upstream`` (``http://host:port``), applying the rules set."""

    def __init__(self, upstream: str, listen_host: str = "127.0.0.1", port: int | None = None) -> None:
        url = urlparse(upstream)
        if url.scheme != "http" or not url.hostname:
            raise ValueError(f"the S3 fault proxy forwards to an http://host:port endpoint, not {upstream!r}")
        self.upstream = (url.hostname, url.port or 80)
        self.host = listen_host
        self.port = port or free_port()
        self._lock = threading.Lock()
        self._rules: list[Rule] = []
        self._requests: list[Exchange] = []
        self._broken: list[str] = []
        self._held: list[socket.socket] = []
        self._sockets: set[socket.socket] = set()
        self._closed = threading.Event()
        self.connections = 0  # client connections accepted so far
        self._listener = socket.create_server((listen_host, self.port), backlog=64)
        self._thread = threading.Thread(target=self._accept_loop, name=f"s3-faults-{self.port}", daemon=True)
        self._thread.start()

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.port}"

    def through(self, server: S3Endpoint) -> S3Endpoint:
        """``server`` addressed through this proxy (its clients, its tablelog options)."""
        return attrs.evolve(server, endpoint=self.endpoint, https_endpoint=None)

    @property
    def requests(self) -> list[Exchange]:
        """Every request seen so far, in the order their outcomes were known."""
        with self._lock:
            return list(self._requests)

    @property
    def broken(self) -> list[str]:
        """Each exchange the proxy gave up on (the upstream unreachable, a request it could
        not parse, a peer gone mid-request), and why: its client saw the connection close."""
        with self._lock:
            return list(self._broken)

    # -- rules (each returns the rule, whose ``fired`` counts the requests it took) ----

    def fail(self, method: str | None = None, path: PathMatch = None, status: int = 503, code: str = "SlowDown",
             times: int | None = 1) -> Rule:
        """Answer an S3 error without forwarding the request (the connection stays usable)."""
        return self._add(Rule("fail", method, path, times, status=status, code=code))

    def apply_then_hang(self, method: str | None = "PUT", path: PathMatch = None, times: int | None = 1) -> Rule:
        """Forward the request, discard the answer, hold the client silent until :meth:`clear`."""
        return self._add(Rule("apply_then_hang", method, path, times))

    def apply_then_drop(self, method: str | None = "PUT", path: PathMatch = None, times: int | None = 1) -> Rule:
        """Forward the request, discard the answer, reset the client's connection."""
        return self._add(Rule("apply_then_drop", method, path, times))

    def hang(self, method: str | None = None, path: PathMatch = None, times: int | None = 1) -> Rule:
        """Forward nothing; hold the client silent until :meth:`clear`."""
        return self._add(Rule("hang", method, path, times))

    def delay(self, seconds: float, method: str | None = None, path: PathMatch = None,
              times: int | None = None) -> Rule:
        """Forward the request ``seconds`` late."""
        return self._add(Rule("delay", method, path, times, seconds=seconds))

    def clear(self) -> None:
        """Remove every rule and close the connections held silent."""
        with self._lock:
            self._rules.clear()
            held, self._held = self._held, []
        for sock in held:
            _close(sock)

    def close(self) -> None:
        self._closed.set()
        _close(self._listener)
        self._thread.join(timeout=5)
        self.clear()
        with self._lock:
            sockets, self._sockets = list(self._sockets), set()
        for sock in sockets:
            _close(sock)

    def __enter__(self) -> S3FaultProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _add(self, rule: Rule) -> Rule:
        with self._lock:
            self._rules.append(rule)
        return rule

    def _match(self, method: str, target: str) -> Rule | None:
        with self._lock:
            rule = next((r for r in self._rules if r.matches(method, target)), None)
            if rule is not None:
                rule.fired += 1
            return rule

    def _record(self, method: str, target: str, outcome: int | str) -> None:
        with self._lock:
            self._requests.append(Exchange(method, target, outcome))

    def _release(self, sock: socket.socket, reader: BinaryIO, how: str = "close") -> None:
        """Stop tracking ``sock``, and close it, reset it, or hold it open until :meth:`clear`."""
        reader.close()  # the socket's own close would wait for its reader's (no RST before)
        with self._lock:
            self._sockets.discard(sock)
            if how == "hold" and not self._closed.is_set():
                self._held.append(sock)
                return
        _close(sock, reset=how == "reset")

    def _accept_loop(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self._sockets.add(client)
                self.connections += 1
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _connect(self, current: tuple[socket.socket, BinaryIO] | None) -> tuple[socket.socket, BinaryIO]:
        # An idle upstream connection with something to read has been closed by the server
        # (or is out of step): a new one, rather than a request lost on it.
        if current is not None and not _readable(current[0]):
            return current
        if current is not None:
            self._release(*current)
        sock = socket.create_connection(self.upstream, timeout=10)
        sock.settimeout(None)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._lock:
            self._sockets.add(sock)
        return sock, sock.makefile("rb")

    def _serve(self, client: socket.socket) -> None:
        reader, upstream, how = client.makefile("rb"), None, "close"
        request = ""
        try:
            while not self._closed.is_set():
                request = ""
                head, words, headers = read_head(reader)
                method, target = words[0], words[1]
                request = f"{method} {target}"
                if "100-continue" in headers.get("expect", "").lower():
                    # Answered here, so that the whole body is read before a rule decides.
                    client.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
                body = read_body(reader, headers, until_close=False)
                rule = self._match(method, target)
                fault = rule.fault if rule is not None else ""
                if rule is not None and fault in ("fail", "hang"):
                    self._record(method, target, fault)
                    if fault == "hang":
                        how = "hold"
                        return
                    client.sendall(_error_response(rule, method, target))
                    closes = False
                else:
                    if rule is not None and fault == "delay" and self._closed.wait(rule.seconds):
                        return
                    upstream = self._connect(upstream)
                    upstream[0].sendall(head + body)
                    status, response, closes = read_response(upstream[1], method)
                    if fault.startswith("apply_then_"):
                        self._record(method, target, fault)
                        how = "hold" if fault == "apply_then_hang" else "reset"
                        return
                    self._record(method, target, status)
                    client.sendall(response)
                if closes or "close" in headers.get("connection", "").lower():
                    return
        except (EOFError, OSError, ValueError, IndexError) as exc:  # a peer is gone, or speaks no HTTP/1.1
            # A client closing its idle connection between requests is the normal end.
            if (request or not isinstance(exc, EOFError)) and not self._closed.is_set():
                with self._lock:
                    self._broken.append(f"{request or 'between requests'}: {type(exc).__name__}: {exc}")
        finally:
            if upstream is not None:
                self._release(*upstream)
            self._release(client, reader, how)
