"""pypaimon's schema and snapshot managers of a table's main branch, built without the
import their constructors make.

Both constructors import ``pypaimon.branch``, whose package imports pypaimon's catalog,
its readers, ``pyarrow.dataset`` and through it pandas: seconds in a fresh process. A
process that only reads schemas and snapshots (the planner of a Spark streaming read,
its tasks, ``describe``) needs none of it. These subclasses set what the constructors set for
the main branch (a table's own directory; tablelog writes no other branch) and inherit
every read: the hint handling, the listings, the JSON parsing.
``tests/core/test_import_cost.py`` checks that reading a table's changes imports no
pandas, ``tests/core/test_store_metadata.py`` that these read what pypaimon's own
managers read.
"""

from __future__ import annotations

from typing import Any

from pypaimon.common.identifier import DEFAULT_MAIN_BRANCH
from pypaimon.schema.schema_manager import SchemaManager
from pypaimon.snapshot.snapshot_manager import SnapshotManager


class MainBranchSchemas(SchemaManager):
    """The ``schema-<id>`` files of the table at ``table_path``."""

    def __init__(self, file_io: Any, table_path: str) -> None:
        # Not calling super().__init__ on purpose: it imports pypaimon.branch (see above).
        self.schema_prefix = "schema-"
        self.file_io = file_io
        self.table_path = table_path
        self.branch = DEFAULT_MAIN_BRANCH
        self.schema_path = f"{table_path}/schema"
        self.schema_cache: dict[int, Any] = {}

    @property
    def branch_path(self) -> str:
        return str(self.table_path)


class MainBranchSnapshots(SnapshotManager):
    """The ``snapshot-<id>`` files and the ``LATEST`` / ``EARLIEST`` hints of the table at
    ``table_path``."""

    def __init__(self, file_io: Any, table_path: str) -> None:
        # Not calling super().__init__ on purpose: it imports pypaimon.branch (see above).
        self.file_io = file_io
        self.table_path = table_path.rstrip("/")
        self.branch = DEFAULT_MAIN_BRANCH
        self.snapshot_loader = None  # a filesystem catalog's tables have none
        self.snapshot_dir = f"{self.table_path}/snapshot"
        self.latest_file = f"{self.snapshot_dir}/LATEST"
