"""A broker killed while a committer on another host commits, and started again (Tansu
empty: memory storage loses every record; pulsar-lite on its data), while a
transactional reader on a third host follows the table: each identifier committed once,
every committed record read once."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import Cluster
from .scenarios import broker_restarted_mid_commit


@pytest.mark.parametrize("system", ["kafka", "pulsar"])
def test_a_broker_killed_and_started_again_in_the_middle_of_the_commits_loses_no_committed_change_for_a_reader(
        cluster: Cluster, tmp_path: Path, system: str) -> None:
    broker_restarted_mid_commit(cluster, tmp_path, system, after_commits=4, delay_s=0.1, down_s=2.0)
