"""The committer scenarios at random fault points, many times (``tox -e faults``; marked
``faults``, out of the default run). Each iteration draws from its seed whether the
committer is partitioned or frozen, at which phase of which identifier's snapshot put,
and how long after the restarted driver it comes back; every iteration is counted
(:func:`~.scenarios.cut_off_at_snapshot_put`). ``TABLELOG_FAULT_ITERATIONS`` (default 20)
and ``TABLELOG_FAULT_SEED`` (default 0) choose how many and which."""

from __future__ import annotations

import os

import pytest

from .conftest import Cluster
from .scenarios import random_cut

ITERATIONS = int(os.environ.get("TABLELOG_FAULT_ITERATIONS", "20"))
SEED = int(os.environ.get("TABLELOG_FAULT_SEED", "0"))

pytestmark = pytest.mark.faults


@pytest.mark.parametrize("iteration", range(ITERATIONS))
def test_a_committer_cut_off_or_frozen_at_a_random_point_commits_each_identifier_once(
        cluster: Cluster, iteration: int, record_property: pytest.RecordProperty) -> None:
    chosen = random_cut(cluster, SEED * 1_000 + iteration)
    record_property("fault", chosen)
    print(f"iteration {iteration}: {chosen}")
