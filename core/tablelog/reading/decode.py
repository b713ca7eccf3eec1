"""Log values into :class:`Change` objects, with the table's foreign-record policy.

Every way a reader returns changes one by one ends in :meth:`Decoder.decode_all`:
the transactional reader's committed records (dense ranges and sparse ones), the
eventual reader's records and the late writes of a hybrid read. A value that is not
one of this table's rows is a *foreign record*: it fails the read
(``log.foreign-records=fail``, naming the partition and position) or is skipped and
counted (``skip``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from tablelog.errors import ForeignRecordError
from tablelog.options import ForeignRecords
from tablelog.records import RowKind

if TYPE_CHECKING:
    from tablelog.options import TableOptions
    from tablelog.table_view import TableView as Table


class Change(NamedTuple):
    """One change of the changelog.

    A named tuple, not a class with an ``__init__``: readers build one per record,
    and this is the cheapest object that still has named fields.
    """

    kind: RowKind
    row: dict[str, Any]
    snapshot_id: int | None = None  # the snapshot that committed it (transactional)
    partition: int | None = None
    position: int | None = None  # where it is in the log (None for rows of the full scan)


class Decoder:
    """Decodes one reader's values and applies its foreign-record policy."""

    def __init__(self, table: Table, options: TableOptions) -> None:
        """``options``: the reader's (its ``log.foreign-records``)."""
        self._table = table
        self._skip_foreign = options.log_foreign_records is ForeignRecords.SKIP
        #: Foreign records skipped so far (``log.foreign-records=skip``).
        self.foreign_skipped = 0

    def decode_all(
        self, values: Sequence[bytes | None], positions: Sequence[int], partition: int, snapshot_id: int | None,
        out: list[Change],
    ) -> list[int]:
        """Append the changes the values decode to, in order; report each value that
        does not decode (see :meth:`foreign`). Returns the positions of those, which
        were left out (usually none). One tight loop: it runs for every record a reader
        returns one by one."""
        decode = self._table.codec.change_decoder
        new = tuple.__new__  # what Change(...) does, without its Python-level __new__
        append = out.append
        left_out: list[int] = []
        for value, pos in zip(values, positions, strict=True):
            if value is None:
                self.foreign(partition, pos, "it has no value")
                left_out.append(pos)
                continue
            try:
                kind, row = decode(value)
                change = new(Change, (kind, row, snapshot_id, partition, pos))
            except (ValueError, KeyError, TypeError) as err:
                fmt = self._table.options.log_format.value
                self.foreign(partition, pos, f"its value does not decode as {fmt} ({err})")
                left_out.append(pos)
                continue
            append(change)
        return left_out

    def foreign(self, partition: int, position: int, reason: str) -> None:
        """A record that is not this table's: count it under ``skip``, else fail the read."""
        if self._skip_foreign:
            self.foreign_skipped += 1
            return
        raise ForeignRecordError(topic=self._table.topic, partition=partition, position=position, reason=reason)

