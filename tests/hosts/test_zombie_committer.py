"""A committer paused in the middle of its snapshot put for longer than the restarted
driver's whole run, then resumed (a zombie: a GC pause, a frozen VM). Counted on both
sides (tests/hosts/committers.py)."""

from __future__ import annotations

import time

from tablelog.testing.s3_faults import S3FaultProxy

from .committers import check_exactly_once, commits, committer, final_outcomes, new_table
from .conftest import Cluster
from .scenarios import wait_fired

OFFSETS = {"driver": 0, "other": 100_000}


def test_a_committer_paused_mid_commit_and_resumed_after_the_restarted_driver_commits_nothing_twice(
        cluster: Cluster) -> None:
    table, warehouse, options = new_table(cluster)
    net = cluster.network
    with S3FaultProxy(cluster.s3.endpoint, listen_host=net.controller_address) as proxy:
        held = proxy.hang("PUT", "/snapshot/snapshot-2")
        zombie = committer(net["a"], {"warehouse": warehouse, "table": "db.t", "who": "A", "offsets": OFFSETS,
                                      "options": {**options, "s3.endpoint": proxy.endpoint},
                                      "commits": commits("driver", [1, 2, 3, 4])})
        wait_fired(held, proxy)
        net["a"].pause(zombie.process)
        proxy.clear()  # its put never reached the store; its connection closes while it sleeps

        restarted = committer(net["b"], {"warehouse": warehouse, "table": "db.t", "who": "B", "offsets": OFFSETS,
                                         "options": options,
                                         "commits": commits("driver", [2, 3, 4]) + commits("other", [1])})
        second = final_outcomes(restarted.finish())
        time.sleep(3)  # longer than the restarted driver's whole run took, and its timeouts
        net["a"].resume(zombie.process)
        first = final_outcomes(zombie.finish())

    assert [second[("driver", i)]["outcome"] for i in (2, 3, 4)] == ["committed"] * 3
    # The zombie wakes up, its put is refused (the id is taken), it reads the table again
    # and finds each of its identifiers committed: nothing twice, nothing overwritten, and
    # each answer names the snapshot that holds it.
    assert [first[("driver", i)]["outcome"] for i in (1, 2, 3, 4)] == ["committed", "already", "already", "already"]
    snapshots = {s.id: s for s in table.snapshots()}
    for identifier in (2, 3, 4):
        named = snapshots[first[("driver", identifier)]["snapshot"]]
        assert (named.commit_user, named.commit_identifier) == ("driver", identifier)
        assert first[("driver", identifier)]["snapshot"] == second[("driver", identifier)]["snapshot"]
    assert {r["who"] for r in table.rows().to_pylist() if r["identifier"] in (2, 3, 4)} == {"B"}
    check_exactly_once(table, cluster, warehouse, [*(("driver", i) for i in (1, 2, 3, 4)), ("other", 1)], OFFSETS)
