"""The commit protocol's records: what one Paimon snapshot records about the log,
atomically with its data files; what a write attempt hands the committer; what a
commit returns. (The commit itself: :mod:`tablelog.commit.committer`.)

A snapshot's properties say which writer committed which commit identifier, and
for every write attempt (writer token) it commits, where its records are in the
log: first and last position and count per partition. Readers trust nothing
else: a record is committed exactly when its token is in a snapshot and its
position lies in that token's range.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from tablelog.records import ProducedRange

FORMAT_VERSION = "1"
P_VERSION = "tablelog.version"
P_WRITER = "tablelog.writing.writer"
P_COMMIT = "tablelog.commit-identifier"
P_SYSTEM = "tablelog.log.system"
P_TOPIC = "tablelog.log.topic"
P_END = "tablelog.log.end-positions"
P_RANGES = "tablelog.log.ranges"
# Indices into the ranges of those the log system reported contiguous; a property of
# its own, so that the ranges keep the format every reader understands.
P_CONTIGUOUS = "tablelog.log.contiguous-ranges"
# The projection stream's part (tablelog.formats.projection): its topic, columns and ranges.
P_PROJECTION = "tablelog.log.projection"
# A snapshot that attaches the log it names to the table (a log attached to a table that had
# none, or moved from another log system or topic, or detached: system "none"); it commits no
# data. Snapshots before it were not committed to this log (docs/attaching.md).
P_ATTACHED = "tablelog.log.attached"
# When the committer began (epoch ms): with the snapshot's own time, the commit's latency.
P_COMMIT_STARTED = "tablelog.commit.started-ms"
# A relay's commit: the ids of the snapshots other writers committed whose changes its
# ranges carry (comma-separated). Transactional readers took those changes from the table
# files at those snapshots, so they skip these ranges; plain log consumers read them.
P_RELAYED = "tablelog.log.relayed-snapshots"

#: Commit kinds that change no row: a compaction rewrites files, an analysis adds statistics.
_KINDS_WITHOUT_CHANGES = frozenset({"COMPACT", "ANALYZE"})


def is_foreign(properties: Mapping[str, str], commit_kind: str) -> bool:
    """Whether a snapshot is one another writer committed (pypaimon directly, a Java
    engine, a procedure) with changes in it: it has no log-commit record, and it is not
    a compaction. Readers take its changes from the table files
    (:mod:`tablelog.reading.foreign`)."""
    return P_VERSION not in properties and commit_kind not in _KINDS_WITHOUT_CHANGES


def shown_log(log: tuple[str, str]) -> str:
    """A log (system, topic) as errors name it."""
    system, topic = log
    return "no log (log.system=none)" if system == "none" else f"{system} topic {topic!r}"


def new_token(prefix: str = "") -> str:
    """A writer token: unique per write attempt (64 random bits, 16 hex characters),
    after ``prefix``: the table's tag (:func:`tablelog.identity.token_prefix`), which
    lets eventual readers of a shared topic leave out other tables' records."""
    return prefix + secrets.token_hex(8)


#: What the token of a relay's records of a foreign snapshot has after the table's prefix, then the id in hex.
RELAY_TOKEN_TAG = "relay"


def relay_token(prefix: str, snapshot_id: int) -> str:
    """The token of the relay's records of foreign snapshot ``snapshot_id`` (``prefix``: the
    table's token prefix): the same in every relay run, so that a run finds what a killed
    one produced (:mod:`tablelog.relay`)."""
    return f"{prefix}{RELAY_TOKEN_TAG}{snapshot_id:x}"


def relayed_snapshot(token: str, prefix: str) -> int | None:
    """The foreign snapshot whose changes a record of ``token`` carries, when a relay of this
    table (``prefix``) wrote it; None for a writer's token. For eventual readers, which see
    records before any snapshot names them."""
    tagged = prefix + RELAY_TOKEN_TAG
    if not token.startswith(tagged):
        return None
    try:
        return int(token[len(tagged):], 16)
    except ValueError:
        return None


def _ranges_json(ranges: Sequence[ProducedRange]) -> list[list[Any]]:
    return [[r.token, r.partition, r.first, r.last, r.count] for r in ranges]


def _ranges_of(encoded: Sequence[Sequence[Any]], contiguous: set[int]) -> tuple[ProducedRange, ...]:
    return tuple(
        ProducedRange(token, int(p), int(first), int(last), int(count), i in contiguous)
        for i, (token, p, first, last, count) in enumerate(encoded)
    )


