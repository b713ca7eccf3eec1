"""One table's log on Redis Streams: the state and the helpers that writing
(:mod:`.writes`) and reading (:mod:`.reads`) share; :class:`tablelog_redis.plugin.RedisStreamsLog`
puts them together.

Layout on the server, for the topic ``T`` (``redis.topic``, default the table name):

* ``T:0``, ``T:1``, ... one stream per partition; table bucket b is stream ``T:b``.
* ``T:meta``, a hash: ``partitions`` (the partition count, written once with
  HSETNX, so concurrent creators agree), ``created-by``, ``table``.

A record is one stream entry with the fields ``token`` (the writer token, utf-8),
``seq`` and ``ts`` (ASCII decimal sequence number and epoch-millis timestamp),
``key`` (left out for a null key) and ``value`` (bytes, possibly empty). An entry
without ``token`` is a foreign record (someone else's XADD): it is returned with
``token=None``, and the core reports or skips it. An entry with ``token`` whose
other fields do not parse is corrupt: never returned as data.

Positions encode entry ids (:mod:`tablelog_redis.positions`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import redis

from tablelog.plugin import (
    LogConfig,
    LogSystemError,
    LogUnavailableError,
    OptionError,
    PositionOutOfRangeError,
)

from . import positions as pos
from .config import RedisSettings, client_key

TOKEN, SEQ, TS, KEY, VALUE = b"token", b"seq", b"ts", b"key", b"value"

Entry = tuple[bytes, Mapping[bytes, bytes]]


class RedisStreams:
    """A connection's client, its pipeline of queued writes and what it knows of the topic.

    Opening does no I/O: redis-py connects on the first command. Used by one
    thread at a time (the hook contract).
    """

    def __init__(self, config: LogConfig, settings: RedisSettings):
        self.config = config
        self.settings = settings
        self.topic = config.topic
        kwargs: dict[str, Any] = {}
        if settings.password is not None:
            kwargs["password"] = settings.password
        try:
            # Any: redis-py annotates replies as one union of its sync and async forms.
            self.client: Any = redis.Redis.from_url(settings.client_url(), **kwargs)
            # Build (not connect) one connection now, so a client option redis-py does
            # not know fails here, naming its key, instead of at the first write.
            pool = self.client.connection_pool
            pool.connection_class(**pool.connection_kwargs)
        except TypeError as err:
            name = str(err).rsplit("argument", 1)[-1].strip(" '\"")
            raise OptionError(
                f"unknown option {client_key(name)!r}: not a tablelog option of the redis log "
                f"system nor a redis-py connection setting ({err})"
            ) from None
        except ValueError as err:  # redis-py's conversion of a client option's value
            raise OptionError(f"invalid redis client option: {err}") from None
        self.partitions: int | None = None  # known once ensure_topic ran
        self.closed = False
        self._pipe: Any = self.client.pipeline(transaction=False)
        self._queued: list[tuple[str, int]] = []  # (token, partition) of each queued XADD
        self._ranges: dict[tuple[str, int], list[int]] = {}  # -> [first, last, count]
        self._failed: dict[int, str] = {}  # partition -> first failure
        self._unreachable: str | None = None  # why the server could not be reached, since the last flush

    # ------------------------------------------------------------------ naming

    def stream(self, partition: int) -> str:
        return f"{self.topic}:{partition}"

    @property
    def meta_key(self) -> str:
        return f"{self.topic}:meta"

    # ------------------------------------------------------------------ errors

    @contextmanager
    def _errors(self, what: str, partition: int | None = None) -> Iterator[None]:
        """Turn redis-py's exceptions into tablelog's, naming topic and partition
        (and the server with any password redacted)."""
        if self.closed:
            raise LogSystemError("the redis log connection is closed", topic=self.topic)
        try:
            yield
        except redis.AuthenticationError as err:
            raise LogUnavailableError(
                f"redis at {self.settings.shown_url()} refused the credentials while trying to "
                f"{what} ({err}); check redis.password and the user in redis.url",
                topic=self.topic, partition=partition,
            ) from None
        except (redis.ConnectionError, redis.TimeoutError) as err:
            raise LogUnavailableError(
                f"redis at {self.settings.shown_url()} cannot be reached to {what}: {err}",
                topic=self.topic, partition=partition,
            ) from None
        except redis.ResponseError as err:
            raise LogSystemError(
                f"redis refused to {what}: {err}", topic=self.topic, partition=partition
            ) from None

    def _info(self, partition: int) -> dict[str, Any] | None:
        """XINFO STREAM of the partition's stream, or None when the stream does not exist."""
        try:
            info: dict[str, Any] = self.client.xinfo_stream(self.stream(partition))
        except redis.ResponseError as err:
            if "no such key" in str(err).lower():
                return None
            raise
        return info

    def _end(self, partition: int, info: Mapping[str, Any] | None) -> int:
        """The end position: one past the last id the stream ever generated (deleted
        entries included), so the next entry's position is >= it."""
        if info is None:
            raise PositionOutOfRangeError(
                f"stream {self.stream(partition)!r} does not exist: the topic was deleted, never "
                "created, or has fewer partitions",
                topic=self.topic, partition=partition,
            )
        return pos.encode(info["last-generated-id"]) + 1

    def _check_position(self, partition: int, position: int) -> None:
        try:
            pos.decode(position)
        except ValueError as err:
            raise PositionOutOfRangeError(str(err), topic=self.topic, partition=partition) from None
