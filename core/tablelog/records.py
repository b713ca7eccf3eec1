"""Types that cross the boundary between the core and a log-system plugin.

A plugin imports them from :mod:`tablelog.plugin` (with the hook marker and the errors):
records go out as :class:`ProduceBatch`, come back as :class:`LogRecord`, and
positions are plain non-negative ``int`` values.

**Positions.** A position addresses one record in one partition. Positions are
non-negative Python ints that grow strictly in log order within a partition;
they need not be dense (Kafka offsets are, Pulsar message ids are not). An
*end position* is an exclusive bound: every record written after it has a
position ``>=`` the end. Positions travel in JSON (snapshots, reader positions),
so a plugin must encode its native ids into ints that round-trip exactly.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import attrs
import numpy as np


class RowKind(str, enum.Enum):
    """The change a record carries, as Paimon and Flink name them."""

    INSERT = "+I"
    UPDATE_BEFORE = "-U"
    UPDATE_AFTER = "+U"
    DELETE = "-D"

    @classmethod
    def parse(cls, value: str) -> RowKind:
        try:
            return cls(value)
        except ValueError:
            allowed = ", ".join(k.value for k in cls)
            raise ValueError(f"unknown row kind {value!r}; allowed: {allowed}") from None

    @property
    def is_retraction(self) -> bool:
        return self in (RowKind.UPDATE_BEFORE, RowKind.DELETE)


#: Each kind's byte, as Paimon's files store it (``RowKind.toByteValue``).
KIND_BYTES: dict[str, int] = {"+I": 0, "-U": 1, "+U": 2, "-D": 3}


def kind_bytes(kinds: Sequence[str]) -> np.ndarray:
    """The bytes (:data:`KIND_BYTES`) of ``kinds``, as int8: one dictionary look-up a row,
    where Arrow's conversion of a list of enum members goes through each one's ``str``."""
    return np.fromiter(map(KIND_BYTES.__getitem__, kinds), np.int8, len(kinds))


@attrs.frozen
class LogConfig:
    """Everything a plugin needs to open its log for one table.

    ``options`` holds the table options of this log system with the
    ``<system>.`` prefix removed (``kafka.bootstrap.servers`` arrives as
    ``bootstrap.servers``). Secrets are in there too: a plugin must never log
    or echo them; :func:`tablelog.plugin.redact` hides them.
    """

    system: str
    table: str  # "db.name"
    topic: str  # resolved: the `<system>.topic` option or the derived default
    partitions: int  # partitions the table needs (>= its bucket count)
    auto_register: bool
    options: Mapping[str, str] = attrs.field(factory=dict, repr=False)
    warehouse: str = ""  # where the embedded `filesystem` log keeps its files by default


@attrs.frozen
class ProduceBatch:
    """Records of one write attempt for one partition, in order.

    Record ``i`` has sequence number ``first_seq + i`` within (token, partition);
    sequence numbers are dense from 0, so a reader can drop a duplicate that a
    retrying client wrote twice.
    """

    token: str
    partition: int
    keys: Sequence[bytes | None]
    values: Sequence[bytes]
    timestamp_ms: int
    first_seq: int = 0

    def __len__(self) -> int:
        return len(self.values)


class LogRecord(NamedTuple):
    """One record as fetched from a log.

    ``token`` and ``seq`` are ``None`` for a record that tablelog did not write
    (foreign bytes on the topic); the core reports or skips those.
    """

    position: int
    key: bytes | None
    value: bytes | None
    token: str | None
    seq: int | None
    timestamp_ms: int


@attrs.frozen
class ProducedRange:
    """Where one attempt's records landed in one partition (inclusive bounds).

    ``contiguous``: the log system knows that no other record lies between
    ``first`` and ``last`` (Pulsar: consecutive entries of one producer, each a
    batch of this attempt's records only). Readers then need no per-record
    token there. Logs with consecutive integer positions need not say it: a
    count equal to ``last - first + 1`` says the same.
    """

    token: str
    partition: int
    first: int
    last: int
    count: int
    contiguous: bool = False


@attrs.frozen
class FetchResult:
    """Records fetched from one partition, in log order, and where to go on.

    ``next_position`` is the position to fetch from next: past the last
    record returned, or unchanged when nothing was returned.
    """

    records: list[LogRecord]
    next_position: int


@attrs.frozen
class ValuesResult:
    """Record values fetched from one partition, in log order, without their metadata.

    ``positions[i]`` is the position of ``values[i]`` (a ``range`` when the
    positions are consecutive integers: no list to build); ``next_position`` as
    in :class:`FetchResult`.
    """

    values: list[bytes | None]
    positions: Sequence[int]
    next_position: int


class SeekKind(str, enum.Enum):
    EARLIEST = "earliest"
    LATEST = "latest"
    TIMESTAMP = "timestamp"
    POSITION = "position"


@attrs.frozen
class SeekSpec:
    """Where a reader wants to start in one partition.

    ``value`` is the epoch-millisecond time for ``TIMESTAMP`` and the position
    for ``POSITION``; it is ignored otherwise.
    """

    kind: SeekKind
    value: int = 0

    @classmethod
    def earliest(cls) -> SeekSpec:
        return cls(SeekKind.EARLIEST)

    @classmethod
    def latest(cls) -> SeekSpec:
        return cls(SeekKind.LATEST)

    @classmethod
    def timestamp(cls, millis: int) -> SeekSpec:
        return cls(SeekKind.TIMESTAMP, millis)

    @classmethod
    def position(cls, position: int) -> SeekSpec:
        return cls(SeekKind.POSITION, position)


@attrs.frozen
class CommittedLog:
    """What one table snapshot committed to the log, handed to the `commit` hook."""

    snapshot_id: int
    writer: str
    commit_identifier: int
    ranges: tuple[ProducedRange, ...]
    end_positions: Mapping[int, int]


@attrs.frozen
class OptionSpec:
    """One option a plugin understands, for validation and the docs' option table.

    ``key`` is the full key (``kafka.bootstrap.servers``). Keys a plugin does not
    declare but that carry its prefix still pass through to its client.

    ``names_topic``: the option names where the table's records are stored (a topic, a
    stream, a database table). tablelog resolves it into ``LogConfig.topic``; for every
    further stream of the table (the projection stream, ``<topic>.projection``) the
    plugin gets the option, when given, with the stream's suffix appended, as
    ``LogConfig.topic``: no stream shares another's storage. At most one option of a log
    system names its topic, without a default; without one, ``<system>.topic`` does.

    ``defines_table``: the table's records depend on the value, so it is stored with the
    table when it is created (its default too) and, given again when the table is
    opened, may be repeated but not changed (:mod:`tablelog.definition`). True for the
    option that names the topic; never for a secret (never stored, so never compared).
    """

    key: str
    doc: str
    required: bool = False
    default: str | None = None
    secret: bool = False
    names_topic: bool = False
    defines_table: bool = attrs.field(default=attrs.Factory(lambda spec: spec.names_topic, takes_self=True))
