"""Table options: one place defines each key, its default, its validation and its doc line.

The docs' option table is generated from :data:`OPTIONS` (``tablelog options
--markdown``). Keys follow Paimon's names where Paimon had them. Keys prefixed
with a log system's name (``kafka.*``, ``pulsar.*``, ``filesystem.*``) belong to
that plugin; Paimon's own table options (``file.format``, ...) pass through to
the table; anything else is an error with a "did you mean" hint.
"""

from __future__ import annotations

import datetime
import difflib
import enum
import re
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from tablelog.errors import OptionError
from tablelog.option_values import (
    InvalidValue,
    duration_text,
    invalid_value,
    parse_bool,
    parse_duration_ms,
    parse_int,
)

# Secret redaction lives in tablelog.redaction; these names stay importable from here.
from tablelog.redaction import REDACTED as REDACTED
from tablelog.redaction import declare_secret_keys as declare_secret_keys
from tablelog.redaction import is_secret as is_secret
from tablelog.redaction import redact as redact


class Consistency(str, enum.Enum):
    TRANSACTIONAL = "transactional"
    EVENTUAL = "eventual"


class ChangelogMode(str, enum.Enum):
    AUTO = "auto"
    ALL = "all"
    UPSERT = "upsert"


class LogFormat(str, enum.Enum):
    DEBEZIUM_JSON = "debezium-json"
    JSON = "json"
    ARROW = "arrow"


class ArrowCompression(str, enum.Enum):
    LZ4 = "lz4"
    ZSTD = "zstd"
    NONE = "none"


class KeyFormat(str, enum.Enum):
    JSON = "json"


class ScanMode(str, enum.Enum):
    LATEST_FULL = "latest-full"
    LATEST = "latest"
    EARLIEST = "earliest"
    FROM_TIMESTAMP = "from-timestamp"


class ForeignRecords(str, enum.Enum):
    FAIL = "fail"
    SKIP = "skip"


def _enum(enum_type: type[enum.Enum]) -> Any:
    def convert(value: Any) -> Any:
        if isinstance(value, enum_type):
            return value
        try:
            return enum_type(str(value).strip().lower())
        except ValueError:
            allowed = ", ".join(repr(m.value) for m in enum_type)
            raise InvalidValue(f"allowed: {allowed}") from None

    return convert


def _bool(value: Any) -> bool:
    return parse_bool(value)


def _int(minimum: int) -> Any:
    def convert(value: Any) -> int | None:
        return None if value is None else parse_int(value, minimum)

    return convert


def _duration(value: Any) -> datetime.timedelta | None:
    if value is None or isinstance(value, datetime.timedelta):
        return value
    return datetime.timedelta(milliseconds=parse_duration_ms(value))


def _positive_duration(value: Any) -> datetime.timedelta:
    duration = _duration(value)
    if not duration:
        raise InvalidValue("expected a duration > 0 such as '1 h', '30 min', '90 s', '500 ms'")
    return duration


def _consumer_id(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    # Paimon stores a consumer as the file consumer/consumer-<id>: the id is a file name.
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}", text):
        raise InvalidValue(
            "expected a consumer id of letters, digits, '_', '.', '-' (starting with a letter or "
            "digit, at most 128 characters)"
        )
    return text


#: Paimon's default of ``snapshot.num-retained.max`` (Java's Integer.MAX_VALUE: no maximum).
NO_MAXIMUM = 2**31 - 1


def _columns(value: Any) -> tuple[str, ...]:
    """Column names, comma-separated (or a tuple of them already)."""
    if isinstance(value, tuple):
        return value
    return tuple(c.strip() for c in str(value).split(",") if c.strip())


def _bucket(value: Any) -> int:
    text = str(value).strip()
    if text in ("-1", "-2"):
        raise InvalidValue(
            "dynamic (-1) and postponed (-2) bucket modes are not supported: bucket b is log "
            "partition b, so the table needs a fixed number of buckets, an integer >= 1"
        )
    number: int = _int(1)(value)
    return number


