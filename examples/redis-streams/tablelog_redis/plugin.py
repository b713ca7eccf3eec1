"""The ``redis`` log system (entry point ``redis``).

``pyproject.toml`` declares::

    [project.entry-points."tablelog.log_systems"]
    redis = "tablelog_redis.plugin:RedisStreamsLog"

so ``log.system = redis`` loads the class :class:`RedisStreamsLog` and registers it
with a pluggy plugin manager of its own. The class is the plugin and its instances are
the connections: each hook is a method of it, written once. Each hook's contract is
in :mod:`tablelog.hookspecs`; the comments below say how this plugin meets it.

* Partition n of topic T is the stream ``T:n``; ``T:meta`` holds the partition count
  (:mod:`tablelog_redis.streams`).
* A position is the entry id ``ms-seq`` as the int ``ms << 64 | seq``
  (:mod:`tablelog_redis.positions`).
* Token, sequence number, timestamp, key and value are fields of the entry;
  :mod:`tablelog_redis.writes` has ``produce`` and ``flush``, :mod:`tablelog_redis.reads`
  ``end_positions``, ``seek``, ``fetch`` and ``wait_for_records``.

A plugin imports only :mod:`tablelog.plugin` (the hook marker, the record types,
the errors, secret redaction, option parsing): never the table store, the reader
or Spark.
"""

from __future__ import annotations

import uuid

from tablelog.plugin import CommittedLog, LogConfig, OptionSpec, TopicError, hookimpl

from . import __version__
from . import config as _config
from .reads import StreamReads
from .writes import StreamWrites


class RedisStreamsLog(StreamWrites, StreamReads):
    """The ``redis`` log system; an instance is one table's open log (what ``open_log``
    returns), whose repr never shows a secret.

    Pluggy passes each hook's arguments by name, as the hook specs name them, and it
    would leave out a first parameter named ``self``: so the hook methods call the
    instance ``connection``. Helpers that are not hooks keep ``self``.
    """

    def __repr__(self) -> str:
        return (
            f"RedisStreamsLog(table={self.config.table!r}, topic={self.topic!r}, "
            f"url={self.settings.shown_url()!r}, options={self.settings.shown_options()!r}"
            f"{', closed' if self.closed else ''})"
        )

    __str__ = __repr__

    @staticmethod
    @hookimpl
    def option_specs() -> list[OptionSpec]:
        # Full keys with the `redis.` prefix; no I/O. `tablelog create` checks the
        # required ones before a table exists.
        return _config.option_specs()

    @classmethod
    @hookimpl
    def open_log(cls, config: LogConfig) -> RedisStreamsLog:
        # Validates every option (OptionError naming the `redis.` key) before any I/O;
        # redis-py connects on the first command.
        return cls(config, _config.parse_settings(config))

    @hookimpl
    def close_log(connection) -> None:
        # Idempotent: a second close does nothing. Queued, unflushed XADDs are dropped.
        if connection.closed:
            return
        connection.closed = True
        connection._pipe.reset()
        connection.client.close()
        connection.client.connection_pool.disconnect()

    @hookimpl
    def ensure_topic(connection) -> int:
        # Creates the empty streams and the meta hash (auto-register), or checks them;
        # TopicError names both partition counts when there are too few.
        needed = connection.config.partitions
        with connection._errors("create the topic"):
            existing = connection.client.hget(connection.meta_key, "partitions")
            if existing is None:
                if not connection.config.auto_register:
                    raise TopicError(
                        f"topic {connection.topic!r} does not exist on redis at "
                        f"{connection.settings.shown_url()} (no hash {connection.meta_key!r}) and "
                        "log.system.auto-register is false: create it with auto-register on once",
                        topic=connection.topic,
                    )
                connection._create_streams(needed)
                # HSETNX: when two writers create the topic at once, the first count wins
                # and both read it back below.
                connection.client.hsetnx(connection.meta_key, "partitions", needed)
                connection.client.hsetnx(connection.meta_key, "created-by", f"tablelog-redis-streams {__version__}")
                connection.client.hsetnx(connection.meta_key, "table", connection.config.table)
                existing = connection.client.hget(connection.meta_key, "partitions")
            count = int(existing)
            if count < needed:
                raise TopicError(
                    f"topic {connection.topic!r} has {count} partitions but the table needs {needed} "
                    "(bucket b is written to partition b): use another redis.topic, or delete "
                    f"the streams {connection.topic}:* and {connection.meta_key!r} to recreate it",
                    topic=connection.topic,
                )
            pipe = connection.client.pipeline(transaction=False)
            for partition in range(count):
                pipe.type(connection.stream(partition))
            kinds = pipe.execute()
        wrong = [
            (p, k.decode() if isinstance(k, bytes) else k) for p, k in enumerate(kinds)
            if (k.decode() if isinstance(k, bytes) else k) != "stream"
        ]
        if wrong:
            partition, kind = wrong[0]
            raise TopicError(
                f"topic {connection.topic!r} should have {count} partitions, but the key "
                f"{connection.stream(partition)!r} is " + ("missing (deleted?)" if kind == "none" else f"a {kind}, not a stream"),
                topic=connection.topic, partition=partition,
            )
        connection.partitions = count
        return count

    def _create_streams(self, count: int) -> None:
        """Create ``count`` empty streams. Redis has no "create stream": creating a
        consumer group with MKSTREAM does, and the group is dropped at once."""
        group = f"tablelog-create-{uuid.uuid4().hex}"
        pipe = self.client.pipeline(transaction=False)
        for partition in range(count):
            pipe.xgroup_create(self.stream(partition), group, id="$", mkstream=True)
            pipe.xgroup_destroy(self.stream(partition), group)
        for partition, result in enumerate(pipe.execute(raise_on_error=False)[::2]):
            if isinstance(result, Exception):
                raise TopicError(
                    f"cannot create stream {self.stream(partition)!r}: {result}",
                    topic=self.topic, partition=partition,
                )

    @hookimpl
    def commit(connection, committed: CommittedLog) -> None:
        # Nothing to do, and so trivially idempotent (it may run again for the same
        # snapshot after a crash). Visibility is decided by the table snapshot, which
        # records each committed token with its position range; the log needs no
        # marker for that. Redis Streams has nothing to keep in step either: tablelog
        # reads with XRANGE/XREAD from explicit positions, not with consumer groups, so
        # there are no group offsets to acknowledge, and retention (XTRIM, MAXLEN) is
        # the operator's decision, not something a commit should trigger.
        return None
