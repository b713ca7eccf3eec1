"""The cyclic garbage collector is process-wide state: a reader leaves it alone unless
it opts in with ``log.reader.pause-gc``; then it is paused only while a batch of
changes is built (never while the reader waits: tests/core/test_eventual_idle.py), and
never turned on when the application had turned it off. The collector's state is observed where a reader
decodes the values of a batch (a spy around the table codec's per-record decoder,
``change_decoder``)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tablelog.formats.json_codec import JsonCodec
from tablelog.table import Table
from tablelog.tables import create_table

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])
PAUSE = {"log.reader.pause-gc": "true"}


@pytest.fixture
def table(tmp_path: Path) -> Table:
    table = create_table(str(tmp_path / "wh"), "db.t", SCHEMA, primary_key=["id"], bucket=2,
                         options={"log.system": "filesystem"})
    with table.writer() as writer:
        writer.write([{"id": i, "name": f"n{i}"} for i in range(50)])
        writer.commit()
    return table


@pytest.fixture
def collector_while_decoding(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bool]]:
    """Whether the collector was on at each value a reader decoded."""
    seen: list[bool] = []
    make_decoder = JsonCodec._make_change_decoder

    def spy(self: JsonCodec) -> Any:
        decode = make_decoder(self)

        def spied(value: bytes) -> Any:
            seen.append(gc.isenabled())
            return decode(value)

        return spied

    monkeypatch.setattr(JsonCodec, "_make_change_decoder", spy)
    yield seen


@pytest.mark.parametrize("consistency", ["transactional", "eventual"])
def test_a_reader_leaves_the_garbage_collector_on_by_default(
    table: Table, collector_while_decoding: list[bool], consistency: str
) -> None:
    with table.reader(consistency=consistency, scan_mode="earliest") as reader:
        assert len(reader.read_all(idle_timeout_s=0.1)) == 50
    assert collector_while_decoding and all(collector_while_decoding)


@pytest.mark.parametrize("consistency", ["transactional", "eventual"])
def test_a_reader_that_opts_in_pauses_the_collector_while_it_builds_a_batch(
    table: Table, collector_while_decoding: list[bool], consistency: str
) -> None:
    with table.reader(consistency=consistency, scan_mode="earliest", options=PAUSE) as reader:
        assert len(reader.poll()) + len(reader.poll()) == 50
        assert gc.isenabled()  # on again once the batch is built
    assert collector_while_decoding and not any(collector_while_decoding)


def test_a_collector_the_application_turned_off_stays_off_after_a_read(table: Table) -> None:
    gc.disable()
    try:
        with table.reader(consistency="transactional", scan_mode="earliest", options=PAUSE) as reader:
            assert len(reader.read_all(idle_timeout_s=0.1)) == 50
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_pause_gc_takes_only_true_or_false(table: Table) -> None:
    from tablelog.errors import OptionError

    with pytest.raises(OptionError, match="log.reader.pause-gc.*allowed: 'true', 'false'"):
        table.reader(options={"log.reader.pause-gc": "sometimes"})
