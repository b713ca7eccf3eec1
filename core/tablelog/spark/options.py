"""The options of the `tablelog` Spark data source: which belong to Spark and the data
source, which are table options.

Spark hands a Python data source every ``.option(...)`` with its key lower-cased and
its value a string. The keys below are the data source's own (never table options);
every other key is a table option (``log.system``, ``kafka.*``, ``primary-key``,
Paimon's own options...), validated by :class:`tablelog.options.TableOptions`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import attrs

from tablelog.errors import OptionError
from tablelog.store import warehouse_path

#: Keys that configure the data source (or Spark itself), never the table.
ENGINE_KEYS = frozenset({"warehouse", "table", "path", "checkpointlocation", "queryname", "writer.id"})

#: Reader-side overrides of table options.
READ_KEYS = frozenset({"log.consistency", "scan.mode", "scan.timestamp-millis"})

#: Options for tests and demos only: they make tasks or the driver fail on purpose.
TESTING_PREFIX = "testing."
#: ``"P"`` or ``"B:P"``: attempt 0 of partition P (in micro-batch B) raises after its
#: ``finish()`` made its records durable in the log: a task that dies after producing.
FAIL_AFTER_FINISH = "testing.fail-after-finish"
#: ``"P"`` or ``"B:P"``: attempt 0 of partition P (in micro-batch B) raises after writing
#: its first chunk, before ``finish()``: a task that dies with records produced, unflushed.
FAIL_MID_WRITE = "testing.fail-mid-write"
#: ``"B:SECONDS"``: the driver sleeps after committing micro-batch B to the table, before
#: Spark records the batch in its commit log (a window for a test to kill the driver).
PAUSE_AFTER_COMMIT = "testing.pause-after-commit"
TESTING_KEYS = frozenset({FAIL_AFTER_FINISH, FAIL_MID_WRITE, PAUSE_AFTER_COMMIT})

WAREHOUSE_ENV = "TABLELOG_WAREHOUSE"


@attrs.frozen
class SourceOptions:
    """The data source options of one read or write, parsed."""

    warehouse: str
    table: str
    table_options: dict[str, str]  # every key that is not the data source's own
    writer_id: str | None = None
    testing: dict[str, str] = attrs.field(factory=dict)

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SourceOptions:
        raw = {str(k).strip().lower(): str(v) for k, v in options.items()}
        warehouse = raw.get("warehouse") or os.environ.get(WAREHOUSE_ENV)
        if not warehouse:
            raise OptionError(
                "the tablelog data source needs option 'warehouse' (a warehouse directory or file:// URL): "
                f".option('warehouse', '/path/to/warehouse'), or set {WAREHOUSE_ENV}"
            )
        table = raw.get("table") or raw.get("path")
        if not table:
            raise OptionError(
                "the tablelog data source needs option 'table' ('database.name'): "
                ".option('table', 'db.orders'), or .load('db.orders') / .save('db.orders')"
            )
        testing = {k: v for k, v in raw.items() if k.startswith(TESTING_PREFIX)}
        unknown = sorted(set(testing) - TESTING_KEYS)
        if unknown:
            raise OptionError(f"unknown testing option(s) {unknown}; known: {sorted(TESTING_KEYS)}")
        table_options = {
            k: v for k, v in raw.items() if k not in ENGINE_KEYS and not k.startswith(TESTING_PREFIX)
        }
        writer_id = raw.get("writer.id") or None
        # Resolved on the driver: executors may run in another working directory.
        return cls(warehouse_path(warehouse), table, table_options, writer_id, testing)

    @property
    def runtime_options(self) -> dict[str, str]:
        """Options for opening an existing table: everything but the read keys. Those that
        define the table (``primary-key``, ``log.format``...) are checked against it there."""
        return {k: v for k, v in self.table_options.items() if k not in READ_KEYS}

    @property
    def read_options(self) -> dict[str, str]:
        return {k: v for k, v in self.table_options.items() if k in READ_KEYS}

    def fail_after_finish(self, batch_id: int | None, partition: int, attempt: int) -> bool:
        """Whether this task attempt must fail after producing (testing only)."""
        return self._selects(FAIL_AFTER_FINISH, batch_id, partition, attempt)

    def fail_mid_write(self, batch_id: int | None, partition: int, attempt: int) -> bool:
        """Whether this task attempt must fail after its first chunk, unflushed (testing only)."""
        return self._selects(FAIL_MID_WRITE, batch_id, partition, attempt)

    def _selects(self, key: str, batch_id: int | None, partition: int, attempt: int) -> bool:
        """Whether the testing option ``key`` (``"P"`` or ``"B:P"``) names attempt 0 of this task."""
        spec = self.testing.get(key)
        if spec is None or attempt != 0:
            return False
        batch, _, part = spec.rpartition(":")
        if batch and (batch_id is None or int(batch) != batch_id):
            return False
        return int(part) == partition

    def pause_after_commit(self, batch_id: int) -> float:
        spec = self.testing.get(PAUSE_AFTER_COMMIT)
        if spec is None:
            return 0.0
        batch, _, seconds = spec.partition(":")
        return float(seconds) if int(batch) == batch_id else 0.0
