"""Bucket b goes to partition b: tablelog's routing equals Paimon's bucket function."""

import random

import pyarrow as pa
import pytest

import tablelog
from tablelog.routing import _route_with_pypaimon, route_rows


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
    assert route_rows(table.store, data) == _route_with_pypaimon(table.store, data)
