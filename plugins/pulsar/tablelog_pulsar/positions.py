"""Pulsar message ids <-> tablelog positions (non-negative ints, ordered like the broker).

A Pulsar message id is ``(ledger_id, entry_id, batch_index, partition)``. Within one
partition topic the broker orders messages by ``(ledger_id, entry_id, batch_index)``;
``batch_index`` is ``-1`` for a message that was not batched. The partition is not
part of a position (positions are per partition; the partition is the topic).

The encoding packs the three numbers with the ledger in the most significant bits::

    position = ledger_id << 45 | entry_id << 14 | (batch_index + 1)

* ``batch_index + 1`` takes 14 bits: batch indexes -1..16382 (the producer's
  ``batching-max-messages`` is capped accordingly);
* ``entry_id`` takes 31 bits: 2^31 entries per ledger (pulsar-lite keeps one
  ledger per topic, so per partition; Apache Pulsar rolls ledgers far earlier);
* ``ledger_id`` is unbounded (a Python int), so the encoding is total for every
  real id and never wraps. Positions stay below 2^63 (a signed 64-bit value,
  JSON-safe for every JSON library tablelog uses) while ``ledger_id < 2^18``.
  pulsar-lite allocates ledger ids from one counter per broker (one per topic it
  creates); a large Apache Pulsar cluster can produce ledger ids above 2^18, and
  positions are then bigger Python ints that still round-trip exactly through
  the standard ``json`` module.

Integer order equals broker order because every field is a fixed-width unsigned
bit field below the ledger. ``decode`` is the exact inverse of ``encode``.

Message ids are rebuilt from these integer parts with keyword arguments
(``pulsar.MessageId(partition=, ledger_id=, entry_id=, batch_index=)``), never
through ``MessageId.serialize()``/``deserialize()``: its positional order is
``(partition, ledger_id, entry_id, batch_index)``, so a call written as
``MessageId(ledger, entry, ...)`` silently puts the entry id into the ledger id,
and ``deserialize`` returns a raw ``_pulsar.MessageId`` rather than a
``pulsar.MessageId``. Positions therefore do not depend on the client's wire
serialization at all.
"""

from __future__ import annotations

from typing import Any, NamedTuple

BATCH_BITS = 14
ENTRY_BITS = 31
_BATCH_MASK = (1 << BATCH_BITS) - 1
_ENTRY_MASK = (1 << ENTRY_BITS) - 1
MAX_BATCH_INDEX = _BATCH_MASK - 1  # 16382
MAX_ENTRY_ID = _ENTRY_MASK
#: Positions are below this while ledger ids are below 2^18.
SIGNED_64_LIMIT = 1 << 63


class MessagePosition(NamedTuple):
    """The broker-ordered parts of a message id."""

    ledger_id: int
    entry_id: int
    batch_index: int  # -1: not batched


class PositionRangeError(ValueError):
    """A message id or position outside what the encoding can represent."""


def encode(ledger_id: int, entry_id: int, batch_index: int) -> int:
    """The position of the message ``(ledger_id, entry_id, batch_index)``."""
    if ledger_id < 0:
        raise PositionRangeError(f"ledger id {ledger_id} is negative")
    if not 0 <= entry_id <= MAX_ENTRY_ID:
        raise PositionRangeError(f"entry id {entry_id} outside 0..{MAX_ENTRY_ID}")
    if not -1 <= batch_index <= MAX_BATCH_INDEX:
        raise PositionRangeError(f"batch index {batch_index} outside -1..{MAX_BATCH_INDEX}")
    return (ledger_id << (ENTRY_BITS + BATCH_BITS)) | (entry_id << BATCH_BITS) | (batch_index + 1)


def follows(previous: int, position: int) -> bool:
    """Whether ``position`` is the very next message after ``previous``: the next one of
    the same batch, or the first of the next entry of the same ledger (entry ids of a
    ledger are consecutive, so nothing can lie between)."""
    if position == previous + 1:
        return True
    return (position >> BATCH_BITS) == (previous >> BATCH_BITS) + 1 and position & _BATCH_MASK <= 1


def starts_entry(position: int) -> bool:
    """Whether ``position`` is an entry's first message (batch index 0, or -1: no batch)."""
    return position & _BATCH_MASK <= 1


def decode(position: int) -> MessagePosition:
    """The inverse of :func:`encode`."""
    if isinstance(position, bool) or not isinstance(position, int) or position < 0:
        raise PositionRangeError(f"position {position!r} is not a non-negative int")
    return MessagePosition(
        ledger_id=position >> (ENTRY_BITS + BATCH_BITS),
        entry_id=(position >> BATCH_BITS) & _ENTRY_MASK,
        batch_index=(position & _BATCH_MASK) - 1,
    )


def encode_message_id(message_id: Any) -> int:
    """The position of a ``pulsar.MessageId`` (or ``_pulsar.MessageId``)."""
    return encode(int(message_id.ledger_id()), int(message_id.entry_id()), int(message_id.batch_index()))


def to_message_id(position: int) -> Any:
    """A ``pulsar.MessageId`` for ``position`` (partition -1: the reader's topic is the partition)."""
    import pulsar

    parts = decode(position)
    return pulsar.MessageId(
        partition=-1, ledger_id=parts.ledger_id, entry_id=parts.entry_id, batch_index=parts.batch_index
    )


def next_entry(ledger_id: int, entry_id: int) -> int:
    """The smallest position of entry ``entry_id + 1`` (an exclusive bound past the entry)."""
    return encode(ledger_id, entry_id + 1, -1)


def batch_size(message_id: Any) -> int | None:
    """How many messages the batch of a *received* message id holds, or None.

    The Python client does not expose it, but the id's serialized form
    (``MessageIdData``) carries it in field 6 (``batch_size``) for a batched
    message. Only used to find an entry's last batch index, never for positions.
    """
    try:
        data = bytes(message_id.serialize())
    except Exception:  # noqa: BLE001 - an id that cannot serialize has no batch size for us
        return None
    index = 0
    try:
        while index < len(data):
            tag, index = _varint(data, index)
            field, wire = tag >> 3, tag & 7
            if wire == 0:
                value, index = _varint(data, index)
                if field == 6:
                    return value if value > 0 else None
            elif wire == 2:
                length, index = _varint(data, index)
                index += length
            elif wire == 1:
                index += 8
            elif wire == 5:
                index += 4
            else:
                return None
    except IndexError:
        return None
    return None


def _varint(data: bytes, index: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[index]
        index += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, index
        shift += 7
