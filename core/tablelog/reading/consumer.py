"""A reader's Paimon consumer (``consumer-id``): where it resumes, and the progress it
records so that snapshot expiry keeps what it still needs.

The consumer file holds the reader's *next snapshot* (Paimon's ``nextSnapshot``): the
first snapshot whose changes it has not all returned (during the full scan of a hybrid
read: the snapshot being scanned). It is written when a poll starts, with the position
the previous poll left the reader at, as Kafka consumers commit on their next poll:
what a caller asks more after has been consumed. :meth:`ChangelogReader.close` writes
it too. An unchanged position is written again now and then so that a reader which
is alive but idle is not taken for gone by ``consumer.expiration-time``.

A reader started with a consumer id and no position resumes at the start of the
consumer's next snapshot. That is exact at snapshot boundaries; a reader that stopped
inside a snapshot returns that snapshot's changes again from its start, so for
exactly-once across restarts save :attr:`ChangelogReader.position` as well.
"""

from __future__ import annotations

import datetime
import time
from typing import TYPE_CHECKING

from tablelog.errors import OptionError
from tablelog.options import Consistency
from tablelog.positions import ReaderPosition, log_name

if TYPE_CHECKING:
    from tablelog.options import TableOptions
    from tablelog.table_view import TableView

#: How often an unchanged position is written again, at most (a quarter of
#: ``consumer.expiration-time`` when that is shorter).
_REFRESH_S = 60.0


def next_snapshot(position: ReaderPosition) -> int:
    """The first snapshot ``position`` still needs."""
    return position.snapshot if position.full_pending else position.snapshot + 1


class ConsumerProgress:
    """Records one reader's progress as Paimon consumer ``consumer_id``."""

    def __init__(self, table: TableView, options: TableOptions, consistency: Consistency) -> None:
        assert options.consumer_id is not None
        if consistency is not Consistency.TRANSACTIONAL:
            raise OptionError(
                f"consumer-id={options.consumer_id!r} is for transactional readers: an eventual reader "
                "follows log positions, not snapshots, so a consumer could not say which snapshots it "
                "needs; read with log.consistency=transactional, or save the reader's position"
            )
        self.consumer_id = options.consumer_id
        self._table = table
        self._consumers = table.files.consumers()
        lifetime = options.consumer_expiration_time
        self._refresh_s = _REFRESH_S if lifetime is None else min(
            _REFRESH_S, lifetime / datetime.timedelta(seconds=4)
        )
        self._recorded: int | None = None
        self._recorded_at = 0.0

    def resume_position(self) -> ReaderPosition | None:
        """Where a reader of this consumer starts (None: the consumer is new)."""
        recorded = self._consumers.get(self.consumer_id)
        if recorded is None:
            return None
        return ReaderPosition(
            Consistency.TRANSACTIONAL, snapshot=max(recorded - 1, 0), table=self._table.table_id,
            topic=log_name(self._table),
        )

    def record(self, position: ReaderPosition) -> None:
        """Write the consumer's next snapshot, when it moved or is due to be refreshed."""
        needed = next_snapshot(position)
        now = time.monotonic()
        if needed == self._recorded and now - self._recorded_at < self._refresh_s:
            return
        self._consumers.record(self.consumer_id, needed)
        self._recorded, self._recorded_at = needed, now
