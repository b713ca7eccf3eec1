"""The tablelog options: one place defines each key, its default, its conversion and its
doc line (:class:`TableOptions`); the docs' option table is generated from it
(:mod:`tablelog.options.docs`). Keys follow Paimon's names where Paimon had them.

Long because: every option is defined here, once, with its default, converter and doc
line, so that the docs' table and the code cannot disagree.
"""

from __future__ import annotations

import datetime
import enum
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from tablelog.errors import OptionError
from tablelog.options import keys as option_keys
from tablelog.options.converters import (
    as_text,
    to_bool,
    to_bucket,
    to_columns,
    to_consumer_id,
    to_duration,
    to_enum,
    to_int,
    to_memory_size,
    to_nice,
    to_optional_text,
    to_positive_duration,
    to_share,
    to_split_size,
    to_system_name,
)
from tablelog.options.keys import sort_values
from tablelog.partition_time import to_timestamp_formatter

#: The log partitions of a dynamic-bucket table that does not set ``log.system.partitions``:
#: the log partition of a key is its hash modulo this, so it is fixed with the table.
DYNAMIC_BUCKET_LOG_PARTITIONS = 4

#: Paimon's default of ``snapshot.num-retained.max`` (Java's Integer.MAX_VALUE: no maximum).
NO_MAXIMUM = 2**31 - 1


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


class ExpireExecutionMode(str, enum.Enum):
    SYNC = "sync"
    ASYNC = "async"


def option(key: str, default: Any, doc: str, convert: Any = str, *, fixed: bool = False, of_log: bool = False) -> Any:
    """Declare one option: its key, default (already converted) and doc line.

    ``fixed``: the option defines the table (its log records or files depend on it):
    set when the table is created, it may be repeated but not changed afterwards
    (:mod:`tablelog.definition`). ``of_log``: it defines only the log's records, so an alter
    that attaches or moves the table's log sets it anew (:mod:`tablelog.log_change`)."""
    return attrs.field(default=default, metadata={
        "key": key, "doc": doc, "convert": convert, "fixed": fixed, "of_log": of_log,
    })


