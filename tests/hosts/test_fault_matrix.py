"""The scenarios across hosts at random fault points, many times (``tox -e faults``; marked
``faults``, out of the default run); every iteration is counted. Each draws from its seed:

- a committer cut off at its snapshot put: partitioned or frozen, at which phase of which
  identifier's put, how long after the restarted driver it comes back
  (:func:`~.scenarios.cut_off_at_snapshot_put`);
- a reader cut off from its broker, Kafka's or Pulsar's: after how many records, for how
  long (:func:`~.scenarios.reader_cut_off_from_broker`);
- a store answering errors: which fault, armed after how many requests
  (:func:`~.scenarios.store_answers_errors`);
- a committer cut off from S3 while it writes: after which commit, how long after it, for
  how long (:func:`~.scenarios.committer_cut_off_from_s3`);
- a broker killed and started again (Tansu on memory or on S3, pulsar-lite): which, after
  which commit, how long after it, down for how long (:func:`~.scenarios.broker_restarted_mid_commit`).

``TABLELOG_FAULT_ITERATIONS`` (default 20) and ``TABLELOG_FAULT_SEED`` (default 0) choose
how many and which."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from .conftest import Cluster
from .scenarios import (
    STORE_FAULTS,
    broker_restarted_mid_commit,
    committer_cut_off_from_s3,
    random_cut,
    reader_cut_off_from_broker,
    store_answers_errors,
)

ITERATIONS = int(os.environ.get("TABLELOG_FAULT_ITERATIONS", "20"))
SEED = int(os.environ.get("TABLELOG_FAULT_SEED", "0"))

pytestmark = pytest.mark.faults


@pytest.mark.parametrize("iteration", range(ITERATIONS))
def test_a_committer_cut_off_or_frozen_at_a_random_point_commits_each_identifier_once(
        cluster: Cluster, iteration: int, record_property: pytest.RecordProperty) -> None:
    chosen = random_cut(cluster, SEED * 1_000 + iteration)
    record_property("fault", chosen)
    print(f"iteration {iteration}: {chosen}")


@pytest.mark.parametrize("iteration", range(ITERATIONS))
@pytest.mark.parametrize("log", ["kafka", "pulsar"])
def test_a_reader_cut_off_from_its_broker_at_a_random_point_reads_every_committed_record_once(
        cluster: Cluster, tmp_path: Path, log: str, iteration: int, record_property: pytest.RecordProperty) -> None:
    rng = random.Random(SEED * 1_000 + iteration)
    after, cut_s = rng.randint(1, 40), rng.uniform(0.5, 12.0)
    record_property("fault", f"cut after {after} records for {cut_s:.1f} s")
    reader_cut_off_from_broker(cluster, cut_after_records=after, cut_s=cut_s,
                               pulsar=tmp_path if log == "pulsar" else None)


@pytest.mark.parametrize("iteration", range(ITERATIONS))
def test_a_committer_cut_off_from_s3_at_a_random_point_of_its_writes_commits_each_identifier_once(
        cluster: Cluster, iteration: int, record_property: pytest.RecordProperty) -> None:
    rng = random.Random(SEED * 1_000 + iteration)
    after, delay_s, cut_s = rng.randint(1, 4), rng.uniform(0.0, 1.0), rng.uniform(1.0, 15.0)
    record_property("fault", f"cut {delay_s:.2f} s after commit {after} for {cut_s:.1f} s")
    committer_cut_off_from_s3(cluster, after_commits=after, delay_s=delay_s, cut_s=cut_s)


@pytest.mark.parametrize("iteration", range(ITERATIONS))
def test_a_committer_whose_store_fails_at_a_random_point_commits_each_identifier_once(
        cluster: Cluster, iteration: int, record_property: pytest.RecordProperty) -> None:
    rng = random.Random(SEED * 1_000 + iteration)
    fault, after = rng.choice(sorted(STORE_FAULTS)), rng.randint(0, 60)
    record_property("fault", f"{fault}, armed after {after} requests")
    store_answers_errors(cluster, fault, after_requests=after)


@pytest.mark.parametrize("iteration", range(ITERATIONS))
def test_a_broker_restarted_at_a_random_point_loses_no_committed_change_for_a_reader(
        cluster: Cluster, tmp_path: Path, iteration: int, record_property: pytest.RecordProperty) -> None:
    rng = random.Random(SEED * 1_000 + iteration)
    system = rng.choice(["kafka", "kafka-on-s3", "pulsar"])
    after, delay_s, down_s = rng.randint(1, 8), rng.uniform(0.0, 0.6), rng.uniform(0.5, 6.0)
    record_property("fault", f"{system} broker killed {delay_s:.2f} s after commit {after}, down {down_s:.1f} s")
    broker_restarted_mid_commit(cluster, tmp_path, system, after_commits=after, delay_s=delay_s, down_s=down_s)
