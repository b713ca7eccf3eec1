"""The table files: Apache Paimon tables through pypaimon, in a filesystem warehouse.

Every pypaimon call of tablelog is in this package, so that it is the one place a
new file system, catalog or Paimon version touches: :mod:`~tablelog.store.warehouse`
(creating and opening tables), :mod:`~tablelog.store.table` (schema, snapshots,
rows, bucket routing), :mod:`~tablelog.store.key_hash` (rows by Paimon's bucket hash of
their key), :mod:`~tablelog.store.snapshots` (the snapshots' look-ups),
:mod:`~tablelog.store.writes` (data files written, committed,
aborted), :mod:`~tablelog.store.dynamic_index` (the keys' bucket index of dynamic
buckets, reconciled at commit), :mod:`~tablelog.store.layout` (the columns of primary-key data files, as the
table's options declare them), :mod:`~tablelog.store.data_files` (a table's data files,
for checks of their columns), :mod:`~tablelog.store.schema` (what Paimon defines: option keys, system
columns, stored types), :mod:`~tablelog.store.schema_files` (schema files, each created
by one writer), :mod:`~tablelog.store.schema_changes` (schema changes),
:mod:`~tablelog.store.evolution` (rows of an older schema in a newer one) and
:mod:`~tablelog.store.snapshot_changes` (a snapshot's changes, where the log carries the merged changelog),
:mod:`~tablelog.store.split_reads` (a full scan in splits of bounded size, each read as a stream).
The layers above reach a table's files only through :class:`TableFiles`
(:mod:`~tablelog.store.files`), never its implementation.
The pypaimon internals it calls (private methods, internal modules) are named, with the
reason for each, in :mod:`~tablelog.store.pypaimon_internals`; the dependency pins
follow from them.
"""

from tablelog.store.deltas import DeltaRemovesFilesError
from tablelog.store.evolution import SchemaMapping, SchemaVersion
from tablelog.store.files import TableFiles
from tablelog.store.other_writers import commit_changes, commit_rows, create_paimon_table
from tablelog.store.partitions import PartitionDrop
from tablelog.store.schema import (
    KIND_FIELD,
    as_stored,
    lossy_stored_type,
    paimon_immutable_option_keys,
    paimon_option_default,
    paimon_option_keys,
    system_column_names,
)
from tablelog.store.schema_changes import (
    AddColumn,
    DropColumn,
    RenameColumn,
    SchemaChange,
    SetOption,
    WidenColumn,
)
from tablelog.store.snapshot_changes import delta_changes, lookup_options, snapshot_changes
from tablelog.store.snapshots import SnapshotInfo
from tablelog.store.split_reads import ScanSplit
from tablelog.store.table import PaimonTable
from tablelog.store.warehouse import (
    SUPPORTED_WAREHOUSES,
    Warehouse,
    native_write_available,
    parse_identifier,
    warehouse_path,
)
from tablelog.store.writes import TableWrite

__all__ = [
    "KIND_FIELD",
    "AddColumn",
    "DeltaRemovesFilesError",
    "DropColumn",
    "RenameColumn",
    "ScanSplit",
    "SchemaChange",
    "SchemaMapping",
    "SchemaVersion",
    "SetOption",
    "WidenColumn",
    "commit_changes",
    "delta_changes",
    "lookup_options",
    "snapshot_changes",
    "commit_rows",
    "create_paimon_table",
    "paimon_immutable_option_keys",
    "SUPPORTED_WAREHOUSES",
    "PaimonTable",
    "PartitionDrop",
    "SnapshotInfo",
    "TableFiles",
    "TableWrite",
    "Warehouse",
    "as_stored",
    "lossy_stored_type",
    "native_write_available",
    "paimon_option_default",
    "paimon_option_keys",
    "parse_identifier",
    "system_column_names",
    "warehouse_path",
]
