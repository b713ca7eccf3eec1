"""The table files: Apache Paimon tables through pypaimon, in a filesystem warehouse.

Every pypaimon call of tablelog is in this package, so that it is the one place a
new file system, catalog or Paimon version touches: :mod:`~tablelog.store.warehouse`
(creating and opening tables), :mod:`~tablelog.store.table` (schema, snapshots,
rows, bucket routing), :mod:`~tablelog.store.writes` (data files written, committed,
aborted) and :mod:`~tablelog.store.schema` (what Paimon defines: option keys, system
columns, stored types).
"""

from tablelog.store.schema import (
    KIND_FIELD,
    as_stored,
    paimon_option_default,
    paimon_option_keys,
    system_column_names,
)
from tablelog.store.table import PaimonTable, SnapshotInfo
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
    "SUPPORTED_WAREHOUSES",
    "PaimonTable",
    "SnapshotInfo",
    "TableWrite",
    "Warehouse",
    "as_stored",
    "native_write_available",
    "paimon_option_default",
    "paimon_option_keys",
    "parse_identifier",
    "system_column_names",
    "warehouse_path",
]
