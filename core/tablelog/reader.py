"""The reader's former module: its names now live in :mod:`tablelog.reading`; this
alias keeps ``from tablelog.reader import ChangelogReader`` working."""

from tablelog.reading import Change, ChangelogReader, ReaderPosition

__all__ = ["Change", "ChangelogReader", "ReaderPosition"]
