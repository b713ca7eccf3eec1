"""Dynamic buckets (``bucket = -1``, Paimon's default for a primary-key table): a key's
log partition is Paimon's bucket hash of the key modulo ``log.system.partitions``, never
the bucket Paimon chose; tables pypaimon made that way are written, read, compacted and
verified; several writers keep one row per key. (The exactly-once scenarios run on
dynamic buckets too: tests/core/test_exactly_once_filesystem.py, tests/kafka.)"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import tablelog
from tablelog.errors import CommitError, OptionError
from tablelog.logs import discovery
from tablelog.reading import Change
from tablelog.table import Table, internals
from tablelog.testing.memory_log import MemoryLog
from tablelog.verify import verify
from tablelog.writing.routing import partition_order

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
#: Small buckets: Paimon makes several, so that buckets and log partitions differ.
SMALL_BUCKETS = {"dynamic-bucket.target-row-num": "15"}


def dynamic_table(warehouse: Path, **options: str) -> Table:
    return tablelog.create_table(
        str(warehouse), f"db.d_{uuid.uuid4().hex[:8]}", SCHEMA, primary_key=["id"], bucket=-1,
        options={"log.system": "filesystem", "log.system.partitions": "3", **SMALL_BUCKETS, **options},
    )


def write_rounds(table: Table, rounds: int, writer_id: str = "w") -> Counter[tuple[str, int, str]]:
    """Each round inserts 20 new keys, updates 5 of the round before and deletes one;
    returns every change written, counted."""
    written: Counter[tuple[str, int, str]] = Counter()
    with table.writer(writer_id) as writer:
        for r in range(rounds):
            changes: list[Any] = [("+I", {"id": r * 100 + i, "v": f"r{r}"}) for i in range(20)]
            if r:
                changes += [("+U", {"id": (r - 1) * 100 + i, "v": f"u{r}"}) for i in range(5)]
                changes += [("-D", {"id": (r - 1) * 100 + 19, "v": f"r{r - 1}"})]
            writer.write(changes)
            writer.commit()
            written.update((kind, row["id"], row["v"]) for kind, row in changes)
    return written


def counted(changes: list[Change]) -> Counter[tuple[str, int, str]]:
    return Counter((c.kind.value, c.row["id"], c.row["v"]) for c in changes)


def table_rows(table: Table) -> dict[int, str]:
    return {r["id"]: r["v"] for r in table.rows().to_pylist()}


def replay(changes: list[Change]) -> dict[int, str]:
    state: dict[int, str] = {}
    for change in changes:
        if change.kind.is_retraction:
            state.pop(change.row["id"], None)
        else:
            state[change.row["id"]] = change.row["v"]
    return state


def rows_read_by_plain_pypaimon(warehouse: Path, identifier: str) -> dict[int, str]:
    import pypaimon

    paimon = pypaimon.CatalogFactory.create({"warehouse": str(warehouse)}).get_table(identifier)
    builder = paimon.new_read_builder()
    result = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    return {r["id"]: r["v"] for r in result.to_pylist()}


def test_bucket_minus_one_is_dynamic_and_minus_two_is_refused_with_the_reason(tmp_path: Path) -> None:
    table = tablelog.create_table(str(tmp_path), "db.d", SCHEMA, primary_key=["id"], bucket=-1,
                                  options={"log.system": "filesystem"})
    assert internals(table).files.bucket == -1
    # The default partition count is stored: a key's partition is its hash modulo it, for good.
    assert internals(table).files.properties["log.system.partitions"] == "4" and table.log_partitions == 4
    with pytest.raises(OptionError, match=r"postponed buckets \(-2\) are not supported: Paimon keeps their rows "
                                          r"out of every read until a postpone compaction"):
        tablelog.create_table(str(tmp_path), "db.p", SCHEMA, primary_key=["id"], bucket=-2)
    with pytest.raises(OptionError, match=r"expected an integer >= 1 \(fixed buckets\) or -1 \(dynamic buckets\)"):
        tablelog.create_table(str(tmp_path), "db.z", SCHEMA, primary_key=["id"], bucket=0)
    with pytest.raises(OptionError, match="bucket-key='id' is not supported with bucket=-1"):
        tablelog.create_table(str(tmp_path), "db.k", SCHEMA, primary_key=["id"], bucket=-1,
                              options={"bucket-key": "id"})
    assert sorted(internals(table).warehouse.tables()) == ["db.d"]  # nothing else was created


def test_a_keys_changes_stay_in_the_log_partition_of_its_hash_in_write_order(tmp_path: Path) -> None:
    table = dynamic_table(tmp_path)
    written = write_rounds(table, 4)
    files = internals(table).files
    buckets = {s.bucket for s in files.compactions().bucket_files(files.latest_snapshot().id)}  # type: ignore[union-attr]
    assert len(buckets) > 3  # Paimon made more buckets than the log has partitions
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        changes = reader.read_all(idle_timeout_s=0.3)
    assert counted(changes) == written  # every change once
    keys = pa.table({"id": pa.array([c.row["id"] for c in changes], pa.int64()), "v": [c.row["v"] for c in changes]})
    order, groups = partition_order(files, keys, 3)
    expected_partition = {}
    for partition, start, stop in groups:
        for row in (range(start, stop) if order is None else order[start:stop].tolist()):
            expected_partition[keys["id"][row].as_py()] = partition
    by_key: dict[int, list[Change]] = {}
    for change in changes:
        by_key.setdefault(change.row["id"], []).append(change)
    for key, its_changes in by_key.items():
        assert {c.partition for c in its_changes} == {expected_partition[key]}
        positions = [c.position for c in its_changes]
        assert positions == sorted(positions)  # the log keeps a key's changes in write order
    assert replay(changes) == table_rows(table)
    assert rows_read_by_plain_pypaimon(tmp_path, table.identifier) == table_rows(table)


def test_a_hybrid_reader_of_some_log_partitions_gets_exactly_their_keys(tmp_path: Path) -> None:
    table = dynamic_table(tmp_path)
    write_rounds(table, 3)
    everything = table_rows(table)
    seen: dict[int, str] = {}
    for partition in range(3):
        with table.reader(consistency="transactional", partitions=[partition]) as reader:  # latest-full
            full = reader.poll(max_records=10_000)
            seen_here = replay(full)
        assert seen_here and not set(seen_here) & set(seen)  # each key in one partition
        seen.update(seen_here)
    assert seen == everything  # no gap, no overlap


def test_two_writers_that_started_from_one_snapshot_keep_one_row_per_key(tmp_path: Path) -> None:
    table = dynamic_table(tmp_path)
    first, second = table.write_task("a", 1), table.write_task("b", 1)
    first.write([{"id": i, "v": "a"} for i in range(0, 24)])
    second.write([{"id": i, "v": "b"} for i in range(30, 54)])  # its own keys: both fill bucket 0 first
    table.commit("a", 1, [first.finish()])
    table.commit("b", 1, [second.finish()])  # its index of bucket 0 joins the first's
    late = table.write_task("c", 1)
    late.write([{"id": i, "v": "c"} for i in [*range(0, 24), *range(30, 54)]])  # every key again
    table.commit("c", 1, [late.finish()])
    rows = table.rows().to_pylist()
    assert Counter(r["id"] for r in rows) == Counter([*range(0, 24), *range(30, 54)])  # one row per key
    assert {r["v"] for r in rows} == {"c"}
    assert verify(table).consistent


def test_a_key_two_writers_put_in_different_buckets_refuses_the_second_commit(tmp_path: Path) -> None:
    table = dynamic_table(tmp_path)
    first, second = table.write_task("a", 1), table.write_task("b", 1)
    first.write([{"id": i, "v": "a"} for i in range(0, 20)])  # 15 fill bucket 0, 5 go to bucket 1
    second.write([{"id": i, "v": "b"} for i in range(10, 30)])  # keys 15..19 fill bucket 0 here
    # Both write their files before either commits (a task's files are written by its
    # finish at the latest): both placed their keys from the same, empty, table.
    first_receipt, second_receipt = first.finish(), second.finish()
    table.commit("a", 1, [first_receipt])
    with pytest.raises(CommitError, match=r"dynamic buckets: a key \(hash -?\d+\) of this commit went to bucket 0 "
                                          r"of partition \[\] while the table, or another task of this commit, has "
                                          r"it in bucket 1"):
        table.commit("b", 1, [second_receipt])
    retry = table.write_task("b", 1)
    retry.write([{"id": i, "v": "b"} for i in range(10, 30)])
    table.commit("b", 1, [retry.finish()])
    assert Counter(r["id"] for r in table.rows().to_pylist()) == Counter(range(30))
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        assert Counter(c.row["id"] for c in reader.read_all(idle_timeout_s=0.3)) == Counter(
            [*range(20), *range(10, 30)])  # the refused commit's records never reach it


def test_compaction_rewrites_the_buckets_paimon_made_and_changes_no_row(tmp_path: Path) -> None:
    table = dynamic_table(tmp_path, **{"num-sorted-run.compaction-trigger": str(2**31 - 1)})
    write_rounds(table, 4)
    before = table_rows(table)
    result = table.compact()
    assert result.snapshot_id is not None and len(result.buckets) > 3
    assert table_rows(table) == before == rows_read_by_plain_pypaimon(tmp_path, table.identifier)
    report = verify(table)
    assert report.consistent, report.summary()
    with pytest.raises(OptionError, match=r"bucket 999: table 'db.d_\w+' has buckets 0, 1, .* \(dynamic buckets\)"):
        table.compact([999])
    write_rounds(table, 2, writer_id="after")  # the HASH index survived the rewrite: one row per key
    assert len(table.rows()) == len(table_rows(table))


@pytest.fixture
def memory_log() -> Iterator[MemoryLog]:
    log = MemoryLog()
    discovery.register_log_system("memory", log.plugin())
    yield log
    discovery.unregister_log_system("memory")


def test_a_reader_whose_log_range_is_gone_gets_its_partitions_changes_from_the_table_once(
    tmp_path: Path, memory_log: MemoryLog,
) -> None:
    table = dynamic_table(tmp_path, **{"log.system": "memory", "log.fetch-timeout-ms": "300"})
    write_rounds(table, 1)
    position = table.reader(consistency="transactional", scan_mode="latest").position.to_json()
    with table.writer("w2") as writer:
        writer.write([{"id": 1000 + i, "v": "gone"} for i in range(30)])
        writer.commit()
    for partition in range(3):  # retention: snapshot 2's records are gone from the log
        memory_log.delete_records(table.topic, partition, 10**6)
    with table.reader(position) as reader:
        changes = reader.read_all(idle_timeout_s=0.3)
    # From the table files: each partition's own keys, once (not the whole delta per partition).
    assert Counter(c.row["id"] for c in changes) == Counter(range(1000, 1030))


def test_a_table_pypaimon_made_without_a_bucket_count_is_written_compacted_and_read_by_tablelog(
    tmp_path: Path,
) -> None:
    import pypaimon

    catalog = pypaimon.CatalogFactory.create({"warehouse": str(tmp_path)})
    catalog.create_database("db", True)
    catalog.create_table("db.p", pypaimon.Schema.from_pyarrow_schema(
        SCHEMA, primary_keys=["id"], options=SMALL_BUCKETS), False)
    paimon = catalog.get_table("db.p")
    builder = paimon.new_batch_write_builder()
    write, commit = builder.new_write(), builder.new_commit()
    write.write_arrow(pa.table({"id": list(range(40)), "v": ["pypaimon"] * 40}, schema=SCHEMA))
    commit.commit(write.prepare_commit())
    write.close(), commit.close()
    table = tablelog.open_table(str(tmp_path), "db.p")
    assert internals(table).files.bucket == -1 and table.log_partitions == 4
    with table.writer() as writer:
        writer.write([("+U", {"id": i, "v": "tablelog"}) for i in range(30, 50)])
        writer.commit()
    expected = {i: "pypaimon" if i < 30 else "tablelog" for i in range(50)}
    assert table_rows(table) == expected
    assert table.compact().snapshot_id is not None
    assert table_rows(table) == rows_read_by_plain_pypaimon(tmp_path, "db.p") == expected
    with table.reader(consistency="transactional", partitions=[0, 2]) as reader:
        some = replay(reader.poll(max_records=10_000))
    with table.reader(consistency="transactional", partitions=[1, 3]) as reader:
        rest = replay(reader.poll(max_records=10_000))
    assert not set(some) & set(rest) and {**some, **rest} == expected


def test_expiry_removes_the_key_index_files_only_expired_snapshots_use(tmp_path: Path) -> None:
    table = dynamic_table(tmp_path, **{"snapshot.num-retained.min": "1", "snapshot.time-retained": "1 h"})
    write_rounds(table, 5)  # every round adds keys: each commit writes its buckets' index again
    index_dir = Path(internals(table).files.path) / "index"
    before = set(index_dir.iterdir())
    result = tablelog.open_table(str(tmp_path), table.identifier, {"snapshot.time-retained": "0 ms"}).expire_snapshots()
    assert len(list(table.snapshots())) == 1
    after = set(index_dir.iterdir())
    assert after < before and {Path(p) for p in result.expired.index_files} == before - after
    assert len(after) == len({s.bucket for s in internals(table).files.compactions().bucket_files(
        internals(table).files.latest_snapshot().id)})  # type: ignore[union-attr]  # one index file per bucket
    expected = table_rows(table)
    with table.writer("again") as writer:  # every key again: the kept index finds each key's bucket
        writer.write([{"id": key, "v": "again"} for key in expected])
        writer.commit()
    assert Counter(r["id"] for r in table.rows().to_pylist()) == Counter(list(expected))
    assert rows_read_by_plain_pypaimon(tmp_path, table.identifier) == dict.fromkeys(expected, "again")


def test_a_table_pypaimon_made_with_a_log_and_no_bucket_count_is_verified_and_read_exactly_once(
    tmp_path: Path,
) -> None:
    import pypaimon

    catalog = pypaimon.CatalogFactory.create({"warehouse": str(tmp_path)})
    catalog.create_database("db", True)
    catalog.create_table("db.l", pypaimon.Schema.from_pyarrow_schema(
        SCHEMA, primary_keys=["id"], options={"log.system": "filesystem", **SMALL_BUCKETS}), False)
    table = tablelog.open_table(str(tmp_path), "db.l")
    assert internals(table).files.bucket == -1 and table.log_partitions == 4
    written: Counter[tuple[str, int, str]] = Counter()
    with table.writer() as writer:
        for r in range(3):
            changes: list[Any] = [("+I", {"id": r * 100 + i, "v": f"r{r}"}) for i in range(20)]
            changes += [("+U", {"id": i, "v": f"u{r}"}) for i in range(3)] if r else []
            writer.write(changes)
            writer.commit()
            written.update((kind, row["id"], row["v"]) for kind, row in changes)
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        assert counted(reader.read_all(idle_timeout_s=0.3)) == written
    report = verify(table)
    assert report.consistent, report.summary()
    assert rows_read_by_plain_pypaimon(tmp_path, "db.l") == table_rows(table)
