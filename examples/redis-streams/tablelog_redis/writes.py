"""Writing: ``produce`` queues XADDs in a pipeline, ``flush`` sends the rest and reports
the ranges from the ids the server gave the entries."""

from __future__ import annotations

import redis

from tablelog.plugin import (
    LogSystemError,
    LogUnavailableError,
    ProduceBatch,
    ProducedRange,
    ProduceError,
    hookimpl,
)

from . import positions as pos
from .streams import KEY, SEQ, TOKEN, TS, VALUE, RedisStreams


class StreamWrites(RedisStreams):
    """The hooks ``produce`` and ``flush`` of a connection."""

    @hookimpl
    def produce(connection, batch: ProduceBatch) -> None:
        # Queues XADDs in a pipeline (sent every `redis.pipeline-size` records): nothing
        # is acknowledged when this returns.
        if connection.closed:
            raise LogSystemError("the redis log connection is closed", topic=connection.topic)
        partition = batch.partition
        if partition < 0 or (connection.partitions is not None and partition >= connection.partitions):
            raise ProduceError(
                f"partition {partition} does not exist: the topic has {connection.partitions} partitions",
                topic=connection.topic, partition=partition,
            )
        stream = connection.stream(partition)
        token = batch.token.encode()
        stamp = str(batch.timestamp_ms).encode()
        for i, (key, value) in enumerate(zip(batch.keys, batch.values, strict=True)):
            fields = {TOKEN: token, SEQ: str(batch.first_seq + i).encode(), TS: stamp, VALUE: value}
            if key is not None:
                fields[KEY] = key
            # NOMKSTREAM: a missing stream is an error, never created by a write.
            connection._pipe.xadd(stream, fields, nomkstream=True)
            connection._queued.append((batch.token, partition))
            if len(connection._queued) >= connection.settings.pipeline_size:
                connection._send()

    def _send(self) -> None:
        """Send the queued XADDs in one round trip and note the ids the server gave them.

        Failures are remembered and raised by the next ``flush``. redis-py retries a
        pipeline after a dropped connection, so an XADD may land twice: both copies
        carry the same (token, seq), the range below covers the acknowledged one, and
        readers drop the other (the core's duplicate check by sequence number).
        """
        queued, self._queued = self._queued, []
        if not queued:
            return
        try:
            results = self._pipe.execute(raise_on_error=False)
        except (redis.ConnectionError, redis.TimeoutError) as err:
            self._pipe.reset()
            # An outage, not a refusal: the next flush raises LogUnavailableError.
            self._unreachable = self._unreachable or f"redis at {self.settings.shown_url()} cannot be reached: {err}"
            for _, partition in queued:
                self._failed.setdefault(partition, self._unreachable)
            return
        for (token, partition), result in zip(queued, results, strict=True):
            if result is None:
                self._failed.setdefault(
                    partition, f"the stream {self.stream(partition)!r} does not exist "
                    "(the topic has fewer partitions, or was deleted)"
                )
            elif isinstance(result, Exception):
                self._failed.setdefault(partition, f"redis refused the record: {result}")
            else:
                position = pos.encode(result)
                produced = self._ranges.get((token, partition))
                if produced is None:
                    self._ranges[(token, partition)] = [position, position, 1]
                else:
                    produced[1] = position
                    produced[2] += 1

    @hookimpl
    def flush(connection, timeout_s: float) -> list[ProducedRange]:
        # Sends the rest of the pipeline; every XADD's reply is its entry id, so the
        # ranges come from the server's own answers. Then WAIT for replicas if asked.
        if connection.closed:
            raise LogSystemError("the redis log connection is closed", topic=connection.topic)
        connection._send()
        ranges, connection._ranges = connection._ranges, {}
        failed, connection._failed = connection._failed, {}
        unreachable, connection._unreachable = connection._unreachable, None
        if unreachable is not None:
            raise LogUnavailableError(f"records could not be written: {unreachable}", topic=connection.topic)
        if failed:
            partition, reason = next(iter(failed.items()))
            raise ProduceError(
                f"records could not be written: {reason}", topic=connection.topic, partition=partition
            )
        if ranges and connection.settings.wait_replicas > 0:
            wanted = connection.settings.wait_replicas
            timeout_ms = max(1, min(connection.settings.wait_timeout_ms, int(timeout_s * 1000)))
            with connection._errors("wait for replicas"):
                acked = int(connection.client.wait(wanted, timeout_ms))
            if acked < wanted:
                partition = next(iter(ranges))[1]
                raise ProduceError(
                    f"only {acked} of the {wanted} replicas (redis.wait-replicas) acknowledged the "
                    f"records within {timeout_ms} ms",
                    topic=connection.topic, partition=partition,
                )
        return [
            ProducedRange(token, partition, first, last, count)
            for (token, partition), (first, last, count) in ranges.items()
        ]
