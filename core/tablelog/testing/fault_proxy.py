"""A TCP proxy the tests control, put on the path between a client and a server to cut
every connection, stall traffic one way or both, or make the link slow and lossy.

``TcpProxy(upstream_port, upstream_host=..., listen_host=...)`` listens on a free port of
``listen_host`` (loopback by default; a network's controller address to sit between
separate hosts, :mod:`tablelog.testing.hosts`) and forwards each accepted connection to
the upstream (a reader and a sender thread per direction).

* :meth:`drop_all` resets every open connection (RST, like a dead peer or a
  firewall); new connections are accepted again right away;
* :meth:`refuse` / :meth:`accept` make new connections fail (closed at once) or work;
* :meth:`pause` / :meth:`resume` stop and restart forwarding bytes on every
  connection without closing any (a black hole: the peers see silence); one way only
  with ``direction="up"`` (client to server) or ``"down"``;
* :meth:`impair` delays every chunk by ``delay_s`` (plus up to ``jitter_s``), and with
  probability ``loss`` delays it by a retransmission timeout more, doubled for each loss
  in a row: what a lost segment costs a TCP stream (the kernel has no ``netem`` here, and
  a proxy on the stream cannot drop bytes TCP would resend).
"""

from __future__ import annotations

import contextlib
import random
import socket
import struct
import threading
import time
from collections import deque

from tablelog.testing.processes import free_port

_CHUNK = 1 << 16
#: Linux's least retransmission timeout: what the first loss of a segment costs.
_MIN_RTO_S = 0.2


def _reset(sock: socket.socket) -> None:
    """Close with an RST instead of a FIN (SO_LINGER 0)."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        sock.close()


class TcpProxy:
    def __init__(self, upstream_port: int, port: int | None = None, upstream_host: str = "127.0.0.1",
                 listen_host: str = "127.0.0.1"):
        self.upstream = (upstream_host, upstream_port)
        self.listen_host = listen_host
        self.port = port or free_port()
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind((listen_host, self.port))
        self._listener.listen(64)
        self._lock = threading.Lock()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._flowing = {"up": threading.Event(), "down": threading.Event()}
        for flowing in self._flowing.values():
            flowing.set()
        self._delay_s, self._jitter_s, self._loss = 0.0, 0.0, 0.0
        self._random = random.Random()
        self._refusing = False
        self._closed = False
        self.accepted = 0  # connections accepted and forwarded so far
        self.dropped = 0  # connections cut by drop_all
        self._thread = threading.Thread(target=self._accept_loop, name=f"proxy-{self.port}", daemon=True)
        self._thread.start()

    @property
    def address(self) -> str:
        return f"{self.listen_host}:{self.port}"

    # -- control -------------------------------------------------------------------

    def drop_all(self) -> int:
        """Reset every open connection; returns how many were cut."""
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for client, upstream in pairs:
            _reset(client)
            _reset(upstream)
        self.dropped += len(pairs)
        return len(pairs)

    def refuse(self) -> None:
        """New connections are closed as soon as they are accepted."""
        self._refusing = True

    def accept(self) -> None:
        self._refusing = False

    def pause(self, direction: str = "both") -> None:
        """Stop forwarding bytes ``"up"`` (client to server), ``"down"`` or ``"both"``
        ways (connections stay open, data waits)."""
        for way in self._ways(direction):
            self._flowing[way].clear()

    def resume(self, direction: str = "both") -> None:
        for way in self._ways(direction):
            self._flowing[way].set()

    @staticmethod
    def _ways(direction: str) -> tuple[str, ...]:
        if direction not in ("up", "down", "both"):
            raise ValueError(f"direction must be 'up', 'down' or 'both', not {direction!r}")
        return ("up", "down") if direction == "both" else (direction,)

    def impair(self, delay_s: float = 0.0, *, jitter_s: float = 0.0, loss: float = 0.0, seed: int | None = None) -> None:
        """From now on every chunk waits ``delay_s`` plus up to ``jitter_s``, and a lost
        one (probability ``loss``) a retransmission timeout more (module docstring);
        ``impair()`` makes the link clean again."""
        if not 0.0 <= loss < 1.0:
            raise ValueError(f"loss must be a fraction in [0, 1), not {loss!r}")
        self._delay_s, self._jitter_s, self._loss = delay_s, jitter_s, loss
        self._random.seed(seed)

    def _late_by(self) -> float:
        late, rto = self._delay_s + self._random.uniform(0.0, self._jitter_s), _MIN_RTO_S
        while self._loss and self._random.random() < self._loss:
            late, rto = late + rto, rto * 2
        return late

    @property
    def open_connections(self) -> int:
        with self._lock:
            return len(self._pairs)

    def close(self) -> None:
        self._closed = True
        for flowing in self._flowing.values():
            flowing.set()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self._listener.close()
        self.drop_all()
        self._thread.join(timeout=5)

    def __enter__(self) -> TcpProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- forwarding ----------------------------------------------------------------

    def _accept_loop(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self._refusing or self._closed:
                _reset(client)
                continue
            try:
                upstream = socket.create_connection(self.upstream, timeout=5)
                upstream.settimeout(None)
            except OSError:
                _reset(client)
                continue
            for sock in (client, upstream):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self._pairs.append((client, upstream))
            self.accepted += 1
            for src, dst, way in ((client, upstream, "up"), (upstream, client, "down")):
                queue: deque[tuple[float, bytes]] = deque()
                ready = threading.Condition()
                threading.Thread(target=self._read, args=(src, dst, queue, ready), daemon=True).start()
                threading.Thread(target=self._send, args=(src, dst, way, queue, ready), daemon=True).start()

    def _read(self, src: socket.socket, dst: socket.socket, queue: deque[tuple[float, bytes]],
              ready: threading.Condition) -> None:
        """Chunks from ``src``, each with the time it may go on (b"" at the end)."""
        data = b"x"
        try:
            while data:
                data = src.recv(_CHUNK)
                due = time.monotonic() + (self._late_by() if data else 0.0)
                with ready:
                    queue.append((max(due, queue[-1][0]) if queue else due, data))  # in order
                    ready.notify()
        except OSError:
            with ready:
                queue.append((0.0, b""))
                ready.notify()

    def _send(self, src: socket.socket, dst: socket.socket, way: str, queue: deque[tuple[float, bytes]],
              ready: threading.Condition) -> None:
        try:
            while True:
                with ready:
                    ready.wait_for(lambda: bool(queue))
                    due, data = queue.popleft()
                if not data:
                    break
                time.sleep(max(0.0, due - time.monotonic()))
                self._flowing[way].wait()
                dst.sendall(data)
        except OSError:
            pass
        finally:
            with self._lock:
                self._pairs = [p for p in self._pairs if src not in p]
            for sock in (src, dst):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                with contextlib.suppress(OSError):
                    sock.close()
