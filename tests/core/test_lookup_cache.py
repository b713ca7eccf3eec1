"""The lookup cache (tablelog.store.lookup_cache): a key lookup of a merge-engine table
maps each data file's decoded records from a local Arrow IPC file, built once from the
Parquet file; its records are those of a read of the files themselves, across schemas,
partitions and key shapes; it survives corrupt files and concurrent builders, and its
directory is bounded by Paimon's lookup.cache-max-disk-size and lookup.cache-file-retention."""

from __future__ import annotations

import datetime
import itertools
import os
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import tablelog
from tablelog.errors import OptionError
from tablelog.store import lookup_cache
from tablelog.store.compaction import bucket_files
from tablelog.store.key_records import key_record_table, key_tuples
from tablelog.store.lookup_cache import LookupCache, decoded_records, evict, record_schema
from tablelog.store.other_writers import create_paimon_table
from tablelog.store.schema_changes import AddColumn
from tablelog.store.warehouse import Warehouse
from tablelog.table import internals

_COMMITS = itertools.count(1)
_PARTIAL = {"merge-engine": "partial-update"}


def _table(warehouse: Path, schema: pa.Schema, primary_key: Sequence[str], bucket: int = 2,
           partition: Sequence[str] = ()) -> Any:
    wh = Warehouse(str(warehouse))
    create_paimon_table(wh, "db.t", schema, primary_key, bucket=bucket,
                        options={**_PARTIAL, **({"partition": ",".join(partition)} if partition else {})})
    return wh.open("db.t")


def _commit(files: Any, rows: Sequence[Mapping[str, Any]], kinds: Sequence[str] | None = None) -> None:
    write = files.new_write()
    try:
        write.write_arrow(pa.Table.from_pylist([dict(r) for r in rows], schema=files.schema),
                          list(kinds or ["+I"] * len(rows)))
        messages = write.prepare_commit(next(_COMMITS))
    finally:
        write.close()
    files.commit(messages, commit_user="test", commit_identifier=next(_COMMITS), properties={})


def _int_table(warehouse: Path, commits: int = 3) -> Any:
    files = _table(warehouse, pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())]), ["k"])
    for c in range(commits):
        _commit(files, [{"k": k, "v": f"{c}-{k}"} for k in range(c * 10, c * 10 + 40)])
    return files


def _lookup(files: Any, keys: pa.Table, cache: LookupCache | None, extra_files: Sequence[Any] = ()) -> list[dict[str, Any]]:
    snapshot = files.latest_snapshot()
    found = key_record_table(files.paimon, files._merge(), None if snapshot is None else snapshot.id, keys,
                             extra_files, cache)
    return _sorted(found)


def _sorted(table: pa.Table) -> list[dict[str, Any]]:
    return sorted(table.to_pylist(), key=lambda r: (r["_SEQUENCE_NUMBER"], repr(sorted(r.items()))))


def _every_record_of(files: Any, keys: pa.Table) -> list[dict[str, Any]]:
    """The reference: every file of the table decoded whole, its rows kept by key in Python."""
    options = files._merge()
    wanted = set(key_tuples(keys, options.primary_key))
    schema = record_schema(options)
    found = [
        row
        for group in bucket_files(files.paimon, files.latest_snapshot().id) for file in group.files
        for row in decoded_records(files.paimon, options, schema, group.partition, group.bucket, file).to_pylist()
        if tuple(row[c] for c in options.primary_key) in wanted
    ]
    return _sorted(pa.Table.from_pylist(found, schema=schema))


def _cache_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.arrow"))


