"""An object store that answers errors, or applies a request and never answers it, to a
committer on its own host. Counted on both sides (tests/hosts/committers.py)."""

from __future__ import annotations

import pytest

from .conftest import Cluster
from .scenarios import STORE_FAULTS, store_answers_errors


@pytest.mark.parametrize("fault", list(STORE_FAULTS))
def test_a_committer_whose_store_answers_errors_commits_each_identifier_once(cluster: Cluster, fault: str) -> None:
    store_answers_errors(cluster, fault)
