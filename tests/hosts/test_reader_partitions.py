"""A transactional reader cut off from the broker in the middle of its polls while a
committer on another host goes on committing; the partition heals. Every committed
record is read once."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import Cluster
from .scenarios import reader_cut_off_from_broker

#: Longer than the reader's wait for a broker (kafka.socket.connection.setup.timeout.ms,
#: 5 s by default; pulsar.operation-timeout-seconds, 3 s in the scenario, for each of the
#: client's round trips): the cut must show as an error, not as a hang.
CUT_S = 15.0
#: A poll cut off from the broker returns (with an error) within this, well inside the cut.
POLL_RETURNS_WITHIN_S = 10.0
#: Once the partition heals, the records committed meanwhile come within this: a
#: connection that went silent is given up (the consumers' socket.timeout.ms) rather
#: than kept until the kernel's backed-off retransmission gets through.
RESUMES_WITHIN_S = 6.0


def resumed_after_heal_s(lines: list[dict]) -> float:
    """Seconds from the heal to the first records read after the cut, on the reader's
    clock: the cut began once it had its first records, and lasted CUT_S."""
    read = [line["t"] for line in lines if line.get("ids")]
    failed = [line["t"] for line in lines if "error" in line]
    return min(t for t in read if t > max(failed)) - (read[0] + CUT_S)


def test_a_reader_cut_off_from_the_broker_mid_poll_fails_in_bounded_time_and_reads_every_committed_record_once(
        cluster: Cluster) -> None:
    lines = reader_cut_off_from_broker(cluster, cut_after_records=1, cut_s=CUT_S)
    # Cut off, a poll fails in bounded time naming what it could not reach; the loop goes on.
    assert any("error" in line for line in lines), lines
    assert max(line["poll_s"] for line in lines if "poll_s" in line) < POLL_RETURNS_WITHIN_S, lines
    assert resumed_after_heal_s(lines) < RESUMES_WITHIN_S, lines


@pytest.mark.faults  # CI's time budget: CI cuts off the Kafka reader above
def test_a_reader_cut_off_from_a_pulsar_broker_mid_poll_fails_in_bounded_time_and_reads_every_committed_record_once(
        cluster: Cluster, tmp_path: Path) -> None:
    lines = reader_cut_off_from_broker(cluster, cut_after_records=1, cut_s=CUT_S, pulsar=tmp_path)
    assert any("error" in line for line in lines), lines
    assert max(line["poll_s"] for line in lines if "poll_s" in line) < POLL_RETURNS_WITHIN_S, lines
