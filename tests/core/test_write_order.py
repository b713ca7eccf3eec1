"""One write spanning several partitions keeps every key's changes in input order."""

from collections import defaultdict

import pyarrow as pa
import pytest

import tablelog

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


@pytest.mark.parametrize("mode", ["all", "upsert"])
def test_a_batch_of_mixed_kinds_over_four_partitions_reads_back_in_input_order_per_key(tmp_path, mode) -> None:  # type: ignore[no-untyped-def]
    table = tablelog.create_table(str(tmp_path), "db.mixed", SCHEMA, primary_key=["id"], bucket=4,
                                  options={"log.system": "filesystem", "log.changelog-mode": mode})
    changes = [("+I", {"id": i, "name": "a"}) for i in range(40)]
    changes += [change for i in range(0, 40, 3) for change in
                (("-U", {"id": i, "name": "a"}), ("+U", {"id": i, "name": "b"}))]
    changes += [("-D", {"id": i, "name": "b" if i % 3 == 0 else "a"}) for i in range(0, 40, 5)]
    with table.writer() as writer:
        writer.write(changes)
        writer.commit()
    expected: dict[int, list[tuple[str, str]]] = defaultdict(list)
    for kind, row in changes:
        if mode == "upsert" and kind == "-U":
            continue  # an upsert log carries no -U
        expected[row["id"]].append((kind, row["name"]))
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        got: dict[int, list[tuple[str, str]]] = defaultdict(list)
        for change in reader.read_all(idle_timeout_s=0.2):
            got[change.row["id"]].append((change.kind.value, change.row["name"]))
    assert got == expected
