"""A compaction writes its files as their rows come (:class:`tablelog.store.streamed_file.StreamedFile`):
the files and their metadata are those pypaimon's writer gives the same rows written whole
(key range, statistics, sequence numbers, row count), so readers prune and merge them alike."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tablelog.store import compaction_files
from tablelog.store.compaction import bucket_files, rewrite_bucket
from tablelog.store.streamed_file import StreamedFile as RealStreamedFile
from tablelog.store.warehouse import Warehouse
from tests.core.test_compaction_memory import write_bucket

#: What differs between two writes of the same rows.
_PER_WRITE = ("file_name", "file_path", "file_size", "creation_time", "external_path")


def _described(meta: Any) -> dict[str, Any]:
    fields = {name: getattr(meta, name) for name in vars(meta) if name not in _PER_WRITE}
    return {name: repr(value) for name, value in fields.items()}


@pytest.mark.parametrize("thin", [False, True], ids=["keys", "thin"])
def test_a_streamed_file_has_the_metadata_and_rows_of_the_same_rows_written_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, thin: bool,
) -> None:
    write_bucket(tmp_path, 30_000, 50)
    files = Warehouse(str(tmp_path)).open("db.t")
    (bucket,) = bucket_files(files.paimon, files.latest_snapshot().id)

    opened = []
    monkeypatch.setattr(compaction_files, "StreamedFile",
                        lambda *args: opened.append(args) or RealStreamedFile(*args))
    streamed = rewrite_bucket(files.paimon, bucket, 5, True, thin=thin, target_file_size=1 << 20)
    assert len(opened) == len(streamed)  # each file written as its rows came
    monkeypatch.setattr(compaction_files, "streams", lambda writer: False)
    whole = rewrite_bucket(files.paimon, bucket, 5, True, thin=thin, target_file_size=1 << 20)

    assert len(streamed) == len(whole) > 1
    assert [_described(m) for m in streamed] == [_described(m) for m in whole]
    for one, other in zip(streamed, whole, strict=True):
        assert pq.read_table(one.file_path).equals(pq.read_table(other.file_path))