def _name(value: Any) -> str:
    text = str(value).strip().lower()
    if not re.fullmatch(r"[a-z][a-z0-9_-]*", text):
        raise InvalidValue("expected a log system name such as 'kafka' (letters, digits, '-', '_')")
    return text


def option(key: str, default: Any, doc: str, convert: Any = str, *, fixed: bool = False) -> Any:
    """Declare one option: its key, default (already converted) and doc line.

    ``fixed``: the option defines the table (its log records or files depend on it):
    set when the table is created, it may be repeated but not changed afterwards
    (:mod:`tablelog.definition`)."""
    return attrs.field(default=default, metadata={"key": key, "doc": doc, "convert": convert, "fixed": fixed})


@attrs.frozen(kw_only=True)
class TableOptions:
    """The tablelog options of one table (and the per-read overrides)."""

    log_system: str = option(
        "log.system", "none",
        "`none`, `filesystem` (built-in), `kafka`, `pulsar`, or any installed plugin name.",
        _name, fixed=True,
    )
    log_consistency: Consistency = option(
        "log.consistency", Consistency.TRANSACTIONAL,
        "`transactional`: readers see a change once, after its snapshot commits. "
        "`eventual`: at once, at least once (add `normalize`).",
        _enum(Consistency),
    )
    log_changelog_mode: ChangelogMode = option(
        "log.changelog-mode", ChangelogMode.AUTO,
        "`auto` (upsert with a primary key, all without), `all`, `upsert` (no `-U` records).",
        _enum(ChangelogMode), fixed=True,
    )
    log_format: LogFormat = option(
        "log.format", LogFormat.DEBEZIUM_JSON,
        "Record value format: `debezium-json`, `json` (a record per row) or `arrow` (a record per "
        "batch of rows of one partition, an Arrow IPC stream).",
        _enum(LogFormat), fixed=True,
    )
    log_arrow_compression: ArrowCompression = option(
        "log.arrow.compression", ArrowCompression.LZ4,
        "IPC body compression of `log.format=arrow` records: `lz4`, `zstd` or `none` (each record "
        "names its own: readers need no setting).",
        _enum(ArrowCompression),
    )
    log_arrow_projection: tuple[str, ...] = option(
        "log.arrow.projection", (),
        "Columns, comma-separated, of a narrow second stream of an `arrow` log (topic "
        "`<topic>.projection`, with the key and row kind): a transactional reader asking only for "
        "these columns reads it and fetches only their bytes. Costs the writer their bytes again.",
        _columns, fixed=True,
    )
    log_key_format: KeyFormat = option(
        "log.key.format", KeyFormat.JSON, "Record key format (the primary key): `json`.",
        _enum(KeyFormat), fixed=True,
    )
    log_system_partitions: int | None = option(
        "log.system.partitions", None,
        "Partitions of a created topic; default the bucket count. Bucket b goes to partition b.",
        _int(1), fixed=True,
    )
    log_system_auto_register: bool = option(
        "log.system.auto-register", True,
        "Create the topic when missing; fail clearly if it has fewer partitions than buckets.",
        _bool,
    )
    log_foreign_records: ForeignRecords = option(
        "log.foreign-records", ForeignRecords.FAIL,
        "What readers do with records tablelog did not write: `fail` (name topic, partition, "
        "position) or `skip` (and count them).",
        _enum(ForeignRecords),
    )
    log_flush_timeout_ms: int = option(
        "log.flush-timeout-ms", 60_000,
        "How long a writer waits for the log to acknowledge its records before failing the write.",
        _int(1),
    )
    log_writer_expiration_time: datetime.timedelta = option(
        "log.writer.expiration-time", datetime.timedelta(hours=1),
        "On a log whose retention tablelog drives (`filesystem`, plugins with `delete_before`): the "
        "records of a write attempt not committed yet are kept while it was seen (a write, its flush) "
        "within this long; longer than an attempt's longest pause, flush to commit included. See "
        "docs/compaction.md.",
        _positive_duration,
    )
    log_fetch_timeout_ms: int = option(
        "log.fetch-timeout-ms", 30_000,
        "How long a transactional reader waits for committed records before reporting them lost.",
        _int(1),
    )
    log_max_record_bytes: int = option(
        "log.max-record-bytes", 1_000_000,
        "Largest encoded record a writer accepts; larger rows fail the write before anything "
        "is produced. With `log.format=arrow`, the most bytes of one batch record.",
        _int(1),
    )
    log_reader_pause_gc: bool = option(
        "log.reader.pause-gc", False,
        "Pause Python's cyclic garbage collector, for the whole process, while a reader builds "
        "a batch of changes (`poll()`: less CPU per change; other threads' cyclic garbage waits "
        "until the batch is built). See docs/performance-history.md.",
        _bool,
    )
    num_sorted_run_compaction_trigger: int = option(
        "num-sorted-run.compaction-trigger", 5,
        "Paimon's trigger: after a commit, a bucket with this many sorted runs (each level-0 file is "
        "one) is compacted as Paimon's universal compaction picks, with more always (a `COMPACT` "
        "snapshot; `tablelog compact` on demand). See docs/compaction.md.",
        _int(1),
    )
    scan_mode: ScanMode = option(
        "scan.mode", ScanMode.LATEST_FULL,
        "`latest-full` (current rows, then the log), `latest`, `earliest`, `from-timestamp`.",
        _enum(ScanMode),
    )
    scan_timestamp_millis: int | None = option(
        "scan.timestamp-millis", None, "Start time (epoch millis) for `scan.mode = from-timestamp`.",
        _int(0),
    )
    snapshot_num_retained_min: int = option(
        "snapshot.num-retained.min", 10,
        "Expiry keeps at least this many newest snapshots (Paimon's option; >= 1).",
        _int(1),
    )
    snapshot_num_retained_max: int = option(
        "snapshot.num-retained.max", NO_MAXIMUM,
        "Expiry keeps at most this many newest snapshots, however young (Paimon's option and "
        "default: no maximum, `snapshot.time-retained` decides).",
        _int(1),
    )
    snapshot_time_retained: datetime.timedelta = option(
        "snapshot.time-retained", datetime.timedelta(hours=1),
        "Expiry keeps every snapshot younger than this (Paimon's option: `1 h`, `30 min`, `7 d`...).",
        _duration,
    )
    snapshot_expire_limit: int = option(
        "snapshot.expire.limit", 50,
        "At most this many snapshots expire in one run (after a commit, or `tablelog expire`).",
        _int(1),
    )
    consumer_id: str | None = option(
        "consumer-id", None,
        "Reader option: record the reader's progress as Paimon consumer `<id>` (the table's "
        "`consumer/` folder); expiry keeps every snapshot it still needs. Transactional readers.",
        _consumer_id,
    )
    consumer_expiration_time: datetime.timedelta | None = option(
        "consumer.expiration-time", None,
        "A consumer not seen for this long stops holding snapshots and is removed (Paimon's "
        "option; default: consumers never expire).",
        _duration,
    )
    primary_key: tuple[str, ...] = option(
        "primary-key", (), "Primary key columns, comma-separated (table creation).",
        _columns,
        fixed=True,
    )
    bucket: int = option(
        "bucket", 1, "Fixed number of buckets (table creation); bucket b maps to log partition b.",
        _bucket, fixed=True,
    )

    def __attrs_post_init__(self) -> None:
        if self.snapshot_num_retained_max < self.snapshot_num_retained_min:
            raise OptionError(
                f"snapshot.num-retained.max={self.snapshot_num_retained_max} is less than "
                f"snapshot.num-retained.min={self.snapshot_num_retained_min}; the maximum number of "
                "snapshots kept must be at least the minimum"
            )

    @property
    def log_enabled(self) -> bool:
        return self.log_system != "none"

    @classmethod
    def parse(
        cls,
        raw: Mapping[str, Any],
        *,
        log_systems: Iterable[str] = (),
        passthrough: Iterable[str] = (),
    ) -> tuple[TableOptions, dict[str, str], dict[str, str]]:
        """Validate ``raw`` options.

        Returns ``(options, system_options, paimon_options)``: the typed tablelog
        options, the keys prefixed by a log system (``kafka.topic``...), and
        Paimon table options to pass through. ``log_systems``: the prefixes accepted
        besides the named ``log.system``'s; ``passthrough``: the Paimon keys allowed.
        """
        fields = {f.metadata["key"]: f for f in attrs.fields(cls)}
        # The named log system's own keys are accepted even when it is not installed,
        # so that the discovery error ("pip install ...") is the one users see.
        named = {str(v).strip().lower() for k, v in raw.items() if k.strip().lower() == "log.system"}
        prefixes = {*log_systems, *named}
        allowed_passthrough = set(passthrough)
        values: dict[str, Any] = {}
        system_options: dict[str, str] = {}
        paimon_options: dict[str, str] = {}
        _refuse_repeated_keys(raw)
        for key, value in raw.items():
            key = key.strip().lower()
            if key in fields:
                field = fields[key]
                try:
                    values[field.name] = field.metadata["convert"](value)
                except InvalidValue as err:
                    raise invalid_value(key, value, str(err)) from None
            elif "." in key and key.split(".", 1)[0] in prefixes:
                system_options[key] = str(value)
            elif key in allowed_passthrough:
                paimon_options[key] = str(value)
            else:
                candidates = list(fields) + sorted(allowed_passthrough)
                hint = difflib.get_close_matches(key, candidates, n=1, cutoff=0.6)
                prefix_hint = ""
                if "." in key and not hint:
                    prefix_hint = (
                        f"; keys with a prefix belong to a log system "
                        f"({', '.join(sorted(prefixes))})"
                    )
                raise OptionError(
                    f"unknown option {key!r}"
                    + (f"; did you mean {hint[0]!r}?" if hint else "")
                    + prefix_hint
                )
        return cls(**values), system_options, paimon_options

    def to_properties(self) -> dict[str, str]:
        """The non-default options as strings, for storing as table properties."""
        result: dict[str, str] = {}
        for field in attrs.fields(type(self)):
            value = getattr(self, field.name)
            # consumer-id names one reader: a stored one would make every reader that consumer.
            if value == field.default or field.name in ("primary_key", "bucket", "consumer_id"):
                continue
            result[field.metadata["key"]] = _to_text(value)
        return result

    def with_overrides(self, overrides: Mapping[str, Any]) -> TableOptions:
        """A copy with reader-side overrides (``log.consistency``, ``scan.*``) applied."""
        parsed, _, _ = TableOptions.parse(overrides, log_systems=(self.log_system,))
        changes = {
            f.name: getattr(parsed, f.name)
            for f in attrs.fields(TableOptions)
            if f.metadata["key"] in {k.strip().lower() for k in overrides}
        }
        return attrs.evolve(self, **changes)


