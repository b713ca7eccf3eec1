"""A committer partitioned from S3 around its snapshot put, while the restarted driver (a
second committer on another host, same writer id) commits the same identifiers and
others; then the partition heals. Counted on both sides (tests/hosts/committers.py)."""

from __future__ import annotations

import pytest

from tablelog.testing.s3_faults import S3FaultProxy

from .committers import check_exactly_once, commits, committer, final_outcomes, new_table
from .conftest import Cluster
from .scenarios import LAST, OFFSETS, cut_off_at_snapshot_put, wait_fired

CUT_AT = 3  # the identifier whose snapshot put the partition hits
#: Within how long a commit cut off from S3 must answer "unknown", with QUICK_FAILURE's
#: timeouts (1 s to connect, 2 s to answer, 2 attempts): the snapshot put's attempts, then
#: the reads that try to find out.
UNKNOWN_WITHIN_S = 30


# CI cuts it off during the put (applied, unanswered: the case only a read can settle);
# before and after are in `tox -e faults` (CI's time budget), beside the matrix's random phases.
@pytest.mark.parametrize("phase", [pytest.param("before", marks=pytest.mark.faults), "during",
                                   pytest.param("after", marks=pytest.mark.faults)])
def test_a_committer_cut_off_from_s3_at_its_snapshot_put_commits_each_identifier_once(
        cluster: Cluster, phase: str) -> None:
    cut_off, restarted, made_by = cut_off_at_snapshot_put(cluster, phase, CUT_AT)
    # Before, A's snapshot never reached S3 and B commits it; during and after it is there
    # (A's answer for it: "committed", or "already" once it was told "unknown, retry").
    assert made_by[CUT_AT] == ("B" if phase == "before" else "A")
    for identifier in range(CUT_AT + 1, LAST + 1):  # B committed them while A was cut off
        assert (restarted[("driver", identifier)]["outcome"], cut_off[("driver", identifier)]["outcome"]) == (
            "committed", "already")


def test_a_committer_cut_off_from_s3_longer_than_its_timeouts_answers_unknown_in_bounded_time_then_commits_once(
        cluster: Cluster) -> None:
    table, warehouse, options = new_table(cluster)
    net = cluster.network
    with S3FaultProxy(cluster.s3.endpoint, listen_host=net.controller_address) as proxy:
        rule = proxy.apply_then_hang("PUT", "/snapshot/snapshot-1")
        cut_off = committer(net["a"], {"warehouse": warehouse, "table": "db.t", "who": "A", "offsets": OFFSETS,
                                         "options": {**options, "s3.endpoint": proxy.endpoint},
                                         "commits": commits("driver", [1, 2]), "retry_unknown_s": 0.5})
        wait_fired(rule, proxy)
        net.partition([net["a"]], [net.controller, net["s3"]])
        proxy.clear()
        unknown = cut_off.wait_for(lambda line: line["outcome"] == "unknown", timeout_s=UNKNOWN_WITHIN_S + 30)
        net.heal()
        outcomes = final_outcomes(cut_off.finish())

    assert unknown["seconds"] < UNKNOWN_WITHIN_S, unknown
    assert "retry it with the same writer id and commit identifier" in unknown["error"]
    assert "snapshot 1 was sent and no answer came back" in unknown["error"]
    # Its snapshot was applied before the cut: the retry finds it, commits nothing twice.
    assert outcomes[("driver", 1)]["outcome"] == "already"
    assert outcomes[("driver", 2)]["outcome"] == "committed"
    check_exactly_once(table, cluster, warehouse, [("driver", 1), ("driver", 2)], OFFSETS)
