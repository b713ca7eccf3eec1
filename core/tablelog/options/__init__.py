"""Table options: one place defines each key, its default, its validation and its doc line.

Keys prefixed with a log system's name (``kafka.*``, ``pulsar.*``, ``filesystem.*``)
belong to that plugin; ``s3.*`` keys to an ``s3://`` warehouse; Paimon's own table
options (``file.format``, ...) pass through to the table; anything else is an error
with a "did you mean" hint. The modules, by job:

- :mod:`~tablelog.options.definitions`: :class:`TableOptions`, whose fields define the
  options (the docs' option table is generated from them, ``tablelog options --markdown``,
  by :mod:`~tablelog.options.docs`); :mod:`~tablelog.options.converters` their values.
- :mod:`~tablelog.options.keys`: which option each key is, and the errors: a key given
  twice, a refused value, an unknown key.
- :mod:`~tablelog.options.given`: :class:`GivenOptions`, the options an entry point was
  given, parsed once and handed down.

Everything is importable from here.
"""

from tablelog.options.converters import DYNAMIC_BUCKET
from tablelog.options.definitions import (
    DYNAMIC_BUCKET_LOG_PARTITIONS,
    NO_MAXIMUM,
    ArrowCompression,
    ChangelogMode,
    Consistency,
    ExpireExecutionMode,
    ForeignRecords,
    KeyFormat,
    LogFormat,
    ScanMode,
    TableOptions,
    fixed_option_keys,
    log_option_keys,
    option,
    option_fields,
    same_value,
)
from tablelog.options.docs import DEFINES_LOG, DEFINES_TABLE, OptionDoc, option_docs
from tablelog.options.given import GivenOptions
from tablelog.options.keys import WAREHOUSE_PREFIX, split_system_options, split_warehouse_options

# Secret redaction lives in tablelog.redaction; these names stay importable from here.
from tablelog.redaction import REDACTED, declare_secret_keys, is_secret, redact

__all__ = [
    "DEFINES_LOG",
    "DEFINES_TABLE",
    "DYNAMIC_BUCKET",
    "DYNAMIC_BUCKET_LOG_PARTITIONS",
    "NO_MAXIMUM",
    "REDACTED",
    "WAREHOUSE_PREFIX",
    "ArrowCompression",
    "ChangelogMode",
    "Consistency",
    "ExpireExecutionMode",
    "ForeignRecords",
    "GivenOptions",
    "KeyFormat",
    "LogFormat",
    "OptionDoc",
    "ScanMode",
    "TableOptions",
    "declare_secret_keys",
    "fixed_option_keys",
    "is_secret",
    "log_option_keys",
    "option",
    "option_docs",
    "option_fields",
    "redact",
    "same_value",
    "split_system_options",
    "split_warehouse_options",
]
