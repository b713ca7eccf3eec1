"""A committer cut off from S3 while it writes, or whose data-file put the store never
answers: a table of the default layout (thin files, written by pypaimon-rust's writer,
which has no request timeout of its own) fails its write attempt in bounded time
(``s3.write-timeout`` for that writer's requests), naming the store; the attempt made
again commits, each identifier once."""

from __future__ import annotations

import pytest

from tablelog.testing.s3_faults import S3FaultProxy

from .committers import check_exactly_once, commits, committer, final_outcomes, new_table
from .conftest import Cluster
from .scenarios import committer_cut_off_from_s3

WRITE_TIMEOUT_S = 4.0
#: Longer than a write attempt may take, cut off (:data:`~.scenarios.WRITE_FAILS_WITHIN_S`).
CUT_S = 15.0

# In `tox -e faults` (CI's time budget); CI keeps the store's 503s on data files
# (tests/hosts/test_s3_errors.py), which pypaimon-rust's writer fails on at once.
pytestmark = pytest.mark.faults


def test_a_write_cut_off_from_s3_fails_in_bounded_time_and_is_made_again_once(cluster: Cluster) -> None:
    lines = committer_cut_off_from_s3(cluster, after_commits=1, delay_s=0.0, cut_s=CUT_S)
    failures = [line for line in lines if line["outcome"] == "write failed"]
    assert any("s3.write-timeout" in line["error"] or "Timeout was reached" in line["error"] for line in failures), \
        lines


def test_a_data_file_put_the_store_never_answers_fails_the_attempt_within_the_write_timeout_and_it_is_made_again(
        cluster: Cluster) -> None:
    table, warehouse, options = new_table(cluster, **{"s3.write-timeout": f"{WRITE_TIMEOUT_S:g} s"})
    net = cluster.network
    with S3FaultProxy(cluster.s3.endpoint, listen_host=net.controller_address) as proxy:
        unanswered = proxy.hang("PUT", "/bucket-")  # the first data file pypaimon-rust's writer puts
        run = committer(net["a"], {"warehouse": warehouse, "table": "db.t", "who": "A",
                                   "options": {**options, "s3.endpoint": proxy.endpoint},
                                   "commits": commits("driver", range(1, 4)), "write_attempts": 3})
        outcomes = final_outcomes(run.finish(timeout_s=120))
    failures = [line for line in run.lines if line["outcome"] == "write failed"]
    assert unanswered.fired == 1
    assert len(failures) == 1, failures
    assert "StoreUnavailableError" in failures[0]["error"], failures
    assert f"not written within s3.write-timeout={WRITE_TIMEOUT_S:g} s" in failures[0]["error"], failures
    assert failures[0]["seconds"] < WRITE_TIMEOUT_S + 4, failures
    assert [outcomes[("driver", i)]["outcome"] for i in range(1, 4)] == ["committed"] * 3
    check_exactly_once(table, cluster, warehouse, [("driver", i) for i in range(1, 4)], {})