def _counting_reads(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every data file read with pypaimon from now on."""
    reads: list[Any] = []
    original = lookup_cache.key_value_file_batches

    def counted(paimon: Any, partition: Any, bucket: int, files: Sequence[Any]) -> Any:
        reads.extend(files)
        return original(paimon, partition, bucket, files)

    monkeypatch.setattr(lookup_cache, "key_value_file_batches", counted)
    return reads


@pytest.mark.parametrize("shape", ["int key", "string key", "two key columns", "partitioned"])
def test_a_lookup_through_the_cache_returns_the_records_of_the_files_themselves(tmp_path: Path, shape: str) -> None:
    if shape == "int key":
        files = _int_table(tmp_path / "wh")
        keys = pa.table({"k": pa.array([0, 5, 12, 39, 41, 69, 70, 1000], pa.int64())})
    elif shape == "string key":
        files = _table(tmp_path / "wh", pa.schema([pa.field("k", pa.string(), nullable=False), ("v", pa.int64())]),
                       ["k"])
        for c in range(3):
            _commit(files, [{"k": f"key-{k:03}", "v": c} for k in range(c * 10, c * 10 + 40)])
        keys = pa.table({"k": ["key-000", "key-017", "key-069", "zzz", "key-0"]})
    else:
        schema = pa.schema([pa.field("p", pa.string(), nullable=False), pa.field("k", pa.int32(), nullable=False),
                            ("v", pa.string())])
        files = _table(tmp_path / "wh", schema, ["p", "k"], partition=["p"] if shape == "partitioned" else ())
        for c in range(3):
            _commit(files, [{"p": p, "k": k, "v": f"{c}"} for p in ("a", "b") for k in range(c * 5, c * 5 + 20)])
        keys = pa.table({"p": ["a", "a", "b", "b", "c"], "k": pa.array([0, 24, 3, 13, 3], pa.int32())})
    expected = _every_record_of(files, keys)
    assert expected and len({r["_SEQUENCE_NUMBER"] for r in expected}) > 1
    assert _lookup(files, keys, None) == expected
    cache = LookupCache(tmp_path / "cache")
    assert _lookup(files, keys, cache) == expected  # built
    assert _lookup(files, keys, cache) == expected  # mapped
    whole_table = _every_record_of(files, files.read_rows().select(list(files.primary_key)))
    assert _lookup(files, files.read_rows().select(list(files.primary_key)), cache) == whole_table


def test_a_second_lookup_reads_no_data_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = _int_table(tmp_path / "wh")
    keys = pa.table({"k": pa.array(range(70), pa.int64())})
    write = files.new_write()
    try:  # uncommitted files are cached too
        write.write_arrow(pa.table({"k": pa.array([1, 2], pa.int64()), "v": ["p1", "p2"]}), ["+I", "+I"])
        prepared = write.prepare_commit(next(_COMMITS))
    finally:
        write.close()
    reads = _counting_reads(monkeypatch)
    cache = LookupCache(tmp_path / "cache")
    first = _lookup(files, keys, cache, prepared)
    data_files = [f for group in bucket_files(files.paimon, files.latest_snapshot().id) for f in group.files]
    assert len(reads) == len(data_files) + sum(len(m.new_files) for m in prepared)
    assert len(_cache_files(tmp_path / "cache")) == len(reads)
    reads.clear()
    for parquet in (tmp_path / "wh").rglob("data-*"):
        parquet.unlink()
    assert _lookup(files, keys, cache, prepared) == first
    assert reads == []
    assert {r["v"] for r in first} >= {"p1", "p2", "2-59"}


def test_a_table_told_its_cache_keeps_decoded_files_in_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TABLELOG_LOOKUP_CACHE_DIR", str(tmp_path / "machine"))
    files = _int_table(tmp_path / "wh", commits=1)
    keys = pa.table({"k": pa.array([1, 2], pa.int64())})
    files.key_record_table(1, keys)
    assert not (tmp_path / "machine").exists()  # not told: each lookup decodes
    files.use_lookup_cache(None, datetime.timedelta(hours=1))
    assert files.key_record_table(1, keys).num_rows == 2
    assert _cache_files(tmp_path / "machine")


@pytest.mark.parametrize("partitioned", [False, True])
def test_the_files_a_writer_writes_are_cached_as_it_writes_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, partitioned: bool,
) -> None:
    monkeypatch.setenv("TABLELOG_LOOKUP_CACHE_DIR", str(tmp_path / "machine"))
    schema = pa.schema([pa.field("p", pa.string(), nullable=False), pa.field("k", pa.int32(), nullable=False),
                        ("v", pa.string())])
    files = _table(tmp_path / "wh", schema, ["p", "k"], partition=["p"] if partitioned else ())
    files.use_lookup_cache(None, datetime.timedelta(hours=1))
    for c in range(2):
        _commit(files, [{"p": p, "k": k, "v": f"{c}"} for p in ("a", "b") for k in range(c * 5, c * 5 + 20)])
    keys = pa.table({"p": ["a", "b", "b"], "k": pa.array([0, 7, 24], pa.int32())})
    expected = _every_record_of(files, keys)
    reads = _counting_reads(monkeypatch)
    snapshot = files.latest_snapshot().id
    assert _sorted(files.key_record_table(snapshot, keys)) == expected
    assert reads == []  # every file was kept when written: none is decoded


def test_the_files_a_compaction_writes_are_cached_as_it_writes_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TABLELOG_LOOKUP_CACHE_DIR", str(tmp_path / "machine"))
    files = _int_table(tmp_path / "wh")
    files.use_lookup_cache(None, datetime.timedelta(hours=1))
    operations = files.compactions()
    latest = files.latest_snapshot().id
    rewrites = [(group, operations.rewrite_bucket(group, 5, True)) for group in operations.bucket_files(latest)]
    operations.commit(rewrites, commit_user="compaction", commit_identifier=latest, properties={})
    keys = pa.table({"k": pa.array(range(0, 70, 3), pa.int64())})
    expected = _every_record_of(files, keys)
    reads = _counting_reads(monkeypatch)
    assert _sorted(files.key_record_table(files.latest_snapshot().id, keys)) == expected
    assert reads == []  # the compacted files were kept when written: none is decoded


def test_a_schema_change_gives_the_records_in_the_new_schema(tmp_path: Path) -> None:
    files = _int_table(tmp_path / "wh", commits=1)
    keys = pa.table({"k": pa.array([3, 4], pa.int64())})
    cache = LookupCache(tmp_path / "cache")
    before = _lookup(files, keys, cache)
    assert [set(r) for r in before] == [{"k", "v", "_SEQUENCE_NUMBER", "_VALUE_KIND"}] * 2
    files.alter([AddColumn("n", pa.int32())])
    files = Warehouse(str(tmp_path / "wh")).open("db.t")
    _commit(files, [{"k": 3, "v": "new", "n": 7}])
    after = _lookup(files, keys, cache)
    assert after == _every_record_of(files, keys)
    assert [(r["k"], r["v"], r["n"]) for r in after] == [(3, "0-3", None), (4, "0-4", None), (3, "new", 7)]


def test_a_corrupt_or_vanished_cache_file_is_built_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = _int_table(tmp_path / "wh")
    keys = pa.table({"k": pa.array(range(0, 70, 3), pa.int64())})
    cache = LookupCache(tmp_path / "cache")
    expected = _lookup(files, keys, cache)
    built = _cache_files(tmp_path / "cache")
    assert len(built) >= 3
    built[0].write_bytes(built[0].read_bytes()[:100])  # truncated
    built[1].write_bytes(b"\0" * built[1].stat().st_size)  # overwritten
    built[2].unlink()  # evicted by another process
    reads = _counting_reads(monkeypatch)
    assert _lookup(files, keys, cache) == expected
    assert len(reads) == 3
    assert _cache_files(tmp_path / "cache") == built
    reads.clear()
    assert _lookup(files, keys, cache) == expected
    assert reads == []


def test_eviction_keeps_the_directory_within_its_size_and_removes_files_past_retention(tmp_path: Path) -> None:
    files = _int_table(tmp_path / "wh", commits=4)
    keys = pa.table({"k": pa.array(range(80), pa.int64())})
    expected = _lookup(files, keys, None)
    unbounded = LookupCache(tmp_path / "all")
    _lookup(files, keys, unbounded)
    sizes = sorted(p.stat().st_size for p in _cache_files(tmp_path / "all"))
    limit = sum(sizes[-3:])  # room for some files, not all
    assert len(sizes) == 8 and limit < sum(sizes)
    bounded = LookupCache(tmp_path / "bounded", max_disk_size=limit)
    assert _lookup(files, keys, bounded) == expected
    kept = _cache_files(tmp_path / "bounded")
    assert 0 < len(kept) < len(sizes) and sum(p.stat().st_size for p in kept) <= limit

    old = time.time() - 7200
    for path in _cache_files(tmp_path / "all"):
        os.utime(path, (old, old))
    (tmp_path / "all" / ".building-dead").write_bytes(b"x")
    os.utime(tmp_path / "all" / ".building-dead", (old, old))
    other = _table(tmp_path / "wh2", pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())]), ["k"])
    _commit(other, [{"k": 1, "v": "x"}])
    # A bounded cache sweeps after each insertion: this one evicts the hour-old files.
    _lookup(other, pa.table({"k": pa.array([1], pa.int64())}), LookupCache(tmp_path / "all", 1 << 30, 3600))
    assert len(_cache_files(tmp_path / "all")) == 1
    assert not (tmp_path / "all" / ".building-dead").exists()


def test_eviction_removes_the_least_recently_used_first(tmp_path: Path) -> None:
    now = time.time()
    for name, used, size in [("a", 50, 100), ("b", 10, 100), ("c", 30, 100), ("d", 40, 100)]:
        path = tmp_path / f"{name}.arrow"
        path.write_bytes(b"x" * size)
        os.utime(path, (now - used, now - used))
    evict(tmp_path, 250, 3600, now)
    assert [p.name for p in _cache_files(tmp_path)] == ["b.arrow", "c.arrow"]
    evict(tmp_path, None, 20, now)
    assert [p.name for p in _cache_files(tmp_path)] == ["b.arrow"]


def test_a_hit_makes_its_file_the_most_recently_used(tmp_path: Path) -> None:
    files = _int_table(tmp_path / "wh", commits=1)
    cache = LookupCache(tmp_path / "cache")
    _lookup(files, pa.table({"k": pa.array(range(40), pa.int64())}), cache)
    old = time.time() - 600
    for path in _cache_files(tmp_path / "cache"):
        os.utime(path, (old, old))
    _lookup(files, pa.table({"k": pa.array([0], pa.int64())}), cache)
    touched = [p for p in _cache_files(tmp_path / "cache") if p.stat().st_mtime > old + 1]
    assert len(touched) == 1  # the one file whose key range holds 0


def test_concurrent_builders_of_one_entry_each_get_its_records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = _table(tmp_path / "wh", pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())]), ["k"],
                   bucket=1)
    _commit(files, [{"k": k, "v": str(k)} for k in range(1000)])
    keys = pa.table({"k": pa.array(range(0, 1000, 7), pa.int64())})
    expected = _lookup(files, keys, None)
    both_missed = threading.Barrier(2, timeout=30)
    original = lookup_cache.key_value_file_batches

    def read_together(*args: Any) -> Any:
        both_missed.wait()  # each thread found no cache file before either wrote one
        return original(*args)

    monkeypatch.setattr(lookup_cache, "key_value_file_batches", read_together)
    results: list[Any] = [None, None]

    def look_up(at: int) -> None:
        results[at] = _lookup(files, keys, LookupCache(tmp_path / "cache"))

    threads = [threading.Thread(target=look_up, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert results == [expected, expected]
    assert [p.name.endswith(".arrow") for p in (tmp_path / "cache").iterdir()] == [True]
    monkeypatch.setattr(lookup_cache, "key_value_file_batches", original)
    assert _lookup(files, keys, LookupCache(tmp_path / "cache")) == expected


def test_the_cache_options_take_paimons_values_and_reach_the_tables_files(tmp_path: Path) -> None:
    table = tablelog.create_table(
        str(tmp_path), "db.t", pa.schema([pa.field("k", pa.int64(), nullable=False)]), primary_key=["k"],
        options={**_PARTIAL, "lookup.cache-max-disk-size": "256 mb", "lookup.cache-file-retention": "30 min"})
    cache = internals(table).files._lookup_cache
    assert (cache.max_disk_size, cache.retention_seconds) == (256 << 20, 1800.0)
    opened = tablelog.open_table(str(tmp_path), "db.t", {"lookup.cache-max-disk-size": "10GB"})
    assert internals(opened).files._lookup_cache.max_disk_size == 10 << 30
    default = internals(tablelog.open_table(str(tmp_path), "db.t")).options
    assert default.lookup_cache_file_retention.total_seconds() == 1800.0
    with pytest.raises(OptionError, match=r"invalid value '10 parsecs' for option 'lookup.cache-max-disk-size': "
                                          r"expected a size"):
        tablelog.open_table(str(tmp_path), "db.t", {"lookup.cache-max-disk-size": "10 parsecs"})


def test_a_cache_directory_others_may_write_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = _int_table(tmp_path / "wh", commits=1)
    keys = pa.table({"k": pa.array([1, 2], pa.int64())})
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    reads = _counting_reads(monkeypatch)
    cache = LookupCache(shared)
    assert _lookup(files, keys, cache) == _lookup(files, keys, cache) == _lookup(files, keys, None)
    assert not _cache_files(shared)
    assert len(reads) >= 3  # every lookup decoded the files again
