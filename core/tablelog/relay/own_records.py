"""What an earlier relay run produced and did not commit (it was killed in between).

A relay produces a foreign snapshot's changes with a token derived from the snapshot's
id (:func:`tablelog.commit.log_commit.relay_token`), and its records are deterministic: the same changes, encoded
in the same order, record ``seq`` ``i`` of a partition always the same change. So a
relay that starts again looks in the log after the end positions committed before that
snapshot (an earlier run produced its records later than those), finds the records of
the tokens it is about to produce, and produces only the sequence numbers missing:
a plain consumer sees each change once, and the relay's commit names them all.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping

import attrs

from tablelog.logs.client import LogClient
from tablelog.records import ProducedRange, SeekSpec

#: Records per fetch while looking.
_FETCH = 10_000


@attrs.define
class FoundRecords:
    """One token's records found in the log: per partition, seq -> position."""

    positions: dict[int, dict[int, int]] = attrs.field(factory=lambda: defaultdict(dict))

    def count(self) -> int:
        return sum(len(p) for p in self.positions.values())

    def has(self, partition: int, seq: int) -> bool:
        return seq in self.positions.get(partition, {})

    def merged(self, token: str, flushed: list[ProducedRange]) -> tuple[ProducedRange, ...]:
        """The ranges of the token's records: those found, and those ``flushed`` since."""
        result = []
        by_partition = {r.partition: r for r in flushed}
        for partition in sorted({*self.positions, *by_partition}):
            found = self.positions.get(partition, {})
            new = by_partition.get(partition)
            if not found:
                assert new is not None
                result.append(new)
                continue
            firsts = [min(found.values()), *([new.first] if new else [])]
            lasts = [max(found.values()), *([new.last] if new else [])]
            result.append(ProducedRange(token, partition, min(firsts), max(lasts),
                                        len(found) + (new.count if new else 0)))
        return tuple(result)


def find_own_records(
    log: LogClient, partitions: int, start: Mapping[int, int], tokens: Collection[str],
) -> dict[str, FoundRecords]:
    """The records of ``tokens`` in the log's ``partitions`` from ``start`` (per partition;
    a partition it lacks: from the log's earliest) to the log's end now."""
    wanted = set(tokens)
    found: dict[str, FoundRecords] = {}
    ends = log.end_positions(list(range(partitions)))
    for partition in range(partitions):
        position = start.get(partition)
        if position is None:
            position = log.seek(partition, SeekSpec.earliest())
        end = ends.get(partition, 0)
        while position < end:
            fetched = log.fetch(partition, position, _FETCH, timeout_s=1.0)
            if not fetched.records:
                break
            for record in fetched.records:
                if record.token in wanted and record.seq is not None:
                    found.setdefault(record.token, FoundRecords()).positions[partition].setdefault(
                        record.seq, record.position)
            position = fetched.next_position
    return found
