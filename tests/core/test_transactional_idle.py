"""An idle transactional reader waits on the table, not in a loop of reads: one look for
the next snapshot at a time, less often the longer it has been idle, and whether
snapshots expired under it checked about once a second. A snapshot committed while it
waits is still returned promptly. The warehouse operations are counted around the real
file system."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tablelog.table import Table, internals
from tablelog.tables import create_table

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])
_OPERATIONS = ("exists", "read_file_utf8", "new_input_stream", "get_file_status", "list_status")


@pytest.fixture
def table(tmp_path: Path) -> Table:
    table = create_table(str(tmp_path / "wh"), "db.t", SCHEMA, primary_key=["id"], bucket=4,
                         options={"log.system": "filesystem"})
    _commit(table, 0)
    return table


def _commit(table: Table, start: int) -> None:
    with table.writer() as writer:
        writer.write([{"id": i, "name": f"n{i}"} for i in range(start, start + 4)])
        writer.commit()


@pytest.fixture
def warehouse_operations(table: Table, monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Every file operation on the warehouse, by name (the store's file IO, patched on its class)."""
    counts: Counter[str] = Counter()
    file_io_class = type(internals(table).files.file_io)
    for name in _OPERATIONS:
        real = getattr(file_io_class, name)

        def counted(self: Any, *args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> Any:
            counts[_name] += 1
            return _real(self, *args, **kwargs)

        monkeypatch.setattr(file_io_class, name, counted)
    yield counts


def test_an_idle_transactional_reader_makes_few_warehouse_operations(
    table: Table, warehouse_operations: Counter[str]
) -> None:
    with table.reader(consistency="transactional", scan_mode="latest") as reader:
        reader.poll()
        warehouse_operations.clear()
        began = time.monotonic()
        assert reader.poll(timeout_s=3.0) == []
        waited = time.monotonic() - began
    assert 2.9 <= waited < 4
    # 10 ms looks at first, a tenth of the idle time later (100 ms after a second): well
    # under a hundred looks in 3 s, and a few expiry checks of a handful of reads each.
    total = sum(warehouse_operations.values())
    assert total < 150, warehouse_operations


def test_a_snapshot_committed_while_a_transactional_reader_idles_is_returned_promptly(table: Table) -> None:
    with table.reader(consistency="transactional", scan_mode="latest") as reader:
        reader.poll()
        assert reader.poll(timeout_s=2.0) == []  # idle long enough to look only every 100 ms
        committed_at: list[float] = []

        def commit_later() -> None:
            time.sleep(0.5)
            _commit(table, 100)
            committed_at.append(time.monotonic())

        thread = threading.Thread(target=commit_later)
        thread.start()
        seen: list[Any] = []
        deadline = time.monotonic() + 10
        while not seen and time.monotonic() < deadline:
            seen = reader.poll(timeout_s=0.5)
        returned_at = time.monotonic()
        thread.join()
    assert sorted(c.row["id"] for c in seen) == [100, 101, 102, 103]
    assert returned_at - committed_at[0] < 0.3
