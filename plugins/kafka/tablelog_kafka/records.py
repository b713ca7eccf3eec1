"""Kafka messages as LogRecords: tablelog's token and seq headers read, tokens decoded once.

Reading the headers is confluent-kafka's largest per-record cost
(``Message.headers()`` builds a list of tuples per record; see
docs/performance-history.md): ``fetch_values`` skips them.
"""

from __future__ import annotations

from typing import Any

from confluent_kafka import Message

from tablelog.plugin import LogRecord

from .producer import SEQ_HEADER, TOKEN_HEADER


class Tokens(dict[bytes, str]):
    """utf-8 token bytes -> str, decoded once per distinct token."""

    def __missing__(self, raw: bytes) -> str:
        if len(self) > 10_000:
            self.clear()
        text = raw.decode("utf-8")
        self[raw] = text
        return text


def to_record(msg: Message, tokens: Tokens) -> LogRecord:
    """Slow path: headers in another order, missing, or undecodable (foreign records)."""
    token: str | None = None
    seq: int | None = None
    headers: Any = msg.headers() or ()
    for name, raw in headers:
        if not isinstance(raw, bytes):
            continue
        if name == TOKEN_HEADER and token is None:
            try:
                token = tokens[raw]
            except UnicodeDecodeError:
                token = None
        elif name == SEQ_HEADER and seq is None:
            try:
                seq = int(raw) if raw.isdigit() else None
            except ValueError:
                seq = None
    if token is None or seq is None:
        token, seq = None, None
    return LogRecord(msg.offset() or 0, msg.key(), msg.value(), token, seq, msg.timestamp()[1])


def to_records(messages: list[Message], tokens: Tokens) -> list[LogRecord]:
    """The messages (of one partition, in order) as records."""
    records: list[LogRecord] = []
    append = records.append
    new = tuple.__new__  # what LogRecord(...) does, without its Python-level __new__
    for msg in messages:
        h: Any = msg.headers()  # list of (str, bytes | None) for a record
        # Fast path: the two headers tablelog writes, in the order it writes them.
        if h is not None and len(h) == 2:
            (tname, traw), (sname, sraw) = h
            if tname == TOKEN_HEADER and sname == SEQ_HEADER and traw and sraw.isdigit():
                try:
                    token = tokens[traw]
                except UnicodeDecodeError:
                    pass
                else:
                    append(new(LogRecord, (msg.offset(), msg.key(), msg.value(), token,
                                           int(sraw), msg.timestamp()[1])))
                    continue
        append(to_record(msg, tokens))
    return records
