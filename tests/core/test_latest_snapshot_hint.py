"""The latest snapshot is found from the LATEST hint, also while a writer's commit has
made it lag or is rewriting it, without a listing of the snapshot directory (a read of
every name: thousands on a long-lived table)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import tablelog
from tablelog.table import Table, internals


@pytest.fixture
def table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Table:
    t = tablelog.create_table(str(tmp_path), "db.t", pa.schema([("id", pa.int64())]), primary_key=["id"],
                              options={"num-sorted-run.compaction-trigger": "100"})
    for i in range(3):
        with t.writer() as writer:
            writer.write([{"id": i}])
            writer.commit()

    def no_listing(self: Any) -> None:
        raise AssertionError("the snapshot directory was listed")

    monkeypatch.setattr(type(internals(t).files.paimon.snapshot_manager()), "_max_snapshot_id_from_listing", no_listing)
    return t


def latest_hint(t: Table) -> Path:
    return Path(internals(t).files.paimon.snapshot_manager().latest_file.removeprefix("file://"))


def test_a_lagging_hint_is_followed_to_the_newest_snapshot(table: Table) -> None:
    latest_hint(table).write_text("1")
    assert internals(table).files.latest_snapshot().id == 3  # type: ignore[union-attr]


def test_a_hint_being_rewritten_starts_from_the_snapshot_last_found(table: Table) -> None:
    assert internals(table).files.latest_snapshot().id == 3  # type: ignore[union-attr]
    latest_hint(table).write_text("")
    assert internals(table).files.latest_snapshot().id == 3  # type: ignore[union-attr]
