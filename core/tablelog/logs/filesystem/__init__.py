"""The built-in ``filesystem`` log system: an embedded, append-only file log.

It needs no server, so it is the default for trying tablelog out and for tests,
and it is safe with several writer processes appending to one partition at once.

* Storage: ``<filesystem.path>/<topic>/`` or, without that option,
  ``<warehouse>/.tablelog/log/<topic>/``; each partition in segment files of about
  ``filesystem.segment-bytes`` (see :mod:`.log` for the layout and locking,
  :mod:`.segments` for segments, :mod:`.frames` for the format).
* Retention: ``delete_before`` deletes whole segments before the positions the core
  says are still needed; until then everything is kept.
* Positions: the byte offset of a record's frame in its partition file; the end
  position is the length of the valid data. Positions are not dense.
* Durability: ``produce`` appends synchronously under an exclusive ``flock``;
  ``flush`` fsyncs. A torn tail left by a dead writer is never returned and is cut
  off by the next appender; a corrupt record raises
  :class:`~tablelog.errors.CorruptRecordError` naming its position.

The plugin is the class :class:`.log.FileLog` (entry point
``filesystem = "tablelog.logs.filesystem:FileLog"``): its methods are the hooks.
"""

from __future__ import annotations

from .log import FileLog

__all__ = ["FileLog"]
