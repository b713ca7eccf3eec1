"""Open log connections kept for the next write task of the same process.

Why: a Spark task attempt is a :class:`~tablelog.writing.write_task.WriteTask`, and without a pool
each one opens the table's log, runs ``ensure_topic`` (an admin round trip) and, on
Kafka, creates a new idempotent producer, which waits ~0.5 s for its producer id
before it sends anything (librdkafka's start-up timer). PySpark reuses its Python
workers across tasks (``spark.python.worker.reuse``, on by default), so one
connection per worker and table, handed from task to task, pays that once.

The rules that keep exactly-once:

* A connection is used by one task at a time: :meth:`LogPool.checkout` takes it out
  of the pool, :meth:`LogPool.checkin` puts it back. Two tasks at once get two
  connections.
* Only a task that finished cleanly (its flush returned, so nothing it produced is
  pending) checks its connection in. A task that aborts or raises calls
  :meth:`LogPool.discard`, which closes the connection: records a dead attempt
  produced but never flushed cannot show up in the next task's flush. (The task also
  keeps only the flushed ranges of its own token, in case one ever does.)
* Connections are keyed by the table's whole :class:`~tablelog.records.LogConfig`
  (system, topic, partitions, client options): a pooled connection has already ensured
  exactly the topic and partition count the next task would ensure.
* Idle connections are closed at interpreter exit (``atexit``), when more than
  ``max_idle`` are idle (the least recently used first) and when one has been idle
  longer than ``max_idle_s`` (its topic may have changed meanwhile; a fresh connection
  ensures it again). They hold nothing unflushed, so closing them loses nothing.
* After a ``fork`` the child forgets the parent's idle connections without using
  them: client threads (librdkafka's) do not survive a fork.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Protocol

import attrs

from tablelog.logs.discovery import load_log_system

if TYPE_CHECKING:
    from tablelog.logs.client import LogClient
    from tablelog.records import LogConfig

#: What a connection is for: every field of its LogConfig, options sorted.
PoolKey = tuple[str, str, str, int, bool, tuple[tuple[str, str], ...], str]


def pool_key(config: LogConfig) -> PoolKey:
    """The key of the connections that can serve a table with this log config.

    It holds the option values, secrets included (two tables with other credentials
    must not share a connection): keep it out of messages and reprs."""
    options = tuple(sorted((str(k), str(v)) for k, v in config.options.items()))
    return (config.system, config.table, config.topic, config.partitions, config.auto_register,
            options, config.warehouse)


class HasLogConfig(Protocol):
    """What the pool needs of a table (:class:`~tablelog.table_view.TableView` has it):
    the pool sits below the table, so it names no table class."""

    def log_config(self) -> LogConfig: ...


@attrs.define
class _Idle:
    key: PoolKey = attrs.field(repr=False)  # holds the options, secrets included
    client: LogClient
    since: float  # time.monotonic() of its check-in


class LogPool:
    """Open, topic-ensured log connections for write tasks, one task at a time each."""

    def __init__(self, max_idle: int = 8, max_idle_s: float = 600.0) -> None:
        self.max_idle = max_idle
        self.max_idle_s = max_idle_s
        self._lock = threading.Lock()
        self._idle: OrderedDict[int, _Idle] = OrderedDict()  # id(client) -> entry, oldest first
        self._out: dict[int, PoolKey] = {}  # id(client) -> key, for the checked-out ones
        self._pid = os.getpid()
        self._closed = False
        #: Connections this pool opened (tests and metrics look at it).
        self.opened = 0

    def checkout(self, table: HasLogConfig, config: LogConfig | None = None) -> LogClient:
        """A connection to ``table``'s log whose topic is ensured, for the caller alone
        until it is checked in or discarded. Raises what ``open_log``/``ensure_topic`` raise.
        ``config``: another of the table's topics (its projection stream's)."""
        config = table.log_config() if config is None else config
        key = pool_key(config)
        stale: list[LogClient] = []
        client: LogClient | None = None
        with self._lock:
            self._after_fork()
            now = time.monotonic()
            # Most recently used first: the one most likely to have warm client state.
            for ident, entry in reversed(self._idle.items()):
                if entry.key != key:
                    continue
                del self._idle[ident]
                if entry.client.closed or now - entry.since > self.max_idle_s:
                    stale.append(entry.client)
                    continue
                client = entry.client
                self._out[ident] = key
                break
        _close_all(stale)
        if client is not None:
            return client
        # Opened outside the lock: ensure_topic is a network round trip.
        client = load_log_system(config.system).open(config)
        try:
            client.ensure_topic()
        except BaseException:
            _close_all([client])
            raise
        with self._lock:
            self.opened += 1
            self._out[id(client)] = key
        return client

    def checkin(self, client: LogClient) -> None:
        """Return a connection whose task finished cleanly: every record produced on it
        was flushed. It is closed instead when the pool is closed or has enough idle ones."""
        evicted: list[LogClient] = []
        with self._lock:
            if self._after_fork():
                return  # a connection of the parent process: forget it, never close it here
            key = self._out.pop(id(client), None)
            if key is None or self._closed or client.closed:
                evicted.append(client)
            else:
                self._idle[id(client)] = _Idle(key, client, time.monotonic())
                while len(self._idle) > self.max_idle:
                    evicted.append(self._idle.popitem(last=False)[1].client)
        _close_all(evicted)

    def discard(self, client: LogClient) -> None:
        """Close a connection that must not serve another task (its task failed or aborted)."""
        with self._lock:
            self._out.pop(id(client), None)
        _close_all([client])

    def idle_count(self) -> int:
        with self._lock:
            return len(self._idle)

    def close(self) -> None:
        """Close the idle connections; later check-ins close theirs. Idempotent."""
        with self._lock:
            self._closed = True
            idle = [] if self._after_fork() else [e.client for e in self._idle.values()]
            self._idle.clear()
        _close_all(idle)

    def _after_fork(self) -> bool:
        """In a forked child: forget (never use or close) the parent's connections.
        Call with the lock held; returns whether this process is such a child."""
        if os.getpid() == self._pid:
            return False
        self._idle.clear()
        self._out.clear()
        self._pid = os.getpid()
        return True


def release(client: LogClient | None, pool: LogPool | None, *, reusable: bool) -> None:
    """Done with a connection: back to ``pool`` when ``reusable`` (its user finished
    cleanly, nothing unflushed), discarded from it otherwise, and closed when it came
    from no pool."""
    if client is None:
        return
    if pool is None:
        client.close()
    elif reusable:
        pool.checkin(client)
    else:
        pool.discard(client)


def _close_all(clients: list[LogClient]) -> None:
    for client in clients:
        # Closing only drops what is unflushed (the hook's contract) and must not turn
        # a task's outcome into a close error.
        with contextlib.suppress(Exception):
            client.close()


_shared: LogPool | None = None
_shared_lock = threading.Lock()


def shared_pool() -> LogPool:
    """The process-wide pool (the Spark sink's); its idle connections close at exit."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = LogPool()
            atexit.register(_shared.close)
        return _shared
