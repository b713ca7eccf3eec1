"""Creating and opening tables: :func:`create_table`, :func:`open_table`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import pyarrow as pa

from tablelog import definition
from tablelog.errors import OptionError, TableExistsError
from tablelog.formats import record_codec
from tablelog.formats.projection import check_projection
from tablelog.identity import TABLE_ID_PROPERTY, new_table_id
from tablelog.logs import discovery
from tablelog.options import (
    DYNAMIC_BUCKET,
    GivenOptions,
    TableOptions,
    is_secret,
)
from tablelog.store import Warehouse
from tablelog.table import Table, _check
from tablelog.table_internals import TableInternals
from tablelog.topic_owners import (
    check_system_options,
    default_topic,
    refuse_shared_topic,
    register_topic,
)


def _given(options: Mapping[str, Any] | GivenOptions | None) -> GivenOptions:
    """The options as parsed by the entry point, or parsed now (this is the entry point)."""
    return options if isinstance(options, GivenOptions) else GivenOptions.parse(options or {})


def create_table(
    warehouse: str,
    identifier: str,
    schema: pa.Schema,
    *,
    primary_key: Sequence[str] = (),
    partition_keys: Sequence[str] = (),
    bucket: int | None = None,
    options: Mapping[str, Any] | GivenOptions | None = None,
    exist_ok: bool = False,
) -> Table:
    """Create a Paimon table in ``warehouse`` with tablelog options.

    Options are the keys of the option table (``log.system``, ``kafka.*``...) and
    Paimon table options (or those already parsed: :class:`~tablelog.options.GivenOptions`).
    Secrets among them are used but never stored: give them again to :func:`open_table`. A
    table that exists (created before, or by another process at the same time) is a
    :class:`~tablelog.errors.TableExistsError`; with ``exist_ok`` it is returned instead, if
    ``schema`` is its schema. ``partition_keys``: the table's partition columns (Paimon's
    ``partition`` option; docs/concepts.md, "Partitioned tables").
    """
    given = _given(options)
    storage = given.warehouse
    if primary_key:
        given = given.with_argument("primary-key", "primary_key", ",".join(primary_key))
    if partition_keys:
        given = given.with_argument("partition", "partition_keys", ",".join(partition_keys))
    if bucket is not None:
        given = given.with_argument("bucket", "bucket", str(bucket))
    parsed, system_options, paimon_options = _check(given)
    wh = Warehouse(warehouse, storage)
    if wh.exists(identifier):
        if not exist_ok:
            raise TableExistsError(f"table {identifier!r} already exists in warehouse {wh.path!r}")
        return _existing_table(wh, identifier, schema, given)
    definition.check_columns(schema)
    definition.check_column_types(schema)
    definition.check_partition_keys(schema, parsed.partition, parsed.primary_key)
    definition.check_partition_expiry(parsed)
    definition.check_paimon_options(paimon_options, schema, parsed.primary_key, partition_keys=parsed.partition)
    check_projection(parsed, schema, parsed.primary_key)
    if parsed.bucket == DYNAMIC_BUCKET and "bucket-key" in paimon_options:
        raise OptionError(
            f"table option bucket-key={paimon_options['bucket-key']!r} is not supported with bucket=-1: "
            "Paimon's dynamic buckets take the primary key as the bucket key; give a number of buckets "
            "to choose a bucket key"
        )
    if parsed.bucket == DYNAMIC_BUCKET and parsed.log_system_partitions is None:
        # Stored: a key's log partition is its hash modulo this count, for good.
        parsed = attrs.evolve(parsed, log_system_partitions=parsed.log_partition_count)
    if parsed.log_system_partitions is not None and parsed.log_system_partitions < parsed.bucket:
        raise OptionError(
            f"log.system.partitions={parsed.log_system_partitions} is fewer than bucket={parsed.bucket}; "
            "bucket b is written to partition b, so the topic needs at least one partition per bucket"
        )
    # Check the log system and the data types now, before a table exists.
    if parsed.log_enabled:
        check_system_options(parsed, system_options)
    record_codec(schema, tuple(parsed.primary_key), parsed.log_format)
    if parsed.log_enabled:
        system_options = {**definition.defining_defaults(parsed.log_system, system_options), **system_options}
    stored = {
        **parsed.to_properties(),
        **{k: v for k, v in system_options.items() if not is_secret(k)},
        **paimon_options,
        TABLE_ID_PROPERTY: new_table_id(),
    }
    if parsed.log_enabled:
        topic = default_topic(identifier, parsed.log_system, system_options)
        refuse_shared_topic(wh, identifier, parsed.log_system, system_options, topic)
        register_topic(wh, identifier, parsed, system_options, topic, create=parsed.log_system_auto_register)
    try:
        files = wh.create(identifier, schema, tuple(parsed.primary_key), parsed.bucket, stored,
                          partition_keys=tuple(parsed.partition))
    except TableExistsError:  # another process created it since the check above
        if not exist_ok:
            raise
        return _existing_table(wh, identifier, schema, given)
    return Table(TableInternals(wh, files, parsed, system_options))


def _existing_table(wh: Warehouse, identifier: str, schema: pa.Schema, given: GivenOptions) -> Table:
    """The table ``create_table(..., exist_ok=True)`` found, if ``schema`` is its schema."""
    existing = _open(wh, identifier, given)
    definition.check_same_schema(identifier, existing.schema, schema)
    return existing


def open_table(
    warehouse: str, identifier: str, options: Mapping[str, Any] | GivenOptions | None = None
) -> Table:
    """Open an existing table. ``options`` add runtime options (secrets, client settings,
    time-outs, reader defaults); options that define the table (``log.format``, the
    topic, ``bucket``, Paimon's file options, ...) may be repeated but not changed
    (:mod:`tablelog.definition`): a different value is an ``OptionError``. An engine
    that opens the table again and again passes them parsed once:
    :class:`~tablelog.options.GivenOptions`."""
    given = _given(options)
    return _open(Warehouse(warehouse, given.warehouse), identifier, given)


def _open(wh: Warehouse, identifier: str, given: GivenOptions) -> Table:
    store = wh.open(identifier)
    table_keys = {"primary-key", "partition", "bucket"}
    stored = GivenOptions.read(_tablelog_keys({k: v for k, v in store.properties.items() if k not in table_keys}))
    systems = discovery.known_names()
    table_options, table_system_options, _ = _check(stored, systems)
    table_options = attrs.evolve(table_options, primary_key=store.primary_key, partition=store.partition_keys,
                                 bucket=store.bucket)
    given_options, given_system_options, given_paimon_options = _check(given, [*systems, table_options.log_system])
    definition.check_same_definition(
        store, table_options, definition.system_definition(identifier, table_options.log_system, table_system_options),
        given.keys, given_options, given_system_options, given_paimon_options,
    )
    # The given runtime options over the stored ones ("Log.Consistency" overrides "log.consistency").
    parsed, system_options, _ = _check(given.without(table_keys).over(stored), systems)
    parsed = attrs.evolve(parsed, primary_key=store.primary_key, partition=store.partition_keys, bucket=store.bucket)
    return Table(TableInternals(wh, store, parsed, system_options))


def _tablelog_keys(properties: Mapping[str, str]) -> dict[str, str]:
    """The stored properties that are tablelog's (not Paimon's own)."""
    ours = {f.metadata["key"] for f in attrs.fields(TableOptions)}
    prefixes = tuple(n + "." for n in discovery.known_names())
    return {k: v for k, v in properties.items() if k in ours or k.startswith(prefixes)}