def _refuse_repeated_keys(raw: Mapping[str, Any]) -> None:
    """One key given twice (``Bucket`` and ``bucket``) with different values: an error,
    where a mapping would silently keep one of them."""
    first: dict[str, tuple[str, Any]] = {}
    for given_key, value in raw.items():
        key = given_key.strip().lower()
        if key not in first:
            first[key] = (given_key, value)
            continue
        other_key, other = first[key]
        if same_value(key, other, value):
            continue
        shown = [REDACTED if is_secret(key) else v for v in (other, value)]
        raise OptionError(
            f"option {key!r} is given twice with different values: {other_key}={shown[0]!r} and "
            f"{given_key}={shown[1]!r}; give it once"
        )


def same_value(key: str, a: Any, b: Any) -> bool:
    """Whether two values of the option ``key`` mean the same: ``2`` and ``"2"`` for
    ``bucket``, ``"id, v"`` and ``"id,v"`` for ``primary-key``; other keys compare as text."""
    field = next((f for f in attrs.fields(TableOptions) if f.metadata["key"] == key.strip().lower()), None)
    if field is not None:
        try:
            convert = field.metadata["convert"]
            return bool(convert(a) == convert(b))
        except InvalidValue:
            pass
    return str(a).strip() == str(b).strip()


def fixed_option_keys() -> list[str]:
    """The tablelog option keys that define a table (fixed at creation)."""
    return [f.metadata["key"] for f in attrs.fields(TableOptions) if f.metadata["fixed"]]


