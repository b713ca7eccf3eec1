"""The on-disk record frame of the file log: encoding, parsing and walking.

One partition is one append-only file of frames. A record's position is the byte
offset of its frame in that file, so positions grow strictly but are not dense,
and the end position is the byte length of the valid data.

Frame layout (big-endian)::

    header   16 bytes  magic "TL" (u16) | version (u8) | flags (u8) |
                       payload length n (u32) | payload CRC32 (u32) |
                       header CRC32 over the 12 bytes before it (u32)
    payload   n bytes  seq (i64) | timestamp_ms (i64) | token length (u16) |
                       key length (i32, -1 = null key) | token | key | value
    trailer   4 bytes  frame length = 16 + n + 4 (u32)

Why each part is there:

* The header CRC protects the length: a flipped length bit would otherwise make a
  frame in the middle look like an incomplete one, and an appender repairing a
  torn tail could then cut off valid records after it.
* The payload CRC makes a corrupt record fail loudly instead of being returned.
* The trailer lets anyone confirm in two small reads that the file ends exactly
  on a frame boundary (the usual case), so finding the end of a partition does
  not need a walk over the whole file. Only after a writer died mid-write is a
  walk needed, and then it runs once.

A *torn tail* is a frame whose bytes do not all exist yet (a writer is appending
or died while appending): it is never parsed as data. A complete frame that
fails a check is *corrupt*.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Iterator
from typing import NamedTuple

from tablelog.plugin import LogRecord, ProduceBatch

MAGIC = 0x544C  # "TL"
VERSION = 1

_HEADER_FIELDS = struct.Struct(">HBBII")  # magic, version, flags, payload length, payload crc
_HEADER_CRC = struct.Struct(">I")
HEADER = struct.Struct(">HBBIII")  # the same fields plus the header crc, for parsing
FIXED = struct.Struct(">qqHi")  # seq, timestamp_ms, token length, key length (-1 = null)
TRAILER = struct.Struct(">I")

HEADER_SIZE = HEADER.size  # 16
HEADER_CHECKED = _HEADER_FIELDS.size  # 12 bytes covered by the header crc
OVERHEAD = HEADER_SIZE + TRAILER.size  # bytes of a frame besides its payload
FIXED_SIZE = FIXED.size
MIN_FRAME = OVERHEAD + FIXED_SIZE  # the smallest possible frame (empty token, key, value)
_TIMESTAMP_AT = HEADER_SIZE + 8  # offset of timestamp_ms inside a frame
_TIMESTAMP = struct.Struct(">q")
_MAX_PAYLOAD = 0xFFFFFFFF - OVERHEAD

#: ``read(offset, size) -> bytes``: how the walking helpers read the file (``os.pread``).
Reader = Callable[[int, int], bytes]


class FrameError(ValueError):
    """A complete frame failed a check; ``offset`` is where it starts in the buffer."""

    def __init__(self, offset: int, reason: str):
        super().__init__(reason)
        self.offset = offset
        self.reason = reason


class FrameHead(NamedTuple):
    """Where one complete frame sits, and its timestamp (for timestamp seeks)."""

    position: int
    length: int
    timestamp_ms: int


def encode_batch(batch: ProduceBatch) -> tuple[bytes, list[int]]:
    """Encode ``batch`` as consecutive frames.

    Returns the bytes and each frame's offset relative to the start of the bytes,
    so the caller can turn them into positions once it knows where they land.
    """
    keys, values = batch.keys, batch.values
    if len(keys) != len(values):
        raise ValueError(f"batch has {len(keys)} keys but {len(values)} values")
    token = batch.token.encode("utf-8")
    if len(token) > 0xFFFF:
        raise ValueError("writer token is longer than 65535 bytes")
    token_len = len(token)
    timestamp = batch.timestamp_ms
    seq = batch.first_seq
    parts: list[bytes] = []
    offsets: list[int] = []
    offset = 0
    crc32 = zlib.crc32
    fields_pack = _HEADER_FIELDS.pack
    for key, value in zip(keys, values, strict=True):
        # The small fixed part, token and key are joined once; the value (usually
        # the bulk) is only checksummed here and copied by the final join.
        prefix = FIXED.pack(seq, timestamp, token_len, -1 if key is None else len(key)) + token
        if key is not None:
            prefix += key
        size = len(prefix) + len(value)
        if size > _MAX_PAYLOAD:
            raise ValueError(f"record with sequence number {seq} is too large ({size} bytes)")
        fields = fields_pack(MAGIC, VERSION, 0, size, crc32(value, crc32(prefix)))
        parts += (
            fields,
            _HEADER_CRC.pack(crc32(fields)),
            prefix,
            value,
            TRAILER.pack(size + OVERHEAD),
        )
        offsets.append(offset)
        offset += size + OVERHEAD
        seq += 1
    return b"".join(parts), offsets


def _check_header(buf: bytes | memoryview, at: int) -> int:
    """Validate the header at ``buf[at:]`` (16 bytes must be there); return the frame length."""
    magic, version, _flags, size, _pcrc, hcrc = HEADER.unpack_from(buf, at)
    if magic != MAGIC:
        raise FrameError(at, "no frame starts here (bad magic)")
    if zlib.crc32(memoryview(buf)[at : at + HEADER_CHECKED]) != hcrc:
        raise FrameError(at, "frame header checksum mismatch")
    if version != VERSION:
        raise FrameError(at, f"unsupported frame version {version}")
    if size < FIXED.size:
        raise FrameError(at, f"payload of {size} bytes is shorter than its fixed fields")
    return int(size) + OVERHEAD


def parse_records(
    buf: bytes, base: int, limit: int, max_records: int
) -> tuple[list[LogRecord], int, int, FrameError | None]:
    """Decode complete frames from ``buf`` (which starts at file offset ``base``).

    ``limit`` is the file size the caller saw: a frame reaching past it is a torn
    tail (incomplete), not an error. Stops at ``max_records``, at the first frame
    not wholly inside ``buf``, or at the first corrupt frame.

    Returns ``(records, consumed, need, error)``: ``consumed`` bytes of whole
    frames; ``need`` the byte length of the frame at ``base + consumed`` when
    parsing stopped because ``buf`` ends inside it (0 otherwise); ``error`` the
    corrupt frame at ``base + consumed``, if that is why parsing stopped.
    """
    records: list[LogRecord] = []
    view = memoryview(buf)
    size = len(buf)
    at = 0
    crc32 = zlib.crc32
    head_unpack = HEADER.unpack_from
    fixed_unpack = FIXED.unpack_from
    tokens: dict[bytes, str] = {}  # one decode per writer token, not per record
    append = records.append
    new_tuple = tuple.__new__
    while len(records) < max_records:
        if at + HEADER_SIZE > size:
            return records, at, HEADER_SIZE if base + at + HEADER_SIZE <= limit else 0, None
        magic, version, _flags, payload_size, payload_crc, header_crc = head_unpack(buf, at)
        if (
            magic != MAGIC
            or version != VERSION
            or payload_size < FIXED_SIZE
            or crc32(view[at : at + HEADER_CHECKED]) != header_crc
        ):
            try:  # the slow path names what is wrong
                _check_header(buf, at)
            except FrameError as err:
                return records, at, 0, err
        length = payload_size + OVERHEAD
        if at + length > size:
            return records, at, length if base + at + length <= limit else 0, None
        start = at + HEADER_SIZE
        end = start + payload_size
        if crc32(view[start:end]) != payload_crc:
            return records, at, 0, FrameError(at, "record checksum mismatch")
        seq, timestamp, token_len, key_len = fixed_unpack(buf, start)
        cursor = start + FIXED_SIZE
        if cursor + token_len + (key_len if key_len > 0 else 0) > end:
            return records, at, 0, FrameError(at, "record fields overrun the payload")
        raw_token = buf[cursor : cursor + token_len]
        token = tokens.get(raw_token)
        if token is None:
            try:
                token = tokens[raw_token] = raw_token.decode("utf-8")
            except UnicodeDecodeError:
                return records, at, 0, FrameError(at, "writer token is not UTF-8")
        cursor += token_len
        if key_len < 0:
            key = None
        else:
            key = buf[cursor : cursor + key_len]
            cursor += key_len
        # tuple.__new__ skips NamedTuple's Python-level constructor: a third of the time.
        append(new_tuple(LogRecord, (base + at, key, buf[cursor:end], token, seq, timestamp)))
        at += length
    return records, at, 0, None


def iter_frame_heads(read: Reader, start: int, stop: int, chunk: int) -> Iterator[FrameHead]:
    """Yield the complete frames in ``[start, stop)`` (``start`` is a frame boundary),
    checking headers only; stops before a torn tail.

    ``read(offset, size)`` returns file bytes. Reads ``chunk`` bytes at a time and
    jumps over frames bigger than a chunk without reading their payload.
    Raises :class:`FrameError` (with ``offset`` relative to the file) on a bad header.
    """
    position = start
    while position < stop:
        buf = read(position, min(chunk, stop - position))
        if len(buf) < MIN_FRAME:
            return  # a frame is never shorter than this: the tail is torn
        at = 0
        while at + MIN_FRAME <= len(buf):
            try:
                length = _check_header(buf, at)
            except FrameError as err:
                raise FrameError(position + at, err.reason) from None
            if position + at + length > stop:
                return
            (timestamp,) = _TIMESTAMP.unpack_from(buf, at + _TIMESTAMP_AT)
            yield FrameHead(position + at, length, timestamp)
            at += length
        position += at


def tail_is_complete(read: Reader, size: int) -> bool:
    """Whether a file of ``size`` bytes ends exactly after a whole frame (or is empty).

    Follows the last frame's trailer back to its header: two small reads. A torn
    tail fails this (its last four bytes are not a trailer that points at a valid
    header), as does a file whose end is being appended right now.
    """
    if size == 0:
        return True
    if size < MIN_FRAME:
        return False
    (length,) = TRAILER.unpack(read(size - TRAILER.size, TRAILER.size))
    start = size - length
    if length < MIN_FRAME or start < 0:
        return False
    head = read(start, HEADER_SIZE)
    try:
        return len(head) == HEADER_SIZE and _check_header(head, 0) == length
    except FrameError:
        return False


def frame_length_at(read: Reader, position: int) -> int | None:
    """The length of the frame whose valid header starts at ``position``, else None."""
    head = read(position, HEADER_SIZE)
    if len(head) < HEADER_SIZE:
        return None
    try:
        return _check_header(head, 0)
    except FrameError:
        return None
