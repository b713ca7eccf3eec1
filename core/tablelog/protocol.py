"""The commit protocol's records under their first module name; they live in
:mod:`tablelog.commit.record` (the whole commit: :mod:`tablelog.commit`)."""

from tablelog.commit.record import (
    FORMAT_VERSION,
    P_COMMIT,
    P_CONTIGUOUS,
    P_END,
    P_RANGES,
    P_SYSTEM,
    P_TOPIC,
    P_VERSION,
    P_WRITER,
    CommitResult,
    LogCommitRecord,
    WriteReceipt,
    new_token,
)

__all__ = [
    "FORMAT_VERSION",
    "P_COMMIT",
    "P_CONTIGUOUS",
    "P_END",
    "P_RANGES",
    "P_SYSTEM",
    "P_TOPIC",
    "P_VERSION",
    "P_WRITER",
    "CommitResult",
    "LogCommitRecord",
    "WriteReceipt",
    "new_token",
]
