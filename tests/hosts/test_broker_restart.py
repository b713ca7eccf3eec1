"""A broker killed while a committer on another host commits, and started again on its
data (Tansu on its S3 storage engine, pulsar-lite on its data directory), while a
transactional reader on a third host follows the table: each identifier committed once,
every committed record read once. Tansu on memory storage, which comes back empty, is
among the draws of ``tox -e faults`` (``test_fault_matrix.py``) and restarted on loopback
in ``tests/reliability/``."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import Cluster
from .scenarios import broker_restarted_mid_commit


@pytest.mark.parametrize("system", ["kafka-on-s3", "pulsar"])
def test_a_broker_killed_and_started_again_in_the_middle_of_the_commits_loses_no_committed_change_for_a_reader(
        cluster: Cluster, tmp_path: Path, system: str) -> None:
    broker_restarted_mid_commit(cluster, tmp_path, system, after_commits=4, delay_s=0.1, down_s=2.0)
