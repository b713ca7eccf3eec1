"""An object store that answers errors, or applies a request and never answers it, to a
committer on its own host. Counted on both sides (tests/hosts/committers.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tablelog.testing.s3_faults import Rule, S3FaultProxy

from .committers import check_exactly_once, commits, committer, final_outcomes, new_table
from .conftest import Cluster

#: What the store does wrong, each a few times over the committer's run.
FAULTS: dict[str, Callable[[S3FaultProxy], Rule]] = {
    # pypaimon-rust's writer makes one attempt per request: its write attempt fails and is made again.
    "503 on data files": lambda proxy: proxy.fail("PUT", "/bucket-", times=3),
    "503 on the snapshot put": lambda proxy: proxy.fail("PUT", "/snapshot/snapshot-", times=2),
    "503 on reads": lambda proxy: proxy.fail("GET", "/t-", times=3),
    "a snapshot put applied and never answered": lambda proxy: proxy.apply_then_hang("PUT", "/snapshot/snapshot-3"),
    "a snapshot put applied and its connection reset": lambda proxy: proxy.apply_then_drop(
        "PUT", "/snapshot/snapshot-", times=2),
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_committer_whose_store_answers_errors_commits_each_identifier_once(cluster: Cluster, fault: str) -> None:
    table, warehouse, options = new_table(cluster, **{"s3.max-attempts": "4"})  # past three errors in a row
    with S3FaultProxy(cluster.s3.endpoint, listen_host=cluster.network.controller_address) as proxy:
        rule = FAULTS[fault](proxy)
        run = committer(cluster.network["a"], {"warehouse": warehouse, "table": "db.t", "who": "A",
                                               "options": {**options, "s3.endpoint": proxy.endpoint},
                                               "commits": commits("driver", range(1, 6)), "retry_unknown_s": 0.2})
        outcomes = final_outcomes(run.finish())

    assert rule.fired >= 1, proxy.requests
    assert sorted(outcomes) == [("driver", i) for i in range(1, 6)]
    assert all(line["outcome"] == "committed" for line in outcomes.values()), outcomes
    check_exactly_once(table, cluster, warehouse, [("driver", i) for i in range(1, 6)], {})
