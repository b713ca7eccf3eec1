"""Soak (``tox -e soak``): thousands of commits to one table with expiry, compaction and the
file log's retention; its disk use at the end is what it was after the first few hundred
commits, and its rows and changelog are right. ``TABLELOG_SOAK_COMMITS`` sets the count."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tablelog.testing.long_run import BOUNDED, LongRun
from tablelog.verify import verify

pytestmark = pytest.mark.slow


def test_thousands_of_commits_keep_the_disk_use_of_the_first_hundreds(tmp_path: Path) -> None:
    commits = int(os.environ.get("TABLELOG_SOAK_COMMITS", "3000"))
    run = LongRun(tmp_path, BOUNDED)
    uses = run.commit(commits, 20)
    settled = uses[299]
    peak_warehouse = max(u.warehouse_bytes for u in uses[300:])
    peak_log = max(u.log_bytes for u in uses[300:])
    assert max(u.snapshot_files for u in uses) <= 20
    assert peak_warehouse <= 1.5 * settled.warehouse_bytes, (settled, peak_warehouse)
    assert peak_log <= 1.5 * settled.log_bytes, (settled, peak_log)
    assert run.rows() == run.expected
    assert verify(run.table).consistent