@attrs.frozen(kw_only=True)
class TableOptions:
    """The tablelog options of one table (and the per-read overrides)."""

    log_system: str = option(
        "log.system", "none",
        "`none`, `filesystem` (built-in), `kafka`, `pulsar`, or any installed plugin name.",
        to_system_name, fixed=True, of_log=True,
    )
    log_consistency: Consistency = option(
        "log.consistency", Consistency.TRANSACTIONAL,
        "`transactional`: readers see a change once, after its snapshot commits. "
        "`eventual`: at once, at least once (add `normalize`).",
        to_enum(Consistency),
    )
    log_changelog_mode: ChangelogMode = option(
        "log.changelog-mode", ChangelogMode.AUTO,
        "`auto` (upsert with a primary key, all without), `all`, `upsert` (no `-U` records).",
        to_enum(ChangelogMode), fixed=True, of_log=True,
    )
    log_format: LogFormat = option(
        "log.format", LogFormat.DEBEZIUM_JSON,
        "Record value format: `debezium-json`, `json` (a record per row) or `arrow` (a record per "
        "batch of rows of one partition, an Arrow IPC stream).",
        to_enum(LogFormat), fixed=True, of_log=True,
    )
    log_arrow_compression: ArrowCompression = option(
        "log.arrow.compression", ArrowCompression.LZ4,
        "IPC body compression of `log.format=arrow` records: `lz4`, `zstd` or `none` (each record "
        "names its own: readers need no setting).",
        to_enum(ArrowCompression),
    )
    log_arrow_projection: tuple[str, ...] = option(
        "log.arrow.projection", (),
        "Columns, comma-separated, of a narrow second stream of an `arrow` log (topic "
        "`<topic>.projection`, with the key and row kind): a transactional reader asking only for "
        "these columns reads it and fetches only their bytes. Costs the writer their bytes again.",
        to_columns, fixed=True, of_log=True,
    )
    log_key_format: KeyFormat = option(
        "log.key.format", KeyFormat.JSON, "Record key format (the primary key): `json`.",
        to_enum(KeyFormat), fixed=True, of_log=True,
    )
    log_system_partitions: int | None = option(
        "log.system.partitions", None,
        "Partitions of a created topic; default the bucket count (fixed buckets: bucket b goes to "
        "partition b), or 4 with dynamic buckets (`bucket = -1`: a key goes to partition "
        "hash(key) mod this).",
        to_int(1), fixed=True, of_log=True,
    )
    log_system_auto_register: bool = option(
        "log.system.auto-register", True,
        "Create the topic when missing; fail clearly if it has fewer partitions than buckets.",
        to_bool,
    )
    log_foreign_records: ForeignRecords = option(
        "log.foreign-records", ForeignRecords.FAIL,
        "What readers do with records tablelog did not write: `fail` (name topic, partition, "
        "position) or `skip` (and count them).",
        to_enum(ForeignRecords),
    )
    log_flush_timeout_ms: int = option(
        "log.flush-timeout-ms", 60_000,
        "How long a writer waits for the log to acknowledge its records before failing the write.",
        to_int(1),
    )
    log_writer_expiration_time: datetime.timedelta = option(
        "log.writer.expiration-time", datetime.timedelta(hours=1),
        "On a log whose retention tablelog drives (`filesystem`, plugins with `delete_before`): the "
        "records of a write attempt not committed yet are kept while it was seen (a write, its flush) "
        "within this long; longer than an attempt's longest pause, flush to commit included. See "
        "docs/compaction.md.",
        to_positive_duration,
    )
    log_fetch_timeout_ms: int = option(
        "log.fetch-timeout-ms", 30_000,
        "How long a transactional reader waits for committed records before reporting them lost.",
        to_int(1),
    )
    log_max_record_bytes: int = option(
        "log.max-record-bytes", 1_000_000,
        "Largest encoded record a writer accepts; larger rows fail the write before anything "
        "is produced. With `log.format=arrow`, the most bytes of one batch record.",
        to_int(1),
    )
    log_reader_pause_gc: bool = option(
        "log.reader.pause-gc", False,
        "Pause Python's cyclic garbage collector, for the whole process, while a reader builds "
        "a batch of changes (`poll()`: less CPU per change; other threads' cyclic garbage waits "
        "until the batch is built). See docs/performance-history.md.",
        to_bool,
    )
    num_sorted_run_compaction_trigger: int = option(
        "num-sorted-run.compaction-trigger", 5,
        "Paimon's trigger: after a commit, a bucket with this many sorted runs (each level-0 file is "
        "one) is compacted in the writer's background as Paimon's universal compaction picks, with "
        "more always (a `COMPACT` snapshot; `tablelog compact` on demand). See docs/compaction.md.",
        to_int(1),
    )
    num_sorted_run_stop_trigger: int | None = option(
        "num-sorted-run.stop-trigger", None,
        "Paimon's backpressure: a writer that wrote a bucket now holding more sorted runs than this "
        "waits, before its next round's first write, for the background compaction (at most a "
        "minute; default: the compaction trigger + 3). See docs/compaction.md.",
        to_int(1),
    )
    compaction_background_duty_cycle: float = option(
        "compaction.background.duty-cycle", 1.0,
        "The share of its time a writer's background compaction works: between the batches of its "
        "merge it pauses the rest, leaving the cores to the writes (1: it never pauses). A pair past "
        "`num-sorted-run.stop-trigger` is compacted without pauses. See docs/compaction.md.",
        to_share,
    )
    compaction_background_nice: int = option(
        "compaction.background.nice", 19,
        "The CPU priority of a writer's background compaction: its pairs are rewritten in a child "
        "process this many nice steps below the writer (1 to 19: it takes the CPU the writes leave, and "
        "shares no interpreter lock with them); 0: in a thread of the writer's process. A pair past "
        "`num-sorted-run.stop-trigger` that a writer waits for, or past twice it, is rewritten in the "
        "writer's process. See docs/compaction.md.",
        to_nice,
    )
    write_only: bool = option(
        "write-only", False,
        "Paimon's option: writers neither compact nor expire snapshots or partitions; a dedicated job "
        "does (`tablelog compact --follow`). See docs/compaction.md.",
        to_bool,
    )
    commit_force_compact: bool = option(
        "commit.force-compact", False,
        "Paimon's option: a commit returns only once the compaction of the buckets it wrote is done "
        "(default: compaction runs in the writer's background). For tests and small tables.",
        to_bool,
    )
    snapshot_expire_execution_mode: ExpireExecutionMode = option(
        "snapshot.expire.execution-mode", ExpireExecutionMode.ASYNC,
        "Paimon's option: `async`, snapshot expiry after a commit runs in the writer's background "
        "(tablelog's default); `sync`, in the commit (Paimon's default).",
        to_enum(ExpireExecutionMode),
    )
    lookup_cache_max_disk_size: int | None = option(
        "lookup.cache-max-disk-size", None,
        "Most bytes the machine's lookup cache (data files a merge-engine writer looks keys up in, "
        "decoded once; `TABLELOG_LOOKUP_CACHE_DIR`) may hold; the least recently used go first "
        "(Paimon's option and syntax: `256 mb`, `10 gb`; default: unbounded). See docs/merge-engines.md.",
        to_memory_size,
    )
    lookup_cache_file_retention: datetime.timedelta = option(
        "lookup.cache-file-retention", datetime.timedelta(hours=1),
        "A file of the lookup cache not used for this long is removed (Paimon's option).",
        to_positive_duration,
    )
    scan_mode: ScanMode = option(
        "scan.mode", ScanMode.LATEST_FULL,
        "`latest-full` (current rows, then the log), `latest`, `earliest`, `from-timestamp`.",
        to_enum(ScanMode),
    )
    scan_timestamp_millis: int | None = option(
        "scan.timestamp-millis", None, "Start time (epoch millis) for `scan.mode = from-timestamp`.",
        to_int(0),
    )
    source_split_target_size: int = option(
        "source.split.target-size", 128 * 1024 * 1024,
        "A full scan (Spark batch reads, the first micro-batch of `latest-full`) reads each bucket in "
        "splits of about this many bytes of data files, one Spark task each, streamed in batches "
        "(Paimon's option and default, 128 mb; `32 mb`, `1 gb`...). See docs/spark.md.",
        to_split_size,
    )
    snapshot_num_retained_min: int = option(
        "snapshot.num-retained.min", 10,
        "Expiry keeps at least this many newest snapshots (Paimon's option; >= 1).",
        to_int(1),
    )
    snapshot_num_retained_max: int = option(
        "snapshot.num-retained.max", NO_MAXIMUM,
        "Expiry keeps at most this many newest snapshots, however young (Paimon's option and "
        "default: no maximum, `snapshot.time-retained` decides).",
        to_int(1),
    )
    snapshot_time_retained: datetime.timedelta = option(
        "snapshot.time-retained", datetime.timedelta(hours=1),
        "Expiry keeps every snapshot younger than this (Paimon's option: `1 h`, `30 min`, `7 d`...).",
        to_duration,
    )
    snapshot_expire_limit: int = option(
        "snapshot.expire.limit", 50,
        "At most this many snapshots expire in one run (after a commit, or `tablelog expire`).",
        to_int(1),
    )
    consumer_id: str | None = option(
        "consumer-id", None,
        "Reader option: record the reader's progress as Paimon consumer `<id>` (the table's "
        "`consumer/` folder); expiry keeps every snapshot it still needs. Transactional readers.",
        to_consumer_id,
    )
    consumer_expiration_time: datetime.timedelta | None = option(
        "consumer.expiration-time", None,
        "A consumer not seen for this long stops holding snapshots and is removed (Paimon's "
        "option; default: consumers never expire).",
        to_duration,
    )
    primary_key: tuple[str, ...] = option(
        "primary-key", (), "Primary key columns, comma-separated (table creation).",
        to_columns,
        fixed=True,
    )
    partition: tuple[str, ...] = option(
        "partition", (),
        "Partition columns, comma-separated (table creation; Paimon's option). A primary-key "
        "table's partition columns must be primary-key columns.",
        to_columns, fixed=True,
    )
    partition_expiration_time: datetime.timedelta | None = option(
        "partition.expiration-time", None,
        "A partition whose time (from its values) is older than this is dropped, its rows' `-D` in the "
        "log, in a snapshot of its own (Paimon's option; default: partitions never expire; primary-key tables).",
        to_duration,
    )
    partition_expiration_check_interval: datetime.timedelta = option(
        "partition.expiration-check-interval", datetime.timedelta(hours=1),
        "A writing process looks for expired partitions after a commit at most this often (Paimon's option).",
        to_positive_duration,
    )
    partition_timestamp_formatter: str | None = option(
        "partition.timestamp-formatter", None,
        "How a partition's timestamp text is parsed, in Java letters (`yyyyMMdd`, `yyyy-MM-dd HH`; "
        "default: `yyyy-MM-dd` or `yyyy-MM-dd HH:mm:ss`). Paimon's option.",
        to_timestamp_formatter,
    )
    partition_timestamp_pattern: str | None = option(
        "partition.timestamp-pattern", None,
        "A partition's timestamp text from its values: `$dt`, `$dt $hour:00:00` (default: the first "
        "partition column's value). Paimon's option.",
        to_optional_text,
    )
    bucket: int = option(
        "bucket", 1,
        "Number of buckets (table creation); bucket b maps to log partition b. `-1`: Paimon's "
        "dynamic buckets (the default of a Paimon primary-key table), the log partition chosen by "
        "the key's hash; `-2` (postponed) is refused.",
        to_bucket, fixed=True,
    )

    def __attrs_post_init__(self) -> None:
        if self.snapshot_num_retained_max < self.snapshot_num_retained_min:
            raise OptionError(
                f"snapshot.num-retained.max={self.snapshot_num_retained_max} is less than "
                f"snapshot.num-retained.min={self.snapshot_num_retained_min}; the maximum number of "
                "snapshots kept must be at least the minimum"
            )

    @property
    def log_partition_count(self) -> int:
        """The table's log partitions: ``log.system.partitions``, else one per bucket, else
        (dynamic buckets) :data:`DYNAMIC_BUCKET_LOG_PARTITIONS`."""
        if self.log_system_partitions is not None:
            return self.log_system_partitions
        return self.bucket if self.bucket > 0 else DYNAMIC_BUCKET_LOG_PARTITIONS

    @property
    def stop_trigger(self) -> int:
        """``num-sorted-run.stop-trigger`` as Paimon takes it: the compaction trigger + 3 by
        default, and never below the compaction trigger."""
        trigger = self.num_sorted_run_compaction_trigger
        given = self.num_sorted_run_stop_trigger
        return max(trigger, trigger + 3 if given is None else given)

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
        fields = option_fields()
        values = option_keys.read_values(raw, fields)
        options, system_options, paimon_options = sort_values(values, fields, log_systems, passthrough)
        return cls(**options), system_options, paimon_options

    def to_properties(self) -> dict[str, str]:
        """The non-default options as strings, for storing as table properties."""
        result: dict[str, str] = {}
        for field in attrs.fields(type(self)):
            value = getattr(self, field.name)
            # consumer-id names one reader: a stored one would make every reader that consumer.
            if value == field.default or field.name in ("primary_key", "partition", "bucket", "consumer_id"):
                continue
            result[field.metadata["key"]] = as_text(value)
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


def option_fields() -> dict[str, attrs.Attribute[Any]]:
    """The attributes of :class:`TableOptions` by option key."""
    return {f.metadata["key"]: f for f in attrs.fields(TableOptions)}


def same_value(key: str, a: Any, b: Any) -> bool:
    """Whether two values of the option ``key`` mean the same: ``2`` and ``"2"`` for
    ``bucket``, ``"id, v"`` and ``"id,v"`` for ``primary-key``; other keys compare as text."""
    first, second = (option_keys.read_values({key: value}, option_fields())[0] for value in (a, b))
    return first.same_as(second)


def fixed_option_keys() -> list[str]:
    """The tablelog option keys that define a table (fixed at creation)."""
    return [f.metadata["key"] for f in attrs.fields(TableOptions) if f.metadata["fixed"]]


def log_option_keys() -> list[str]:
    """The option keys an alter that attaches or moves the table's log may set (fixed otherwise)."""
    return [f.metadata["key"] for f in attrs.fields(TableOptions) if f.metadata["of_log"]]
