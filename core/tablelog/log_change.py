"""Attaching a log to a table, moving it to another log, detaching it: an alter that sets
``log.system`` (or the topic) to another value than the table's (``tablelog alter db.t
--set log.system=kafka -o kafka.bootstrap.servers=...``; docs/attaching.md).

The alter checks the new log's options as ``create_table`` does, creates its topic
(``log.system.auto-register``), stores the options, and commits a snapshot of no data
whose log-commit record names the new log, with the ends of its topic and
``tablelog.log.attached``: the *attaching snapshot*. Every later commit produces into the
new log; the snapshots before it hold changes that are not in it (another log's, or none),
and readers take those from the table files. With the log, the options that say how its
records are written (:func:`~tablelog.options.log_option_keys`) and the new log system's own
(``kafka.*``...) may be set too: they describe the new log's
records only. Without a change of log they stay fixed, as at create.

Writers and readers that opened the table before: a commit of what went to the old log is
refused (:meth:`~tablelog.table_internals.TableInternals.check_log_unchanged`); readers
meet the attaching snapshot and say what happened (:mod:`tablelog.reading.log_eras`).
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Mapping

import attrs

from tablelog import definition
from tablelog.commit.log_commit import LogCommitRecord
from tablelog.errors import CommitError, LogSystemError, OptionError, SchemaChangeError
from tablelog.formats import record_codec
from tablelog.formats.projection import check_projection
from tablelog.logs import discovery
from tablelog.merge_rules import check_merge_options
from tablelog.options import (
    GivenOptions,
    TableOptions,
    is_secret,
    log_option_keys,
    option_fields,
)
from tablelog.options.converters import to_system_name
from tablelog.store import TableFiles
from tablelog.table_internals import TableInternals
from tablelog.topic_owners import (
    check_system_options,
    default_topic,
    refuse_shared_topic,
    register_topic,
)

#: How often an attaching snapshot is tried on an object store, where committers race.
_MAX_ATTEMPTS = 40


@attrs.frozen
class LogChange:
    """A checked change of a table's log: what the table becomes."""

    options: TableOptions
    #: The new log system's options, secrets among them (to open it; never stored).
    system_options: dict[str, str] = attrs.field(repr=False)
    #: The properties the alter stores.
    stored: dict[str, str] = attrs.field(repr=False)

    @property
    def system(self) -> str:
        return self.options.log_system


def planned_change(table: TableInternals, sets: Mapping[str, str]) -> LogChange | None:
    """The log change an alter's options (``sets``: key, lower-cased, to value) ask for,
    checked as ``create_table`` checks a new table's log; None when the table's log stays."""
    system = to_system_name(sets["log.system"]) if "log.system" in sets else table.options.log_system
    given_system = {k: v for k, v in sets.items() if k.startswith(system + ".")}
    system_options = {k: v for k, v in {**table.system_options, **given_system}.items() if k.startswith(system + ".")}
    topic = default_topic(table.identifier, system, system_options) if system != "none" else ""
    if (system, topic) == table.log_name:
        _refuse_defining_options(table, sets)
        return None
    files = table.files
    fields = option_fields()
    stored_options = {k: v for k, v in files.properties.items() if k in fields and k not in ("primary-key", "bucket")}
    log_sets = {k: v for k, v in sets.items() if k in log_option_keys()}
    given = {k: v for k, v in sets.items() if k in fields}
    options, _, _ = GivenOptions.read({**stored_options, **given}).check(log_systems=discovery.known_names())
    # The runtime options this object was opened with (log.system.auto-register=false...), but those set now.
    runtime = {f.name: getattr(table.options, f.name) for f in attrs.fields(TableOptions)
               if not f.metadata["of_log"] and f.metadata["key"] not in given}
    options = attrs.evolve(options, **{**runtime, "primary_key": files.primary_key, "bucket": files.bucket})
    stored = {"log.system": system, **log_sets}
    if system == "none":
        return LogChange(options, {}, stored)
    try:  # a table created elsewhere (Flink, pypaimon) may hold merge options tablelog does not build
        check_merge_options(files.properties, table.schema, files.primary_key, files.partition_keys)
    except OptionError as err:
        raise OptionError(f"table {table.identifier!r}: a log cannot be attached: {err}; nothing was changed") from err
    check_system_options(options, system_options)
    if options.log_system_partitions is not None and options.log_system_partitions < files.bucket:
        raise OptionError(
            f"log.system.partitions={options.log_system_partitions} is fewer than the table's bucket={files.bucket}; "
            "bucket b is written to partition b, so the topic needs at least one partition per bucket"
        )
    record_codec(table.schema, files.primary_key, options.log_format)  # the columns the format can carry
    if files.bucket < 1:  # dynamic buckets: a key's log partition is its hash mod this, fixed for good
        stored.setdefault("log.system.partitions", str(options.log_partition_count))
    check_projection(options, table.schema, files.primary_key)
    system_options = {**definition.defining_defaults(system, system_options), **system_options}
    stored.update({k: v for k, v in system_options.items() if not is_secret(k)})
    refuse_shared_topic(table.warehouse, table.identifier, system, system_options, topic)
    return LogChange(options, system_options, stored)


