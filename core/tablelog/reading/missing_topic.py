"""A reader whose table topic does not exist fails with an error naming the topic and the
options that say where it is; it never reads the table files in place of the whole topic.

Records the log lost (retention, a partition cut short, a topic recreated empty) are read
from the table files (:mod:`tablelog.reading.table_changes`): the topic is there, and its
positions tell what it lost. A topic that is not there at all most often means a log
option given wrong when the table was opened (another address, path or storage name): a
transactional reader would return every change from the table files and never say so,
until the snapshots expire. A topic the log really lost (a broker restarted on memory
storage, a deleted topic) is created again by the table's next write (with
``log.system.auto-register``); readers then read what it lost from the table files.

Missing, not merely lacking a partition: every topic has partition 0, so a topic whose
partition 0 the log does not know (``end_positions`` raises ``TopicError``) is missing.
A missing partition of an existing topic stays lost records.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tablelog.errors import LogSystemError, MissingTopicError, TopicError
from tablelog.options import is_secret
from tablelog.topic_owners import topic_option

if TYPE_CHECKING:
    from tablelog.logs.client import LogClient
    from tablelog.table_view import TableView as Table


def topic_is_missing(log: LogClient) -> bool:
    """Whether the log has no such topic at all (every topic has a partition 0)."""
    try:
        log.end_positions([0])
    except TopicError:
        return True
    return False


def missing_topic_error(table: Table, err: LogSystemError) -> MissingTopicError:
    """The error of a reader of ``table`` whose topic the log does not have (``err``: the
    log's own words, which say where it looked)."""
    system, topic = table.options.log_system, table.topic
    stored = table.files.properties
    opened = {f"{system}.{key}": value for key, value in table.log_config().options.items()}
    given = [
        f"{key}={value!r} (the table has {stored[key]!r})" if key in stored else f"{key}={value!r} (the table has none)"
        for key, value in sorted(opened.items())
        if not is_secret(key) and stored.get(key) != value
    ]
    where = (
        f"It was opened with {', '.join(given)}: is that where its log is?" if given
        else "Check the options that say where its log is (its address or path)."
    )
    error = MissingTopicError(
        f"table {table.identifier!r}: its log topic {topic!r} does not exist ({system}: {err}). {where} "
        f"The topic is named by {topic_option(system)!r}. Readers do not read the table files in place of "
        "a missing topic; if the log lost it, the table's next write creates it again "
        "(log.system.auto-register) and readers then read what it lost from the table files"
    )
    error.topic = topic
    return error
