"""The pure-Python Paimon write path keeps working beside the native one."""

import pyarrow as pa

import tablelog
from tablelog.table import internals
from tablelog.verify import verify


def test_table_with_native_write_disabled_round_trips_through_the_log(tmp_path) -> None:  # type: ignore[no-untyped-def]
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    table = tablelog.create_table(str(tmp_path), "db.pure", schema, primary_key=["id"], bucket=2,
                                  options={"log.system": "filesystem", "write.native.enabled": "false"})
    assert internals(table).files.properties["write.native.enabled"] == "false"
    with table.writer() as writer:
        writer.write([{"id": i, "name": str(i)} for i in range(50)])
        writer.commit()
        writer.write([("-D", {"id": 0, "name": "0"})])
        writer.commit()
    assert table.rows().num_rows == 49
    assert verify(table).consistent


def test_table_without_primary_key_appends_and_replays(tmp_path) -> None:  # type: ignore[no-untyped-def]
    schema = pa.schema([("event", pa.string()), ("n", pa.int32())])
    table = tablelog.create_table(str(tmp_path), "db.events", schema, bucket=2,
                                  options={"log.system": "filesystem"})
    with table.writer() as writer:
        writer.write([{"event": "click", "n": 1}] * 3)
        writer.commit()
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        changes = reader.read_all()
    assert [c.kind.value for c in changes] == ["+I"] * 3
    report = verify(table)
    assert report.consistent and report.table_rows == 3