def _refuse_defining_options(table: TableInternals, sets: Mapping[str, str]) -> None:
    """Refuse to change an option the table's log system declares to define the table
    (``OptionSpec(defines_table=True)``) without a change of log: its records depend on it."""
    system = table.options.log_system
    if system == "none":
        return
    stored = {k: v for k, v in table.files.properties.items() if k.startswith(system + ".")}
    for key, value in definition.system_definition(table.identifier, system, stored).items():
        if key in sets and sets[key].strip() != (value or "").strip():
            raise SchemaChangeError(
                f"table {table.identifier!r}: set option {key}={sets[key]!r} is not allowed: it defines the "
                f"table's {system} log (the table has {value!r}); it changes only with the log itself "
                "(docs/attaching.md); nothing was changed"
            )


def prepare(table: TableInternals, change: LogChange) -> dict[int, int]:
    """Before the alter is stored: create the new log's topic (``log.system.auto-register``),
    which checks its options and address, and return its end positions, where the new log
    begins for this table (empty for a detach)."""
    if change.system == "none":
        return {}
    attached = TableInternals(table.warehouse, table.files, change.options, change.system_options)
    config = attached.log_config()
    register_topic(table.warehouse, table.identifier, change.options, change.system_options, config.topic,
                   create=change.options.log_system_auto_register)
    with discovery.load_log_system(change.system).open(config) as log:
        try:
            return log.end_positions(list(range(config.partitions)))
        except LogSystemError as err:
            raise OptionError(
                f"table {table.identifier!r}: the {change.system} topic {config.topic!r} of the log to attach cannot "
                f"be read ({err}); with log.system.auto-register=false it must exist with {config.partitions} "
                "partition(s). Nothing was changed"
            ) from err


def commit_attaching_snapshot(files: TableFiles, change: LogChange, ends: Mapping[int, int]) -> int:
    """Commit the snapshot that attaches the new log (no data files; the caller holds the
    commit lock of a local warehouse); returns its id. On an object store it races the
    other committers for the next snapshot id, as they do."""
    user = f"tablelog-alter-{uuid.uuid4().hex}"
    topic = default_topic(files.identifier, change.system, change.system_options) if change.system != "none" else ""
    record = LogCommitRecord(
        writer=user, commit_identifier=1, system=change.system, topic=topic, ranges=(),
        end_positions=dict(ends), commit_started_ms=time.time_ns() // 1_000_000, attached=True,
    )
    properties = record.to_properties()
    if not files.on_object_store:
        files.commit([], commit_user=user, commit_identifier=1, properties=properties)
    else:
        for attempt in range(_MAX_ATTEMPTS):
            latest = files.latest_snapshot()
            next_id = (latest.id if latest is not None else 0) + 1
            if files.try_commit([], commit_user=user, commit_identifier=1, properties=properties, snapshot_id=next_id):
                break
            time.sleep(random.uniform(0, min(1.0, 0.02 * 2**attempt)))
        else:
            raise CommitError(
                f"table {files.identifier!r}: the snapshot attaching its new log lost the race for a snapshot id "
                f"{_MAX_ATTEMPTS} times; its options are stored, and readers take the first commit to the new log "
                "as its start"
            )
    for snapshot in files.snapshots(newest_first=True):
        if snapshot.commit_user == user:
            return snapshot.id
    raise CommitError(f"table {files.identifier!r}: the snapshot attaching its new log was not found after its commit")


def reopened(table: TableInternals, change: LogChange) -> TableInternals:
    """``table`` after the change: its runtime options, the new log's options."""
    files = table.warehouse.open(table.identifier)
    return TableInternals(table.warehouse, files, change.options, {**table.system_options, **change.system_options})
