"""How one tablelog record is laid out in a Pulsar message, and read back.

* value: the message payload, bytes as given;
* key: the message's partition key (Pulsar routes and compacts by it). The
  Python client takes a ``str`` key, so a key that is valid UTF-8 is sent as
  its text; any other key is sent base64-encoded with the property
  ``tablelog.key = b64``; an empty key has ``tablelog.key = empty``; no key
  means no partition key. Binary keys therefore come back byte for byte;
* properties ``tablelog.token`` (writer token) and ``tablelog.seq`` (sequence
  number within token and partition, decimal);
* event time: ``ProduceBatch.timestamp_ms``. A fetched record's timestamp is its
  event time, or the broker publish time when the message has none.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from tablelog.plugin import LogRecord

TOKEN = "tablelog.token"
SEQ = "tablelog.seq"
KEY_ENCODING = "tablelog.key"
KEY_B64 = "b64"
KEY_EMPTY = "empty"


def key_fields(key: bytes | None) -> tuple[str | None, str | None]:
    """(partition key, value of the ``tablelog.key`` property) for ``key``."""
    if key is None:
        return None, None
    if not key:
        return None, KEY_EMPTY
    try:
        return key.decode("utf-8"), None
    except UnicodeDecodeError:
        return base64.b64encode(key).decode("ascii"), KEY_B64


def record_key(partition_key: str, encoding: str | None) -> bytes | None:
    """The inverse of :func:`key_fields`."""
    if encoding == KEY_EMPTY:
        return b""
    if encoding == KEY_B64:
        try:
            return base64.b64decode(partition_key, validate=True)
        except (binascii.Error, ValueError):
            return partition_key.encode("utf-8")
    return partition_key.encode("utf-8") if partition_key else None


def to_record(message: Any, position: int) -> LogRecord:
    """A LogRecord for a received ``_pulsar.Message`` (or ``pulsar.Message``)."""
    properties = message.properties()
    token = properties.get(TOKEN)
    seq_text = properties.get(SEQ)
    seq: int | None = None
    if seq_text is not None:
        try:
            seq = int(seq_text)
        except ValueError:
            seq = None
    if seq is None:
        token = None  # not written by tablelog (or damaged metadata): report as foreign
    timestamp = message.event_timestamp() or message.publish_timestamp()
    return LogRecord(
        position=position,
        key=record_key(message.partition_key(), properties.get(KEY_ENCODING)),
        value=message.data(),
        token=token,
        seq=seq,
        timestamp_ms=int(timestamp),
    )
