"""Reading a table's changelog from the log, with the consistency the table (or reader) asks for.

**Transactional**: the reader walks snapshots in commit order. For each snapshot
it fetches, per partition, the span covering the ranges of the writer tokens that
snapshot commits, and returns exactly the records of those tokens inside their
ranges, each once (duplicates a retrying client wrote are dropped by sequence
number). Records of failed, speculative or replayed attempts belong to no
committed token and are never returned. A committed range the log cannot
produce is read from the table files (:mod:`~tablelog.reading.table_changes`), never
skipped; only when the table has lost it too is it reported as lost data. A snapshot
another writer committed (no log-commit record) is read from the table files, in its
place among the others (:mod:`~tablelog.reading.foreign`; eventual readers get it too).

**Eventual**: the reader returns every record of this table as soon as the log has
it (at least once; records of other tables on the topic, told by the tag in their
writer token, are left out); add :class:`tablelog.normalize.Normalizer` for a correct
changelog. Idle, it waits in the log's own fetch, not in a loop of fetches. Positions
the log no longer holds are read from the table files
(:mod:`~tablelog.reading.lost_range`).

**Hybrid** (``scan.mode = latest-full``): first the rows of the latest snapshot as
``+I``, then the changes after it: transactional readers continue with the next
snapshot, eventual readers at that snapshot's log end positions.

:attr:`ChangelogReader.position` is a small JSON value; pass it back to resume. It
names its table: another table refuses it (see :mod:`tablelog.positions`).

The parts: :mod:`~tablelog.reading.reader` (the :class:`ChangelogReader` facade),
:mod:`~tablelog.reading.start` (where a reader starts), :mod:`~tablelog.reading.full_scan`,
:mod:`~tablelog.reading.transactional`, :mod:`~tablelog.reading.eventual`,
:mod:`~tablelog.reading.table_changes` and :mod:`~tablelog.reading.lost_range` (changes the log lost),
:mod:`~tablelog.reading.foreign` (other writers' snapshots),
:mod:`~tablelog.reading.decode` (values into :class:`Change` objects, foreign records),
:mod:`~tablelog.reading.batch`, :mod:`~tablelog.reading.gc_pause` (``log.reader.pause-gc``) and
:mod:`~tablelog.reading.context` (what they share).
"""

from tablelog.positions import ReaderPosition
from tablelog.reading.decode import Change
from tablelog.reading.reader import ChangelogReader

__all__ = ["Change", "ChangelogReader", "ReaderPosition"]
