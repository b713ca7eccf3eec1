"""Where a topic of the file log lives: the options checked and turned into its directory."""

from __future__ import annotations

import difflib
from pathlib import Path

from tablelog.plugin import LogConfig, OptionError

KNOWN_OPTIONS = ("path", "topic", "segment-bytes")

#: The default of ``filesystem.segment-bytes``: the size at which a writer starts a new segment.
DEFAULT_SEGMENT_BYTES = 64 << 20

#: Appended to an error about the log's directory: where it is and what it must be.
WHERE_HINT = (
    "; the filesystem log keeps its files in <filesystem.path>/<topic>, by default "
    "<warehouse>/.tablelog/log/<topic>: the warehouse (or filesystem.path) must be a "
    "directory this process can create and write"
)


def topic_directory(config: LogConfig) -> Path:
    """Where the topic lives: ``<filesystem.path>/<topic>/``, or
    ``<warehouse>/.tablelog/log/<topic>/`` when no path is set.

    ``filesystem.path`` is a root shared by topics (like a broker address), so two
    tables pointing at the same path never write into each other's files.
    Validates the options without touching the disk.
    """
    options = dict(config.options)
    for key in options:
        if key not in KNOWN_OPTIONS:
            hint = difflib.get_close_matches(key, KNOWN_OPTIONS, n=1)
            raise OptionError(
                f"unknown option 'filesystem.{key}'"
                + (f"; did you mean 'filesystem.{hint[0]}'?" if hint else "")
                + f"; the filesystem log knows: {', '.join('filesystem.' + k for k in KNOWN_OPTIONS)}"
            )
    topic = config.topic
    if not topic or topic in (".", "..") or any(c in topic for c in "/\\\0"):
        raise OptionError(
            f"invalid value {topic!r} for option 'filesystem.topic': the filesystem log uses the "
            "topic as a directory name (no '/', '\\', NUL, '.' or '..')"
        )
    path = options.get("path", "").strip()
    if path:
        root = _local_path(path, "filesystem.path")
    elif "://" in config.warehouse and not config.warehouse.startswith("file://"):
        raise OptionError(
            f"log.system=filesystem needs a shared directory for its files, and the warehouse "
            f"{config.warehouse!r} is an object store, not a directory: use log.system=kafka or "
            "log.system=pulsar, or set 'filesystem.path' to an absolute directory every writer, "
            "committer and reader shares (e.g. an NFS mount)"
        )
    elif config.warehouse:
        root = _local_path(config.warehouse, "warehouse") / ".tablelog" / "log"
    else:
        raise OptionError(
            "option 'filesystem.path' is required when the table has no local warehouse directory"
        )
    return root / topic


def segment_bytes(config: LogConfig) -> int:
    """``filesystem.segment-bytes``: the size at which a writer starts a new segment file."""
    text = str(dict(config.options).get("segment-bytes", DEFAULT_SEGMENT_BYTES)).strip()
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise OptionError(
            f"invalid value {text!r} for option 'filesystem.segment-bytes': expected a whole number "
            "of bytes >= 1 (the size at which the log starts a new segment file)"
        )
    return value


def _local_path(location: str, key: str) -> Path:
    """An absolute local directory. A relative path would be resolved against each
    process's working directory, so a Spark executor or a second client would read and
    write another log than the writer's."""
    if location.startswith("file://"):
        location = location[len("file://") :]
        if not location.startswith("/"):
            host = location.split("/", 1)[0]
            raise OptionError(
                f"invalid value 'file://{location}' for option {key!r}: a file URL names a "
                f"local directory (file:///dir), not one on host {host!r}"
            )
    elif "://" in location:
        raise OptionError(
            f"invalid value {location!r} for option {key!r}: the filesystem log needs a local "
            "directory; set 'filesystem.path' to one"
        )
    path = Path(location).expanduser()
    if not path.is_absolute():
        raise OptionError(
            f"invalid value {location!r} for option {key!r}: a relative path means another "
            "directory in every process that opens the log; give an absolute path or a file:// URL"
        )
    return path
