"""A TLS terminator for tests, as stunnel is in front of a server: it accepts TLS
connections on a loopback port with a certificate the test made
(:mod:`tablelog.testing.tls`) and forwards the plaintext to a server's port.

The Kafka test broker (Tansu) has no working TLS listener of its own, so a TLS test runs
the broker on a private port, advertising the proxy's port: every connection a client
makes, the bootstrap one and those to the partition leaders, goes through TLS. The proxy
runs an asyncio loop in a thread of the test process; :func:`tls_proxy` stops it on exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

from tablelog.testing.processes import free_port

#: Bytes copied at a time between the two sides of a connection.
_CHUNK = 1 << 16


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(_CHUNK):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, ssl.SSLError, asyncio.IncompleteReadError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()


@contextlib.contextmanager
def tls_proxy(certificate: Path, key: Path, target_port: int, port: int | None = None,
              host: str = "127.0.0.1") -> Iterator[int]:
    """Accept TLS on ``host:port`` (a free port when None) with ``certificate`` and ``key``,
    forwarding each connection to ``host:target_port``; yields the port."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(str(certificate), str(key))
    listen_port = port or free_port()
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    failure: list[BaseException] = []

    async def handle(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            server_reader, server_writer = await asyncio.open_connection(host, target_port)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(_pipe(client_reader, server_writer), _pipe(server_reader, client_writer))

    async def serve() -> asyncio.base_events.Server:
        return await asyncio.start_server(handle, host, listen_port, ssl=context)

    def run() -> None:
        asyncio.set_event_loop(loop)
        try:
            server = loop.run_until_complete(serve())
        except BaseException as err:  # noqa: BLE001 -- reported to the caller
            failure.append(err)
            ready.set()
            return
        ready.set()
        try:
            loop.run_forever()
        finally:
            server.close()
            loop.run_until_complete(server.wait_closed())
            loop.close()

    thread = threading.Thread(target=run, name=f"tls-proxy-{listen_port}", daemon=True)
    thread.start()
    ready.wait(10)
    if failure:
        raise failure[0]
    try:
        yield listen_port
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