@attrs.frozen
class LogProjection:
    """Where a snapshot's records of the log's projection stream are (:mod:`tablelog.formats.projection`)."""

    topic: str
    #: Its columns (the key's among them), by name in the schema the snapshot was written with.
    columns: tuple[str, ...]
    ranges: tuple[ProducedRange, ...]

    def to_json(self) -> str:
        return json.dumps({
            "topic": self.topic, "columns": list(self.columns), "ranges": _ranges_json(self.ranges),
            "contiguous": [i for i, r in enumerate(self.ranges) if r.contiguous],
        }, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> LogProjection:
        data = json.loads(text)
        return cls(data["topic"], tuple(data["columns"]), _ranges_of(data["ranges"], set(data.get("contiguous", []))))


@attrs.frozen
class LogCommitRecord:
    """The log part of one snapshot (absent for snapshots tablelog did not write)."""

    writer: str
    commit_identifier: int
    system: str
    topic: str
    ranges: tuple[ProducedRange, ...]
    end_positions: Mapping[int, int]
    #: When the committer began this commit (epoch ms; None in snapshots of older versions).
    commit_started_ms: int | None = None
    #: The projection stream's records of this snapshot (None: the table has none, or
    #: the snapshot was written without it).
    projection: LogProjection | None = None
    #: A relay's commit: the foreign snapshots whose changes its ranges carry (see :data:`P_RELAYED`).
    relayed_snapshots: tuple[int, ...] = ()
    #: Whether this snapshot attached its log to the table (:data:`P_ATTACHED`).
    attached: bool = False

    def is_of(self, system: str, topic: str) -> bool:
        """Whether this snapshot committed to the log ``system`` topic ``topic``: a table's log
        changes only by an alter, which commits a snapshot whose record names the new one."""
        return self.system == system and self.topic == (topic if system != "none" else "")

    def tokens(self) -> set[str]:
        return {r.token for r in self.ranges}

    def ranges_by_partition(self) -> dict[int, list[ProducedRange]]:
        result: dict[int, list[ProducedRange]] = {}
        for r in self.ranges:
            result.setdefault(r.partition, []).append(r)
        for ranges in result.values():
            ranges.sort(key=lambda r: r.first)
        return result

    def to_properties(self) -> dict[str, str]:
        # Positions may exceed 64 bits (Pulsar message ids): the stdlib json keeps them exact.
        contiguous = [i for i, r in enumerate(self.ranges) if r.contiguous]
        return {
            P_VERSION: FORMAT_VERSION,
            P_WRITER: self.writer,
            P_COMMIT: str(self.commit_identifier),
            P_SYSTEM: self.system,
            P_TOPIC: self.topic,
            P_END: json.dumps({str(p): e for p, e in sorted(self.end_positions.items())}),
            P_RANGES: json.dumps(_ranges_json(self.ranges), separators=(",", ":")),
            **({P_CONTIGUOUS: json.dumps(contiguous, separators=(",", ":"))} if contiguous else {}),
            **({P_COMMIT_STARTED: str(self.commit_started_ms)} if self.commit_started_ms is not None else {}),
            **({P_PROJECTION: self.projection.to_json()} if self.projection is not None else {}),
            **({P_RELAYED: ",".join(map(str, self.relayed_snapshots))} if self.relayed_snapshots else {}),
            **({P_ATTACHED: self.system} if self.attached else {}),
        }

    def in_projection(self) -> LogCommitRecord:
        """This snapshot's commit as the projection stream has it: its topic and ranges."""
        assert self.projection is not None
        return attrs.evolve(self, topic=self.projection.topic, ranges=self.projection.ranges)

    @classmethod
    def from_properties(cls, properties: Mapping[str, str]) -> LogCommitRecord | None:
        if P_VERSION not in properties:
            return None
        contiguous = set(json.loads(properties.get(P_CONTIGUOUS, "[]")))
        ranges = _ranges_of(json.loads(properties.get(P_RANGES, "[]")), contiguous)
        projection = properties.get(P_PROJECTION)
        relayed = properties.get(P_RELAYED, "")
        return cls(
            writer=properties[P_WRITER],
            commit_identifier=int(properties[P_COMMIT]),
            system=properties.get(P_SYSTEM, "none"),
            topic=properties.get(P_TOPIC, ""),
            ranges=ranges,
            end_positions={int(p): int(e) for p, e in json.loads(properties.get(P_END, "{}")).items()},
            commit_started_ms=int(properties[P_COMMIT_STARTED]) if P_COMMIT_STARTED in properties else None,
            projection=LogProjection.from_json(projection) if projection else None,
            relayed_snapshots=tuple(int(i) for i in relayed.split(",") if i.strip()),
            attached=P_ATTACHED in properties,
        )


@attrs.frozen
class WriteReceipt:
    """What one write attempt hands to the committer (picklable; Spark sends it to the driver).

    An attempt that dies sends none: its records stay in the log, uncommitted,
    and no reader ever returns them.
    """

    token: str
    task: str
    rows: int
    ranges: tuple[ProducedRange, ...]
    paimon_messages: Sequence[Any] = attrs.field(repr=False)
    #: Where its records of the log's projection stream landed (:mod:`tablelog.formats.projection`).
    projection_ranges: tuple[ProducedRange, ...] = ()
    #: The log it wrote to, (system, topic) (the topic empty without a log): a commit into a
    #: table whose log changed since is refused (None: a receipt that does not say).
    log: tuple[str, str] | None = None
    #: A merged-changelog table's attempt (:mod:`tablelog.writing.merged`): the snapshot its
    #: changes were computed against (0: before the first), and the primary keys it wrote;
    #: the committer computes them again when another write of those keys came between.
    base_snapshot: int | None = None
    written_keys: Any = attrs.field(default=None, repr=False)  # a pyarrow Table


@attrs.frozen
class CommitResult:
    """The outcome of a commit (:func:`tablelog.commit.committer.commit`)."""

    #: The snapshot holding this commit (None: nothing to commit, or, with ``committed=False``,
    #: a replay of a commit whose snapshot has expired).
    snapshot_id: int | None
    committed: bool  # False when the commit identifier had already been committed
    rows: int
    records: int
    #: Why the log system's ``commit`` hook failed (``"ErrorClass: message"``); None when
    #: it ran or there is none. The snapshot is committed either way; committing the
    #: same identifier again runs the hook again.
    hook_error: str | None = None
    #: What failed in the table's background maintenance (snapshot expiry, compaction) since
    #: the previous commit of this process, one ``"step: ErrorClass: message"`` per line;
    #: None when nothing did. It never fails a commit (:mod:`tablelog.commit.maintenance`).
    maintenance_error: str | None = None
