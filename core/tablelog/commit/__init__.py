"""The commit protocol, in one package: what a snapshot records about the log
(:mod:`~tablelog.commit.log_commit`), the idempotent commit that writes it
(:mod:`~tablelog.commit.committer`), the log system's hook after it
(:mod:`~tablelog.commit.hook`), and the walk over the table's past commits
(:mod:`~tablelog.commit.history`).
"""

from tablelog.commit.committer import commit
from tablelog.commit.history import (
    find_commit,
    last_commit_identifier,
    last_end_positions,
    log_commits,
    snapshot_commits,
    written_by,
)
from tablelog.commit.log_commit import CommitResult, LogCommitRecord, WriteReceipt, new_token

__all__ = [
    "CommitResult",
    "LogCommitRecord",
    "WriteReceipt",
    "commit",
    "find_commit",
    "last_commit_identifier",
    "last_end_positions",
    "log_commits",
    "new_token",
    "snapshot_commits",
    "written_by",
]
