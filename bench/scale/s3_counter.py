"""An HTTP proxy in front of an S3 endpoint that counts the requests through it, by
operation and by what they touch, so that a benchmark can say how many requests a commit,
a compaction or an expiry makes. Requests are parsed on their way in (the request line,
the headers, a body by ``Content-Length`` or chunked), answers are passed back as bytes.

It sits at the server because the clients are several: pypaimon's pyarrow file system,
boto3, the Rust writer, in the benchmark's process and in Spark's Python workers.
"""

from __future__ import annotations

import bisect
import contextlib
import re
import socket
import threading
import time
from collections import Counter
from typing import Any
from urllib.parse import urlsplit

_AREAS = (("snapshot", re.compile(r"/snapshot/")), ("manifest", re.compile(r"/manifest/")),
          ("schema", re.compile(r"/schema/")), ("data", re.compile(r"/bucket-\d+/")))


def classify(method: str, target: str) -> tuple[str, str]:
    """(operation, area) of a request: LIST, GET, HEAD, PUT, DELETE, DELETE-BATCH (a POST
    ``?delete`` of many keys), or the method; the area is the table's folder the path is
    in (snapshot, manifest, schema, data files) or ``other``."""
    path, _, query = target.partition("?")
    params = {item.partition("=")[0] for item in query.split("&") if item}
    if method == "GET" and ("list-type" in params or "prefix" in params or "delimiter" in params):
        operation = "LIST"
    elif method == "POST" and "delete" in params:
        operation = "DELETE-BATCH"
    else:
        operation = method
    for area, pattern in _AREAS:
        if pattern.search(path) or (operation == "LIST" and pattern.search(_prefix(query))):
            return operation, area
    return operation, "other"


def _prefix(query: str) -> str:
    from urllib.parse import unquote

    for item in query.split("&"):
        key, _, value = item.partition("=")
        if key == "prefix":
            return "/" + unquote(value)
    return ""


class S3RequestCounter:
    """A proxy on a free loopback port forwarding to ``upstream`` (``http://host:port``);
    :attr:`endpoint` is what the clients use instead; :meth:`counts` the requests so far,
    :meth:`between` those that arrived in a span of wall-clock time."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        self._upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.endpoint = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._counts: Counter[tuple[str, str]] = Counter()
        self._arrivals: list[tuple[float, str, str]] = []  # (time.time(), operation, area)
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, daemon=True, name="s3-counter").start()

    def counts(self) -> Counter[tuple[str, str]]:
        with self._lock:
            return Counter(self._counts)

    def between(self, start: float, end: float) -> Counter[tuple[str, str]]:
        """The requests that arrived from ``start`` to ``end`` (``time.time()`` seconds)."""
        with self._lock:
            first = bisect.bisect_left(self._arrivals, (start,))
            last = bisect.bisect_right(self._arrivals, (end, "~", "~"))
            return Counter((op, area) for _, op, area in self._arrivals[first:last])

    def close(self) -> None:
        self._closed = True
        self._listener.close()

    def __enter__(self) -> S3RequestCounter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self._upstream)
            except OSError:
                client.close()
                continue
            for sock in (client, server):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._requests, args=(client, server), daemon=True).start()
            threading.Thread(target=_pipe, args=(server, client), daemon=True).start()

    def _requests(self, client: socket.socket, server: socket.socket) -> None:
        reader = _Reader(client)
        try:
            while True:
                head = reader.until(b"\r\n\r\n")
                if head is None:
                    break
                server.sendall(head)
                lines = head.decode("latin-1").split("\r\n")
                method, target = (lines[0].split(" ") + ["", ""])[:2]
                headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
                kind = classify(method, target)
                with self._lock:
                    self._counts[kind] += 1
                    self._arrivals.append((time.time(), *kind))
                if headers.get("transfer-encoding", "").lower() == "chunked":
                    _forward_chunked(reader, server)
                else:
                    reader.forward(int(headers.get("content-length", "0") or 0), server)
        except OSError:
            pass
        finally:
            _shut(server)


class _Reader:
    """Buffered reads from a socket: up to a delimiter, or a number of bytes forwarded."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._buffer = b""

    def _fill(self) -> bool:
        data = self._sock.recv(262_144)
        self._buffer += data
        return bool(data)

    def until(self, delimiter: bytes) -> bytes | None:
        while (end := self._buffer.find(delimiter)) < 0:
            if not self._fill():
                return None
        end += len(delimiter)
        out, self._buffer = self._buffer[:end], self._buffer[end:]
        return out

    def forward(self, n: int, out: socket.socket) -> None:
        while n > 0:
            if not self._buffer and not self._fill():
                raise OSError("the client closed mid-body")
            part, self._buffer = self._buffer[:n], self._buffer[n:]
            out.sendall(part)
            n -= len(part)


def _forward_chunked(reader: _Reader, out: socket.socket) -> None:
    while True:
        size_line = reader.until(b"\r\n")
        if size_line is None:
            raise OSError("the client closed mid-body")
        out.sendall(size_line)
        size = int(size_line.split(b";")[0].strip() or b"0", 16)
        if size == 0:
            trailer = reader.until(b"\r\n")  # the empty line (trailers are not sent by S3 clients)
            if trailer is not None:
                out.sendall(trailer)
            return
        reader.forward(size + 2, out)  # the chunk and its CRLF


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(262_144):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        _shut(sink)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_WR)
