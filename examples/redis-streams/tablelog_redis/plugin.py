"""The ``redis`` log system's hook implementations (entry point ``redis``).

``pyproject.toml`` declares::

    [project.entry-points."tablelog.log_systems"]
    redis = "tablelog_redis.plugin"

so ``log.system = redis`` loads this module and registers its ``@hookimpl``
functions with a pluggy plugin manager of their own. Each hook's contract is in
:mod:`tablelog.hookspecs`; the comments below say how this plugin meets it.

* Partition n of topic T is the stream ``T:n``; ``T:meta`` holds the partition count.
* A position is the entry id ``ms-seq`` as the int ``ms << 64 | seq``
  (:mod:`tablelog_redis.positions`).
* Token, sequence number, timestamp, key and value are fields of the entry
  (:mod:`tablelog_redis.log`).

A plugin imports only :mod:`tablelog.plugin` (the hook marker, the record types,
the errors, secret redaction, option parsing): never the table store, the reader
or Spark.
"""

from __future__ import annotations

from tablelog.plugin import (
    CommittedLog,
    FetchResult,
    LogConfig,
    OptionSpec,
    ProduceBatch,
    ProducedRange,
    SeekSpec,
    hookimpl,
)

from . import config as _config
from .log import RedisStreamsLog


@hookimpl
def option_specs() -> list[OptionSpec]:
    # Full keys with the `redis.` prefix; no I/O. `tablelog create` checks the
    # required ones before a table exists.
    return _config.option_specs()


@hookimpl
def open_log(config: LogConfig) -> RedisStreamsLog:
    # Validates every option (OptionError naming the `redis.` key) before any I/O;
    # redis-py connects on the first command.
    return RedisStreamsLog(config, _config.parse_settings(config))


@hookimpl
def close_log(connection: RedisStreamsLog) -> None:
    # Idempotent: a second close does nothing. Queued, unflushed XADDs are dropped.
    connection.close()


@hookimpl
def ensure_topic(connection: RedisStreamsLog) -> int:
    # Creates the empty streams and the meta hash (auto-register), or checks them;
    # TopicError names both partition counts when there are too few.
    return connection.ensure_topic()


@hookimpl
def produce(connection: RedisStreamsLog, batch: ProduceBatch) -> None:
    # Queues XADDs in a pipeline (sent every `redis.pipeline-size` records): nothing
    # is acknowledged when this returns.
    connection.produce(batch)


@hookimpl
def flush(connection: RedisStreamsLog, timeout_s: float) -> list[ProducedRange]:
    # Sends the rest of the pipeline; every XADD's reply is its entry id, so the
    # ranges come from the server's own answers. Then WAIT for replicas if asked.
    return connection.flush(timeout_s)


@hookimpl
def end_positions(connection: RedisStreamsLog, partitions: list[int]) -> dict[int, int]:
    # One past `last-generated-id` (XINFO STREAM): exclusive, and never lower than
    # the next entry's id even after deletions.
    return connection.end_positions(partitions)


@hookimpl
def seek(connection: RedisStreamsLog, partition: int, spec: SeekSpec) -> int:
    # EARLIEST: the first entry (or the end of an empty stream); LATEST: the end;
    # TIMESTAMP: a scan that starts at the id of that time (ids are time-based);
    # POSITION: validated against the end.
    return connection.seek(partition, spec)


@hookimpl
def fetch(
    connection: RedisStreamsLog, partition: int, position: int, max_records: int, timeout_s: float
) -> FetchResult:
    # XRANGE from the position's id; when nothing is there, XREAD BLOCK waits for
    # the first new entry (at most timeout_s).
    return connection.fetch(partition, position, max_records, timeout_s)


@hookimpl
def wait_for_records(connection: RedisStreamsLog, positions: dict[int, int], timeout_s: float) -> list[int]:
    # One XREAD BLOCK over every partition's stream: an idle reader makes one call per
    # poll, however many partitions it reads. XREAD returns entries, but only reads them.
    return connection.wait_for_records(positions, timeout_s)


@hookimpl
def commit(connection: RedisStreamsLog, committed: CommittedLog) -> None:
    # Nothing to do, and so trivially idempotent (it may run again for the same
    # snapshot after a crash). Visibility is decided by the table snapshot, which
    # records each committed token with its position range; the log needs no
    # marker for that. Redis Streams has nothing to keep in step either: tablelog
    # reads with XRANGE/XREAD from explicit positions, not with consumer groups, so
    # there are no group offsets to acknowledge, and retention (XTRIM, MAXLEN) is
    # the operator's decision, not something a commit should trigger.
    return None
