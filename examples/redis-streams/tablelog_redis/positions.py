"""Redis stream entry ids <-> tablelog positions.

A stream entry id is ``<ms>-<seq>``: two unsigned 64-bit numbers, compared as the
pair ``(ms, seq)``. The server picks ``ms`` from its clock and bumps ``seq`` for
entries within the same millisecond (or while its clock stands behind the last
id). tablelog positions are non-negative ints, ordered like the log and stored
in JSON, so the encoding must keep the order and round-trip every id exactly::

    position = ms << 64 | seq          # ms * 2**64 + seq
    ms, seq = position >> 64, position & (2**64 - 1)

Why a 64-bit shift and not a narrower one (``ms << 20 | seq`` would give
Kafka-sized numbers): ``seq`` is 64 bits wide in Redis. A million entries in one
millisecond is unlikely, but after the server's clock steps back Redis keeps the
last ``ms`` and counts ``seq`` up for as long as the step lasts, and a foreign
writer may ``XADD`` any explicit id. With the full width every id the stream can
hold has exactly one position and every position (below ``2**128``) exactly one
id, so no case needs an error. The price is size: positions of current ids are
about ``1.7e12 * 2**64``, 32 decimal digits, beyond int64 (Python ints and JSON
carry them; tablelog never narrows positions).

The bijection also makes "the entry just before a position" exact: XREAD takes
an *exclusive* start id, which is ``entry_id(position - 1)``.
"""

from __future__ import annotations

SEQ_BITS = 64
SEQ_MASK = (1 << SEQ_BITS) - 1
#: One past the largest position: the id ``18446744073709551615-18446744073709551615`` + 1.
LIMIT = 1 << (2 * SEQ_BITS)


def to_position(ms: int, seq: int) -> int:
    if not (0 <= ms <= SEQ_MASK and 0 <= seq <= SEQ_MASK):
        raise ValueError(f"not a stream entry id: {ms}-{seq}")
    return ms << SEQ_BITS | seq


def parse_id(entry_id: bytes | str) -> tuple[int, int]:
    """``b"1700000000000-3"`` -> ``(1700000000000, 3)``."""
    text = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
    ms, sep, seq = text.partition("-")
    if not sep or not ms.isdigit() or not seq.isdigit():
        raise ValueError(f"not a stream entry id: {text!r}")
    return int(ms), int(seq)


def encode(entry_id: bytes | str) -> int:
    """The position of the stream entry ``entry_id``."""
    return to_position(*parse_id(entry_id))


def decode(position: int) -> tuple[int, int]:
    """``(ms, seq)`` of ``position``; ValueError for anything that is not a position."""
    if isinstance(position, bool) or not isinstance(position, int) or not 0 <= position < LIMIT:
        raise ValueError(f"position {position!r} is not an int in [0, 2**128)")
    return position >> SEQ_BITS, position & SEQ_MASK


def entry_id(position: int) -> str:
    """The stream entry id ``"<ms>-<seq>"`` of ``position`` (for XRANGE/XREAD)."""
    ms, seq = decode(position)
    return f"{ms}-{seq}"


def describe(position: int) -> str:
    """``position`` with its entry id, for error messages."""
    try:
        return f"{position} (entry id {entry_id(position)})"
    except ValueError:
        return repr(position)