def _to_text(value: Any) -> str:
    if isinstance(value, datetime.timedelta):
        return duration_text(value // datetime.timedelta(milliseconds=1))
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(value)
    return str(value)


#: Appended to the doc line of an option that defines the table, in the option listings.
DEFINES_TABLE = " **Defines the table**: may be given again later, not changed."


@attrs.frozen
class OptionDoc:
    key: str
    default: str
    doc: str


def option_docs() -> list[OptionDoc]:
    """Every tablelog option with its default and doc line, in declaration order."""
    docs = []
    for field in attrs.fields(TableOptions):
        default = "—" if field.default in (None, ()) else _to_text(field.default)
        doc = field.metadata["doc"]
        if field.metadata["fixed"]:
            doc += DEFINES_TABLE
        docs.append(OptionDoc(field.metadata["key"], default, doc))
    from tablelog.store.s3 import S3_OPTION_DOCS

    docs.extend(OptionDoc(key, "—", doc) for key, doc in S3_OPTION_DOCS.items())
    return docs


#: The prefix of the warehouse's connection options (``s3.endpoint``...): runtime
#: options, like secrets, passed to the catalog and never stored in the table.
WAREHOUSE_PREFIX = "s3."


def split_warehouse_options(raw: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, Any]]:
    """``(warehouse options, the other options)``: the ``s3.*`` keys, checked against
    :data:`tablelog.store.s3.S3_OPTION_KEYS`, apart from the table's options."""
    from tablelog.store.s3 import S3_OPTION_KEYS, endpoint_problem

    warehouse: dict[str, str] = {}
    rest: dict[str, Any] = {}
    for given_key, value in raw.items():
        key = str(given_key).strip().lower()
        if not key.startswith(WAREHOUSE_PREFIX):
            rest[given_key] = value
            continue
        if key not in S3_OPTION_KEYS:
            hint = difflib.get_close_matches(key, S3_OPTION_KEYS, n=1, cutoff=0.6)
            raise OptionError(
                f"unknown option {key!r}" + (f"; did you mean {hint[0]!r}?" if hint else "")
                + f"; an s3:// warehouse knows: {', '.join(S3_OPTION_KEYS)}"
            )
        text = str(value).strip()
        if key == "s3.endpoint" and text and (problem := endpoint_problem(text)):
            raise invalid_value(key, value, problem)
        if key == "s3.path-style-access":
            try:
                text = "true" if parse_bool(text) else "false"
            except InvalidValue as err:
                raise invalid_value(key, value, str(err)) from None
        if key in warehouse and warehouse[key] != text:
            raise OptionError(f"option {key!r} is given twice with different values; give it once")
        warehouse[key] = text
    return warehouse, rest


def split_system_options(system: str, system_options: Mapping[str, str]) -> dict[str, str]:
    """The options of ``system`` with its prefix removed (``kafka.acks`` -> ``acks``)."""
    prefix = system + "."
    return {k[len(prefix):]: v for k, v in system_options.items() if k.startswith(prefix)}
