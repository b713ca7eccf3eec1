"""Bucket b goes to partition b: tablelog's routing equals Paimon's bucket function."""

import random

import pyarrow as pa
import pytest

import tablelog
from tablelog.store import PaimonTable
from tablelog.table import internals
from tablelog.writing.routing import partition_order


def route_rows(store: PaimonTable, data: pa.Table, log_partitions: int = 1) -> list[tuple[int, list[int]]]:
    """Row indices per partition, partitions ascending, rows in input order."""
    order, groups = partition_order(store, data, log_partitions)
    rows = range(data.num_rows) if order is None else order.tolist()
    return [(partition, list(rows[start:stop])) for partition, start, stop in groups]


@pytest.mark.parametrize("key_types", [[pa.int64()], [pa.int32()], [pa.int16()], [pa.int8()],
                                       [pa.int64(), pa.int32()], [pa.string()]])
@pytest.mark.parametrize("buckets", [2, 3, 7])
def test_routing_matches_paimons_own_bucket_function(tmp_path, key_types, buckets) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(buckets)
    names = [f"k{i}" for i in range(len(key_types))]
    schema = pa.schema([*(pa.field(n, t) for n, t in zip(names, key_types, strict=True)), ("v", pa.string())])
    columns = {}
    for name, data_type in zip(names, key_types, strict=True):
        if pa.types.is_string(data_type):
            columns[name] = pa.array([f"key-{rng.randrange(10**9)}" for _ in range(500)])
        else:
            bits = data_type.bit_width - 1
            columns[name] = pa.array([rng.randrange(-(2**bits), 2**bits) for _ in range(500)], data_type)
    data = pa.table({**columns, "v": ["x"] * 500}, schema=schema)
    table = tablelog.create_table(str(tmp_path), "db.r", schema, primary_key=names, bucket=buckets)
    assert route_rows(internals(table).files, data) == internals(table).files.key_hash_rows(data, buckets)


@pytest.mark.parametrize("key_type", [pa.int64(), pa.string()])
def test_partition_order_groups_rows_by_partition_keeping_input_order(tmp_path, key_type) -> None:  # type: ignore[no-untyped-def]
    schema = pa.schema([("k", key_type), ("v", pa.string())])
    keys = list(range(200)) if pa.types.is_integer(key_type) else [f"key-{i}" for i in range(200)]
    data = pa.table({"k": pa.array(keys, key_type), "v": ["x"] * 200}, schema=schema)
    table = tablelog.create_table(str(tmp_path), "db.o", schema, primary_key=["k"], bucket=4)
    order, groups = partition_order(internals(table).files, data, 4)
    assert order is not None
    assert [p for p, _, _ in groups] == [0, 1, 2, 3]
    assert [stop - start for _, start, stop in groups] == [len(rows) for _, rows in route_rows(internals(table).files, data)]
    for (partition, start, stop), (expected_partition, rows) in zip(groups, internals(table).files.key_hash_rows(data, 4), strict=True):
        assert partition == expected_partition
        assert order[start:stop].tolist() == rows  # ascending: input order within a partition


def test_one_partition_needs_no_reordering(tmp_path) -> None:  # type: ignore[no-untyped-def]
    schema = pa.schema([("k", pa.int64())])
    table = tablelog.create_table(str(tmp_path), "db.one", schema, primary_key=["k"], bucket=1)
    assert partition_order(internals(table).files, pa.table({"k": [3, 1, 2]}, schema=schema), 1) == (None, [(0, 0, 3)])


@pytest.mark.parametrize("key_type", [pa.int32(), pa.string()])
def test_a_dynamic_bucket_tables_rows_go_to_their_keys_hash_modulo_the_log_partitions(tmp_path, key_type) -> None:  # type: ignore[no-untyped-def]
    schema = pa.schema([("k", key_type), ("v", pa.string())])
    keys = list(range(300)) if pa.types.is_integer(key_type) else [f"key-{i}" for i in range(300)]
    data = pa.table({"k": pa.array(keys, key_type), "v": ["x"] * 300}, schema=schema)
    table = tablelog.create_table(str(tmp_path), "db.d", schema, primary_key=["k"], bucket=-1,
                                  options={"log.system.partitions": "5"})
    files = internals(table).files
    assert files.bucket == -1 and table.log_partitions == 5
    routed = route_rows(files, data, 5)
    assert [p for p, _ in routed] == [0, 1, 2, 3, 4]
    # The hash of a fixed-bucket table with 5 buckets: the same function, another modulus.
    fixed = tablelog.create_table(str(tmp_path), "db.f", schema, primary_key=["k"], bucket=5)
    assert routed == route_rows(internals(fixed).files, data) == files.key_hash_rows(data, 5)
