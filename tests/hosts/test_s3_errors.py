"""An object store that answers errors, or applies a request and never answers it, to a
committer on its own host. Counted on both sides (tests/hosts/committers.py)."""

from __future__ import annotations

import pytest

from .conftest import Cluster
from .scenarios import STORE_FAULTS, store_answers_errors

#: In `tox -e faults` only (CI's time budget), beside the matrix's random store faults:
#: CI keeps a failed data-file put and the snapshot put's three faults.
FAULTS_RUN_ONLY = {"503 on reads"}


@pytest.mark.parametrize("fault", [pytest.param(fault, marks=pytest.mark.faults) if fault in FAULTS_RUN_ONLY else fault
                                   for fault in STORE_FAULTS])
def test_a_committer_whose_store_answers_errors_commits_each_identifier_once(cluster: Cluster, fault: str) -> None:
    store_answers_errors(cluster, fault)
