"""Just enough HTTP/1.1 for :mod:`tablelog.testing.s3_faults`: where a message's head and
body end, read as raw bytes so that they pass on unmodified (their signatures stay valid)."""

from __future__ import annotations

from typing import BinaryIO

_MAX_LINE = 1 << 16
_BLANK = (b"\r\n", b"\n")


def _line(reader: BinaryIO) -> bytes:
    line = reader.readline(_MAX_LINE)
    if not line.endswith(b"\n"):
        raise EOFError()
    return line


def _exactly(reader: BinaryIO, count: int) -> bytes:
    data = reader.read(count)
    if len(data) < count:
        raise EOFError()
    return data


def read_head(reader: BinaryIO) -> tuple[bytes, list[str], dict[str, str]]:
    """A message's start line and headers, raw; the start line's words; the headers by
    lower-case name (repeated ones joined with commas)."""
    first = _line(reader)
    while first in _BLANK:  # a stray CRLF after a body is allowed between messages
        first = _line(reader)
    raw, headers = bytearray(first), dict[str, str]()
    while (line := _line(reader)) not in _BLANK:
        raw += line
        name, _, value = line.decode("latin-1").partition(":")
        key = name.strip().lower()
        headers[key] = f"{headers[key]},{value.strip()}" if key in headers else value.strip()
    return bytes(raw + line), first.decode("latin-1").split(), headers


def read_body(reader: BinaryIO, headers: dict[str, str], until_close: bool) -> bytes:
    """The body's bytes as sent (chunk framing and trailers included: an ``aws-chunked``
    body, signed chunk by chunk, is just bytes here)."""
    if "chunked" in headers.get("transfer-encoding", "").lower():
        raw = bytearray()
        while True:
            raw += (size_line := _line(reader))
            size = int(size_line.split(b";")[0].strip(), 16)
            if size == 0:
                break
            raw += _exactly(reader, size + 2)
        while (line := _line(reader)) not in _BLANK:
            raw += line
        return bytes(raw + line)
    if "content-length" in headers:
        return _exactly(reader, int(headers["content-length"]))
    return reader.read() if until_close else b""


def read_response(reader: BinaryIO, method: str) -> tuple[int, bytes, bool]:
    """The upstream's final answer: its status, its bytes, and whether the connection ends with it."""
    status = 100
    while 100 <= status < 200:
        # Interim answers (the server's own 100 Continue) are dropped: the client had the
        # proxy's before it sent the body.
        head, words, headers = read_head(reader)
        status = int(words[1])
    closes = "close" in headers.get("connection", "").lower()
    if method.upper() == "HEAD" or status in (204, 304):
        return status, head, closes
    framed = "content-length" in headers or "chunked" in headers.get("transfer-encoding", "").lower()
    return status, head + read_body(reader, headers, until_close=True), closes or not framed
