"""A writer's background compaction held to a share of the time
(``compaction.background.duty-cycle``, :class:`tablelog.commit.compaction_threads.Pacer`):
it pauses between the batches of its merge in proportion to its work, never when its
share is 1 or a pair to compact is past ``num-sorted-run.stop-trigger``, and the table it
leaves is the same."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import tablelog
from tablelog.commit.compaction_threads import Pacer
from tablelog.errors import OptionError
from tablelog.options import TableOptions
from tablelog.store.compaction import TableCompactions
from tablelog.table import Table
from tablelog.verify import verify

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
WAIT_S = 30.0


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.waits: list[float] = []

    def __call__(self) -> float:
        return self.now

    def wait(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds


def test_a_pacer_waits_the_rest_of_its_share_after_each_stretch_of_work() -> None:
    clock = FakeClock()
    pace = Pacer(0.25, wait=clock.wait, clock=clock)
    clock.now += 1.0  # a batch merged in a second
    pace()
    clock.now += 0.5
    pace()
    assert clock.waits == [3.0, 1.5]  # a quarter of the time working, three quarters paused
    assert pace.paused_s == 4.5


def test_a_pacer_at_a_share_of_one_never_waits() -> None:
    clock = FakeClock()
    pace = Pacer(1.0, wait=clock.wait, clock=clock)
    clock.now += 2.0
    pace()
    assert clock.waits == [] and pace.paused_s == 0


@pytest.mark.parametrize("value", ["0", "1.5", "-0.2", "half"])
def test_a_duty_cycle_outside_zero_to_one_names_the_key_the_value_and_what_is_allowed(value: str) -> None:
    with pytest.raises(OptionError) as err:
        TableOptions.parse({"compaction.background.duty-cycle": value})
    message = str(err.value)
    assert "compaction.background.duty-cycle" in message and repr(value) in message
    assert "above 0 and at most 1" in message


def make_table(tmp_path: Path, **options: str) -> Table:
    return tablelog.create_table(
        str(tmp_path), "db.t", SCHEMA, primary_key=["id"], bucket=1,
        # nice 0: the rewrites (and their pauses, patched here) in this process
        options={"log.system": "filesystem", "num-sorted-run.compaction-trigger": "2",
                 "compaction.background.nice": "0", **options},
    )


@pytest.fixture
def paces(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The ``pace`` each rewrite of a pair is given, recorded (the rewrite itself runs)."""
    given: list[Any] = []
    rewrite = TableCompactions.rewrite_bucket

    def recorded(compactions: TableCompactions, files: Any, level: int, drop_deletes: bool,
                 pace: Any = None) -> list[Any]:
        given.append(pace)
        return rewrite(compactions, files, level, drop_deletes, pace)

    monkeypatch.setattr(TableCompactions, "rewrite_bucket", recorded)
    return given


def compacted_rounds(table: Table, rounds: int) -> None:
    """``rounds`` commits of a writer (more than the compaction trigger of 2 sorted runs,
    which then picks them whatever their sizes), then until its background compaction
    committed."""
    with table.writer() as writer:
        for i in range(rounds):
            writer.write([{"id": k, "v": f"c{i}"} for k in range(100 * i, 100 * i + 500)])
            writer.commit()
        deadline = time.monotonic() + WAIT_S
        while not any(s.commit_kind == "COMPACT" for s in table.snapshots()):
            assert time.monotonic() < deadline, "no background compaction committed"
            time.sleep(0.05)


def test_a_background_compaction_below_its_full_share_pauses_between_batches_and_leaves_the_same_rows(
    tmp_path: Path, paces: list[Any]
) -> None:
    table = make_table(tmp_path, **{"compaction.background.duty-cycle": "0.5"})
    compacted_rounds(table, 3)
    assert paces and all(isinstance(p, Pacer) for p in paces)
    assert paces[0].paused_s > 0  # it merged at least one batch, then waited as long
    expected = {k: f"c{min(k // 100, 2)}" for k in range(700)}
    assert {r["id"]: r["v"] for r in table.rows().to_pylist()} == expected
    assert verify(table).consistent


def test_a_background_compaction_at_the_default_share_never_pauses(tmp_path: Path, paces: list[Any]) -> None:
    compacted_rounds(make_table(tmp_path), 3)
    assert paces and all(p is None for p in paces)


def test_a_pair_past_the_stop_trigger_is_compacted_without_pauses(tmp_path: Path, paces: list[Any]) -> None:
    # write-only while the runs pile up past the stop trigger, then a writer that compacts
    table = make_table(tmp_path, **{"write-only": "true"})
    with table.writer() as writer:
        for i in range(4):
            writer.write([{"id": i, "v": "piled"}])
            writer.commit()
    again = tablelog.open_table(str(tmp_path), "db.t", options={
        "write-only": "false", "num-sorted-run.stop-trigger": "2", "compaction.background.duty-cycle": "0.5"})
    compacted_rounds(again, 1)  # five runs: past the stop trigger of 2
    assert paces and paces[0] is None
