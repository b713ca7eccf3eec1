"""A table committed to hundreds of times stays bounded: snapshot expiry, compaction and
the file log's retention keep its disk use flat, while its rows, its changelog and plain
pypaimon's reads stay right. The same run with all three turned off grows with every
commit (the table as it was before). The soak version with thousands of commits is
``tests/reliability/test_long_lived_table_soak.py`` (``tox -e soak``)."""

from __future__ import annotations

from pathlib import Path

from tablelog.testing.long_run import BOUNDED, UNBOUNDED, LongRun
from tablelog.verify import verify

COMMITS = 120
#: Disk use is compared at its lowest over this many commits at the middle and at the end:
#: the background compaction and expiry run beside the commits, so one commit's figure
#: depends on where they were (a busy machine delays them by a commit or two), while the
#: lowest of a few is the table after they caught up, at both places alike.
SPAN = 5


def test_a_table_committed_to_many_times_keeps_its_disk_use_flat(tmp_path: Path) -> None:
    run = LongRun(tmp_path, BOUNDED)
    uses = run.commit(COMMITS, 20)
    middle, end = uses[COMMITS // 2 - SPAN:COMMITS // 2], uses[-SPAN:]
    assert min(u.snapshot_files for u in end) <= 20
    assert min(u.warehouse_bytes for u in end) <= 1.3 * min(u.warehouse_bytes for u in middle), (middle, end)
    assert min(u.log_bytes for u in end) <= 1.5 * min(u.log_bytes for u in middle), (middle, end)
    assert run.rows() == run.expected
    assert verify(run.table).consistent


def test_without_expiry_compaction_and_retention_the_same_table_grows_with_every_commit(tmp_path: Path) -> None:
    run = LongRun(tmp_path, UNBOUNDED)
    uses = run.commit(COMMITS, 20)
    middle, end = uses[COMMITS // 2 - 1], uses[-1]
    assert end.snapshot_files == COMMITS
    assert end.warehouse_bytes >= 1.6 * middle.warehouse_bytes, (middle, end)
    assert end.log_bytes >= 1.6 * middle.log_bytes, (middle, end)
    assert run.rows() == run.expected
