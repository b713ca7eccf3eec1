"""A key-value file of the table's current schema is read with pyarrow directly (its
Parquet row groups, a batch at a time) and gives what pypaimon's reader gives: the same
columns, in the same order, of the same types, with the same values. Files pypaimon must
map (an older schema) are still read by pypaimon."""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import tablelog
from tablelog import AddColumn
from tablelog.store import pypaimon_internals
from tablelog.store.compaction import bucket_files
from tablelog.store.other_writers import create_paimon_table
from tablelog.store.pypaimon_internals import key_value_file_batches
from tablelog.store.warehouse import Warehouse
from tablelog.table import internals
from tablelog.tables import create_table

SCHEMA = pa.schema([
    ("p", pa.int32()), ("k", pa.int64()), ("flag", pa.bool_()), ("small", pa.int16()), ("ratio", pa.float64()),
    ("name", pa.string()), ("blob", pa.binary()), ("day", pa.date32()), ("at", pa.timestamp("us")),
    ("amount", pa.decimal128(10, 2)),
])


def rows(keys: range, tag: str) -> pa.Table:
    return pa.table({
        "p": [k % 2 for k in keys], "k": list(keys), "flag": [k % 3 == 0 for k in keys],
        "small": [k % 100 for k in keys], "ratio": [k / 7 for k in keys],
        "name": [None if k % 5 == 0 else f"{tag}-{k}" for k in keys], "blob": [bytes([k % 256]) * 3 for k in keys],
        "day": [datetime.date(2026, 1, 1 + k % 28) for k in keys],
        "at": [datetime.datetime(2026, 1, 1, 0, 0, k % 60) for k in keys],
        "amount": [decimal.Decimal(k) / 100 for k in keys],
    }, schema=SCHEMA)


def write(files: Any, commit: int, data: pa.Table, kinds: list[str]) -> None:
    writer = files.new_write()
    try:
        writer.write_arrow(data, kinds)
        messages = writer.prepare_commit(commit)
    finally:
        writer.close()
    files.commit(messages, commit_user="test", commit_identifier=commit, properties={})


@pytest.fixture(params=["tablelog's table: thin files, partitioned", "pypaimon's table: key columns in its files"])
def files(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """The table's files (the store's object), after an insert and an update of some keys."""
    if request.param.startswith("tablelog"):
        table = create_table(str(tmp_path), "db.t", SCHEMA, primary_key=["p", "k"], partition_keys=["p"], bucket=2,
                             options={"read.batch-size": "64"})
        opened = internals(table).files
        assert opened.paimon.options.options.to_map()["data-file.thin-mode"] == "true"
    else:
        wh = Warehouse(str(tmp_path))
        create_paimon_table(wh, "db.t", SCHEMA, ["k"], bucket=2, options={"read.batch-size": "64"})
        opened = wh.open("db.t")
    write(opened, 1, rows(range(0, 300), "a"), ["+I"] * 300)
    write(opened, 2, rows(range(0, 300, 3), "b"), ["-D" if k % 2 else "+U" for k in range(0, 300, 3)])
    return opened


def read_each_file(files: Any) -> Iterator[tuple[Any, pa.Table]]:
    """Each data file at the latest snapshot, with what key_value_file_batches reads of it."""
    for bucket in bucket_files(files.paimon, files.latest_snapshot().id):
        for file in bucket.files:
            batches = list(key_value_file_batches(files.paimon, bucket.partition, bucket.bucket, [file]))
            yield file, pa.Table.from_batches(batches)


def by_pypaimon(files: Any, monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, pa.Table]]:
    with monkeypatch.context() as patched:
        patched.setattr(pypaimon_internals, "_reads_parquet_directly", lambda paimon: False)
        return list(read_each_file(files))


def same(direct: pa.Table, read: pa.Table) -> None:
    assert direct.column_names == read.column_names
    assert [c.type for c in direct.columns] == [c.type for c in read.columns]
    for name in read.column_names:
        assert direct.column(name).combine_chunks().equals(read.column(name).combine_chunks()), name


def test_a_current_schema_parquet_file_reads_the_same_with_pyarrow_as_with_pypaimon(
    files: Any, monkeypatch: pytest.MonkeyPatch,
) -> None:
    expected = by_pypaimon(files, monkeypatch)
    opened: list[int] = []
    real = pypaimon_internals._iter_parquet
    monkeypatch.setattr(pypaimon_internals, "_iter_parquet",
                        lambda parquet, *args: opened.append(parquet.metadata.num_rows) or real(parquet, *args))
    read = list(read_each_file(files))
    assert len(opened) == len(read) == len(expected) >= 4  # every file read directly
    for (file, direct), (_, by_paimon) in zip(read, expected, strict=True):
        assert direct.num_rows == file.row_count > 0
        same(direct, by_paimon)
    assert max(batch.num_rows for _, table in read for batch in table.to_batches()) <= 64  # read.batch-size


def test_a_file_of_an_older_schema_is_read_by_pypaimon(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = create_table(str(tmp_path), "db.t", SCHEMA, primary_key=["p", "k"], partition_keys=["p"], bucket=2)
    with table.writer() as writer:
        writer.write(rows(range(0, 100), "a").to_pylist())
        writer.commit()
    table.alter(AddColumn("note", pa.string()))
    files = internals(tablelog.open_table(str(tmp_path), "db.t")).files
    expected = by_pypaimon(files, monkeypatch)
    opened: list[int] = []
    real = pypaimon_internals._iter_parquet
    monkeypatch.setattr(pypaimon_internals, "_iter_parquet",
                        lambda parquet, *args: opened.append(1) or real(parquet, *args))
    read = list(read_each_file(files))
    assert not opened and len(read) == len(expected) >= 2
    for (file, direct), (_, by_paimon) in zip(read, expected, strict=True):
        same(direct, by_paimon)
        assert direct.column("note").null_count == file.row_count
