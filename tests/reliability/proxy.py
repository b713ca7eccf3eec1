"""A loopback TCP proxy the tests control: cut every connection, or stall traffic.

``TcpProxy(upstream_port)`` listens on a free loopback port and forwards each
accepted connection to ``127.0.0.1:upstream_port`` (one thread per direction).

* :meth:`drop_all` resets every open connection (RST, like a dead peer or a
  firewall); new connections are accepted again right away;
* :meth:`refuse` / :meth:`accept` make new connections fail (closed at once) or work;
* :meth:`pause` / :meth:`resume` stop and restart forwarding bytes on every
  connection without closing any (a black hole: the peers see silence).
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading

from tablelog.testing.processes import free_port

_CHUNK = 1 << 16


def _reset(sock: socket.socket) -> None:
    """Close with an RST instead of a FIN (SO_LINGER 0)."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        sock.close()


class TcpProxy:
    def __init__(self, upstream_port: int, port: int | None = None, upstream_host: str = "127.0.0.1"):
        self.upstream = (upstream_host, upstream_port)
        self.port = port or free_port()
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", self.port))
        self._listener.listen(64)
        self._lock = threading.Lock()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._flowing = threading.Event()
        self._flowing.set()
        self._refusing = False
        self._closed = False
        self.accepted = 0  # connections accepted and forwarded so far
        self.dropped = 0  # connections cut by drop_all
        self._thread = threading.Thread(target=self._accept_loop, name=f"proxy-{self.port}", daemon=True)
        self._thread.start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

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

    def pause(self) -> None:
        """Stop forwarding bytes (connections stay open, data waits)."""
        self._flowing.clear()

    def resume(self) -> None:
        self._flowing.set()

    @property
    def open_connections(self) -> int:
        with self._lock:
            return len(self._pairs)

    def close(self) -> None:
        self._closed = True
        self._flowing.set()
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
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(_CHUNK)
                if not data:
                    break
                self._flowing.wait()
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
