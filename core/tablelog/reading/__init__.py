"""Reading a table's changelog: :class:`ChangelogReader` and what it returns."""

from tablelog.positions import ReaderPosition
from tablelog.reading.reader import Change, ChangelogReader

__all__ = ["Change", "ChangelogReader", "ReaderPosition"]
