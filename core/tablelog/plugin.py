"""Everything a log-system plugin needs from tablelog, in one import.

A plugin (Kafka, Pulsar, the Redis Streams example, yours) imports only this module;
never the table store, the reader or Spark::

    from tablelog.plugin import LogConfig, OptionError, hookimpl, int_option, redact

* ``hookimpl``: the marker of hook implementations; each hook's contract is its spec in
  :mod:`tablelog.hookspecs` (``required_hooks()`` lists the ones a log system must have).
* The types that cross the boundary (:mod:`tablelog.records`).
* The errors a plugin raises (:mod:`tablelog.errors`): ``LogSystemError`` and its
  subclasses for conditions of the log, ``OptionError`` for a bad option.
* Secret redaction: ``is_secret``, ``redact``, ``shown_value``, ``REDACTED``, and
  ``SecretScrubber`` for a client's own texts (:mod:`tablelog.redaction`).
* Option parsing with tablelog's messages (:mod:`tablelog.option_values`):
  ``int_option``, ``bool_option``, ``seconds_option`` read a key of ``LogConfig.options``;
  ``parse_int``, ``parse_bool`` convert one value and raise ``InvalidValue``, which
  ``invalid_value(key, value, reason)`` turns into the ``OptionError`` naming the key.

A plugin's tests use :mod:`tablelog.testing` besides this module.
"""

from __future__ import annotations

from tablelog.errors import (
    CorruptRecordError,
    LogSystemError,
    LogUnavailableError,
    OptionError,
    PositionOutOfRangeError,
    ProduceError,
    TablelogError,
    TopicError,
)
from tablelog.hookspecs import Connection, hookimpl, required_hooks
from tablelog.option_values import (
    InvalidValue,
    bool_option,
    int_option,
    invalid_value,
    parse_bool,
    parse_int,
    seconds_option,
)
from tablelog.records import (
    CommittedLog,
    FetchResult,
    LogConfig,
    LogRecord,
    OptionSpec,
    ProduceBatch,
    ProducedRange,
    SeekKind,
    SeekSpec,
    ValuesResult,
)
from tablelog.redaction import REDACTED, SecretScrubber, is_secret, redact, shown_value

__all__ = [
    "REDACTED",
    "CommittedLog",
    "Connection",
    "CorruptRecordError",
    "FetchResult",
    "InvalidValue",
    "LogConfig",
    "LogRecord",
    "LogSystemError",
    "LogUnavailableError",
    "OptionError",
    "OptionSpec",
    "PositionOutOfRangeError",
    "ProduceBatch",
    "ProduceError",
    "ProducedRange",
    "SecretScrubber",
    "SeekKind",
    "SeekSpec",
    "TablelogError",
    "TopicError",
    "ValuesResult",
    "bool_option",
    "hookimpl",
    "int_option",
    "invalid_value",
    "is_secret",
    "parse_bool",
    "parse_int",
    "redact",
    "required_hooks",
    "seconds_option",
    "shown_value",
]
