"""A writer's background compaction rewrites its pairs in a child process of lower CPU
priority (``compaction.background.nice``, :mod:`tablelog.commit.compaction_process`): the
child runs at the nice value asked, its rewrites are committed as the thread's were, it
ends with the writer, one killed is replaced at the next rewrite, a rewrite that fails in
it fails that compaction alone with the child's error, and nice 0 keeps the rewrites in the
writer's process. Real processes and tables; nothing is patched."""

from __future__ import annotations

import logging
import os
import re
import signal
import threading
from pathlib import Path
from typing import Any

import pytest
from test_background_maintenance import eventually, expected_rows, kinds, make_table, round_rows

from tablelog.commit.compaction import plan_compaction
from tablelog.commit.compaction_process import BackgroundRewrites, RewriteProcess
from tablelog.errors import CommitError, OptionError
from tablelog.options import TableOptions
from tablelog.table import Table, internals
from tablelog.verify import verify

STARTED = re.compile(r"background compaction process (\d+) started at nice (\d+)")


def started_children(caplog: pytest.LogCaptureFixture) -> list[tuple[int, int]]:
    return [(int(m[1]), int(m[2])) for r in caplog.records if (m := STARTED.search(r.getMessage()))]


def nice_of(pid: int, thread: int | None = None) -> int:
    stat = Path(f"/proc/{pid}/stat" if thread is None else f"/proc/{pid}/task/{thread}/stat")
    return int(stat.read_text().rsplit(")", 1)[1].split()[16])  # the 19th field: the nice value


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def commit_rounds(writer: Any, table: Table, rounds: range) -> None:
    """Write and commit each round, then wait for a compaction after them."""
    compactions = kinds(table).count("COMPACT")
    for i in rounds:
        writer.write(round_rows(i))
        writer.commit()
    eventually(lambda: kinds(table).count("COMPACT") > compactions)


def compacted_rounds(table: Table, rounds: int) -> None:
    with table.writer() as writer:
        commit_rounds(writer, table, range(rounds))


def uncompacted_task(tmp_path: Path) -> tuple[Table, Any]:
    """A table of three rounds a write-only writer committed, and its one pair to compact."""
    table = make_table(tmp_path, **{"write-only": "true"})
    with table.writer() as writer:
        for i in range(3):
            writer.write(round_rows(i))
            writer.commit()
    (task,) = plan_compaction(internals(table)).tasks
    return table, task


@pytest.fixture
def caplog_info(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.INFO, logger="tablelog.maintenance")
    return caplog


def test_a_background_compaction_rewrites_in_a_child_process_at_the_lower_priority(
    tmp_path: Path, caplog_info: pytest.LogCaptureFixture,
) -> None:
    table = make_table(tmp_path)
    with table.writer() as writer:
        commit_rounds(writer, table, range(3))
        ((pid, nice),) = started_children(caplog_info)
        threads = [int(task.name) for task in Path(f"/proc/{pid}/task").iterdir()]
        expected = min(19, os.getpriority(os.PRIO_PROCESS, 0) + 19)
        assert nice == 19 and len(threads) > 1 and {nice_of(pid, t) for t in threads} == {expected}
        assert pid != os.getpid()
    eventually(lambda: not alive(pid))  # it ends with the writer
    assert table.rows().sort_by("id").to_pylist() == expected_rows(3)
    assert verify(table).consistent


def test_the_nice_value_is_the_table_s_option(tmp_path: Path, caplog_info: pytest.LogCaptureFixture) -> None:
    compacted_rounds(make_table(tmp_path, **{"compaction.background.nice": "7"}), 3)
    assert [nice for _, nice in started_children(caplog_info)] == [7]


def test_nice_zero_rewrites_in_the_writer_s_process(tmp_path: Path, caplog_info: pytest.LogCaptureFixture) -> None:
    table = make_table(tmp_path, **{"compaction.background.nice": "0"})
    compacted_rounds(table, 3)
    assert started_children(caplog_info) == []
    assert table.rows().sort_by("id").to_pylist() == expected_rows(3)


def test_a_killed_child_is_replaced_at_the_next_rewrite_and_nothing_is_lost(
    tmp_path: Path, caplog_info: pytest.LogCaptureFixture,
) -> None:
    table = make_table(tmp_path)
    with table.writer() as writer:
        commit_rounds(writer, table, range(2))
        ((first, _),) = started_children(caplog_info)
        os.kill(first, signal.SIGKILL)
        eventually(lambda: not alive(first) or Path(f"/proc/{first}/stat").read_text().split()[2] == "Z")
        commit_rounds(writer, table, range(2, 5))
    assert [pid for pid, _ in started_children(caplog_info)][1:] and started_children(caplog_info)[1][0] != first
    assert table.rows().sort_by("id").to_pylist() == expected_rows(5)
    assert verify(table).consistent


def test_a_rewrite_failing_in_the_child_raises_its_error_and_the_child_serves_the_next(tmp_path: Path) -> None:
    table, task = uncompacted_task(tmp_path)
    view = internals(table)
    process = RewriteProcess(19)
    try:
        first = task.files.files[0]
        Path(first.file_path).rename(Path(first.file_path).with_suffix(".moved"))
        with pytest.raises(CommitError, match=r"background compaction of bucket 0: .*(FileNotFound|No such file)"):
            process.rewrite(view, task)
        Path(first.file_path).with_suffix(".moved").rename(first.file_path)
        rewrite = process.rewrite(view, task)
        assert sum(f.row_count for f in rewrite.new_files) == len(expected_rows(3))
    finally:
        process.stop()
    assert process.pid is None


def test_a_compaction_past_the_stop_trigger_is_rewritten_in_the_writer_s_process(tmp_path: Path) -> None:
    view = internals(make_table(tmp_path))
    rewrites = BackgroundRewrites()
    assert rewrites.choose(view, threading.Event(), lambda: True) == (None, None)
    pace, rewrite = rewrites.choose(view, threading.Event(), lambda: False)
    assert pace is None and rewrite is not None and rewrites.pid is None  # started at the first rewrite
    rewrites.stop()


def test_a_rewrite_told_to_hurry_stops_the_child_and_leaves_no_file_of_it(tmp_path: Path) -> None:
    table, task = uncompacted_task(tmp_path)
    view = internals(table)
    bucket = Path(task.files.files[0].file_path).parent
    before = set(bucket.iterdir())
    process = RewriteProcess(19)
    asked: list[float] = []
    assert process.rewrite(view, task, share=0.01, hurry=lambda: bool(asked.append(1.0)) or len(asked) > 2) is None
    assert process.pid is None and len(asked) == 3
    eventually(lambda: set(bucket.iterdir()) == before)  # the child deleted what it had written, and ended
    assert table.rows().sort_by("id").to_pylist() == expected_rows(3)


@pytest.mark.parametrize("value", ["20", "-1", "low"])
def test_a_nice_value_outside_0_to_19_names_the_key_the_value_and_what_is_allowed(value: str) -> None:
    with pytest.raises(OptionError) as err:
        TableOptions.parse({"compaction.background.nice": value})
    message = str(err.value)
    assert "compaction.background.nice" in message and repr(value) in message and "<= 19" in message
