"""``log.format = arrow``: a log record holds an Arrow IPC stream of a batch of one
partition's changes (see :mod:`tablelog.formats.arrow`), on the built-in file log."""

from __future__ import annotations

import ast
import json
import secrets
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner

import tablelog
from tablelog import AddColumn, Normalizer, RenameColumn
from tablelog.cli import cli
from tablelog.commit.log_commit import new_token
from tablelog.errors import ForeignRecordError, OptionError, SchemaMismatchError
from tablelog.formats.arrow import FORMAT_VERSION_KEY, SCHEMA_ID_KEY, encode_records
from tablelog.options import ArrowCompression
from tablelog.records import ProduceBatch, RowKind
from tablelog.table import Table, internals
from tablelog.testing import NO_COMPACTION
from tablelog.verify import verify

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("score", pa.float64()), ("note", pa.string())])


def make(tmp_path: Path, fmt: str = "arrow", bucket: int = 2, **options: str) -> Table:
    return tablelog.create_table(
        str(tmp_path / "wh"), "db.t", SCHEMA, primary_key=["id"], bucket=bucket,
        options={"log.system": "filesystem", "log.format": fmt, **NO_COMPACTION, **options},
    )


def rows(count: int, start: int = 0, tag: str = "v") -> list[dict[str, Any]]:
    return [{"id": i, "name": f"{tag}-{i}", "score": i / 4, "note": "n" * 40} for i in range(start, start + count)]


def write(table: Table, data: list[Any]) -> None:
    with table.writer() as writer:
        writer.write(data)
        writer.commit()


def log_ends(table: Table) -> dict[int, int]:
    log = internals(table).open_log()
    try:
        log.ensure_topic()
        return log.end_positions(list(range(table.log_partitions)))
    finally:
        log.close()


def log_records(table: Table, partition: int) -> dict[int, bytes]:
    """Each record's value by position."""
    log = internals(table).open_log()
    try:
        return {r.position: r.value for r in log.fetch(partition, 0, 10_000, 0.2).records}  # type: ignore[misc]
    finally:
        log.close()


def rows_per_record(table: Table, partition: int) -> dict[int, int]:
    return {pos: pa.ipc.open_stream(v).read_all().num_rows for pos, v in log_records(table, partition).items()}


def read(table: Table, **kwargs: Any) -> list[Any]:
    kwargs.setdefault("scan_mode", "earliest")
    with table.reader(**kwargs) as reader:
        return reader.read_all(idle_timeout_s=0.2)


def test_a_record_is_one_arrow_ipc_stream_of_kind_and_table_columns_with_schema_id_and_no_key(tmp_path: Path) -> None:
    table = make(tmp_path, bucket=1)
    write(table, rows(3))
    log = internals(table).open_log()
    try:
        [record] = log.fetch(0, 0, 10, 0.2).records
    finally:
        log.close()
    assert record.key is None
    decoded = pa.ipc.open_stream(record.value).read_all()
    assert decoded.schema.names == ["_kind", *SCHEMA.names]
    assert decoded.schema.metadata == {SCHEMA_ID_KEY: b"0", FORMAT_VERSION_KEY: b"1"}
    assert decoded.column("_kind").to_pylist() == ["+I"] * 3
    assert decoded.drop_columns(["_kind"]).to_pylist() == rows(3)


@pytest.mark.parametrize("compression", list(ArrowCompression))
def test_every_compression_reads_back_and_the_stream_names_its_codec(tmp_path: Path, compression: str) -> None:
    table = make(tmp_path, **{"log.arrow.compression": compression.value})
    write(table, rows(50))
    assert sorted((c.row["id"], c.row["note"]) for c in read(table)) == [(i, "n" * 40) for i in range(50)]


def test_a_write_larger_than_the_record_limit_splits_into_records_that_read_back_whole_and_in_order(
    tmp_path: Path,
) -> None:
    table = make(tmp_path, bucket=1, **{"log.max-record-bytes": "4000"})
    write(table, rows(500))
    records = log_records(table, 0)
    assert len(records) > 5 and all(len(v) <= 4000 for v in records.values())
    per_record = {pos: pa.ipc.open_stream(v).read_all().column("id").to_pylist() for pos, v in records.items()}
    assert [i for ids in per_record.values() for i in ids] == list(range(500))
    changes = read(table)
    assert [c.row["id"] for c in changes] == list(range(500))
    # every row of one record has that record's position
    assert Counter(c.position for c in changes) == {pos: len(ids) for pos, ids in per_record.items()}


def test_a_row_larger_than_the_record_limit_is_refused_naming_its_key_and_nothing_is_written(tmp_path: Path) -> None:
    table = make(tmp_path, **{"log.max-record-bytes": "2000"})
    write(table, rows(10))
    ends, snapshot = log_ends(table), internals(table).files.latest_snapshot()
    too_big = {"id": 77, "name": secrets.token_hex(5000), "score": 0.0, "note": "n"}  # incompressible
    with table.writer() as writer, pytest.raises(SchemaMismatchError) as raised:
        writer.write([*rows(5, start=100), too_big])
    message = str(raised.value)
    assert "{'id': 77}" in message and "log.max-record-bytes=2000" in message and "nothing was written" in message
    assert log_ends(table) == ends and internals(table).files.latest_snapshot() == snapshot
    assert sorted(r["id"] for r in table.rows().to_pylist()) == list(range(10))


def test_a_failed_attempt_s_arrow_records_are_never_returned_and_each_committed_row_is_once(tmp_path: Path) -> None:
    table = make(tmp_path, **{"log.max-record-bytes": "3000"})
    dead = table.write_task("w", 1, task="dead")
    dead.write(rows(200, tag="dead"))
    dead.finish()  # produced and durable, never committed
    task = table.write_task("w", 1, task="live")
    task.write(rows(200))
    receipt = task.finish()
    result = table.commit("w", 1, [receipt])
    assert result.rows == 200 and result.records == sum(r.count for r in receipt.ranges) > 2
    assert sum(len(log_records(table, p)) for p in range(2)) == 2 * result.records  # both attempts produced
    changes = read(table, consistency="transactional")
    assert Counter(c.row["id"] for c in changes) == Counter(range(200))
    assert {c.row["name"].split("-")[0] for c in changes} == {"v"}
    arrow = pa.concat_tables(
        [table.reader(consistency="transactional", scan_mode="earliest").poll_arrow(timeout_s=0.2)]
    )
    assert sorted(arrow.column("id").to_pylist()) == list(range(200))
    assert verify(table).consistent


def test_an_eventual_reader_with_normalize_gives_the_table_rows(tmp_path: Path) -> None:
    table = make(tmp_path, **{"log.max-record-bytes": "3000"})
    write(table, rows(100))
    write(table, [("-D", r) for r in rows(10)] + [("+U", r) for r in rows(10, start=50, tag="w")])
    normalizer = Normalizer(["id"])
    normalizer.apply(read(table, consistency="eventual"))
    assert sorted(normalizer.rows(), key=lambda r: r["id"]) == table.rows().sort_by("id").to_pylist()


def test_a_reader_resumed_from_a_saved_position_mid_stream_returns_each_committed_row_once(tmp_path: Path) -> None:
    table = make(tmp_path, **{"log.max-record-bytes": "3000"})
    for start in range(0, 300, 100):
        write(table, rows(100, start=start))
    seen: list[int] = []
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        seen += [c.row["id"] for c in reader.poll(max_records=70)]
        saved = reader.position.to_json()
    assert 0 < len(seen) < 300 and saved
    with table.reader(saved) as reader:
        seen += [c.row["id"] for c in reader.read_all(idle_timeout_s=0.2)]
    assert Counter(seen) == Counter(range(300))


def test_a_poll_allowed_to_split_partitions_returns_whole_records_exceeding_max_records_by_less_than_one(
    tmp_path: Path,
) -> None:
    # By default a poll finishes an arrow log's partition it began (tests/core/test_table_fallback.py).
    table = make(tmp_path, bucket=1, **{"log.max-record-bytes": "3000"})
    write(table, rows(300))
    record_rows = rows_per_record(table, 0)
    with table.reader(consistency="transactional", scan_mode="earliest", split_partitions=True) as reader:
        polls = [reader.poll(max_records=50) for _ in range(3)]
        one = reader.poll(max_records=1)
    for changes in [*polls, one]:
        assert all(record_rows[pos] == n for pos, n in Counter(c.position for c in changes).items())  # whole records
    for changes in polls:
        assert 50 <= len(changes) < 50 + max(record_rows.values())
    assert len({c.position for c in one}) == 1


def test_a_reader_spanning_an_alter_returns_the_added_column_from_the_snapshot_that_has_it(tmp_path: Path) -> None:
    table = make(tmp_path)
    with table.reader(consistency="transactional", scan_mode="latest") as reader:
        reader.poll(timeout_s=0.1)
        write(table, rows(3))
        before = [c.row for c in reader.read_all(idle_timeout_s=0.2)]
        other = tablelog.open_table(table.warehouse.path, table.identifier)
        other.alter(AddColumn("extra", pa.int32()))
        write(other, [{**r, "extra": 7} for r in rows(2, start=10)])
        after = [c.row for c in reader.read_all(idle_timeout_s=0.2)]
    assert sorted(r["id"] for r in before) == [0, 1, 2] and all("extra" not in r for r in before)
    assert sorted((r["id"], r["extra"]) for r in after) == [(10, 7), (11, 7)]
    assert reader.schema.names == [*SCHEMA.names, "extra"]
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        arrow = pa.concat_tables([reader.poll_arrow(timeout_s=0.2) for _ in range(3)])
    assert sorted(zip(arrow.column("id").to_pylist(), arrow.column("extra").to_pylist(), strict=True)) == [
        (0, None), (1, None), (2, None), (10, 7), (11, 7)]


@pytest.mark.parametrize("fmt", ["arrow", "json", "debezium-json"])
@pytest.mark.parametrize("consistency", ["transactional", "eventual"])
def test_a_reader_given_columns_returns_only_those_and_the_key(tmp_path: Path, fmt: str, consistency: str) -> None:
    table = make(tmp_path, fmt)
    write(table, rows(20))
    with table.reader(consistency=consistency, scan_mode="earliest", columns=["score"]) as reader:
        changes = reader.read_all(idle_timeout_s=0.2)
        assert reader.schema.names == ["id", "score"]
    assert sorted((c.row["id"], c.row["score"]) for c in changes) == [(i, i / 4) for i in range(20)]
    assert all(list(c.row) == ["id", "score"] for c in changes)
    with table.reader(consistency=consistency, scan_mode="earliest", columns=["score"]) as reader:
        arrow = reader.poll_arrow(timeout_s=0.2)
    assert arrow.schema.names == ["_kind", "id", "score"] and arrow.num_rows == 20


def test_a_hybrid_read_given_columns_returns_the_same_columns_from_the_scan_and_the_log(tmp_path: Path) -> None:
    table = make(tmp_path)
    write(table, rows(5))
    with table.reader(scan_mode="latest-full", columns=["name"]) as reader:
        scanned = reader.read_all(idle_timeout_s=0.2)
        write(table, rows(2, start=5))
        logged = reader.read_all(idle_timeout_s=0.2)
    assert [sorted(c.row) for c in scanned + logged] == [["id", "name"]] * 7


def test_an_unknown_column_is_refused_naming_it_and_the_tables_columns(tmp_path: Path) -> None:
    table = make(tmp_path)
    with pytest.raises(OptionError, match=r"no column 'nope'; its columns: id, name, score, note"):
        table.reader(columns=["name", "nope"])


def _own_record(table: Table, value: bytes) -> None:
    log = internals(table).open_log()
    try:
        log.ensure_topic()
        log.produce(ProduceBatch(token=new_token(internals(table).token_prefix), partition=1, keys=[None], values=[value],
                                 timestamp_ms=0))
        log.flush(5)
    finally:
        log.close()


@pytest.mark.parametrize(("what", "value"), [
    ("not an IPC stream", b"\xff\xff\xff\xffgarbage"),
    ("a batch of another schema", encode_records(
        pa.table({"id": ["a"], "name": ["x"]}), [RowKind.INSERT], schema_id=0,
        compression=ArrowCompression.LZ4, limit=10_000)[0]),
    ("a row kind that is not one", encode_records(
        pa.Table.from_pylist(rows(2), SCHEMA), ["+I", "+X"], schema_id=0,  # type: ignore[list-item]
        compression=ArrowCompression.LZ4, limit=10_000)[0]),
    ("a row kind longer than one", encode_records(
        pa.Table.from_pylist(rows(2), SCHEMA), ["+I", "+Ia"], schema_id=0,  # type: ignore[list-item]
        compression=ArrowCompression.LZ4, limit=10_000)[0]),
])
def test_an_undecodable_arrow_value_is_a_foreign_record_naming_topic_partition_and_position(
    tmp_path: Path, what: str, value: bytes
) -> None:
    table = make(tmp_path)
    _own_record(table, value)
    with pytest.raises(ForeignRecordError, match=r"partition 1, position 0: its value does not decode as arrow"):
        read(table, consistency="eventual")
    with table.reader(consistency="eventual", scan_mode="earliest", options={"log.foreign-records": "skip"}) as reader:
        assert reader.read_all(idle_timeout_s=0.2) == [] and reader.foreign_skipped == 1


def test_updates_and_deletes_keep_their_row_kinds_and_upsert_drops_update_before(tmp_path: Path) -> None:
    table = make(tmp_path, **{"log.changelog-mode": "upsert"})
    write(table, rows(2))
    write(table, [("-U", rows(1)[0]), ("+U", rows(1, tag="w")[0]), ("-D", rows(2)[1])])
    kinds = [c.kind for c in read(table, consistency="transactional")]
    assert Counter(kinds) == {RowKind.INSERT: 2, RowKind.UPDATE_AFTER: 1, RowKind.DELETE: 1}


def test_tail_prints_arrow_records_as_json_changes_and_only_the_columns_asked_for(tmp_path: Path) -> None:
    table = make(tmp_path)
    write(table, rows(6))
    common = ["tail", "-w", table.warehouse.path, "db.t", "--scan-mode", "earliest", "--idle-timeout", "0.3",
              "--format", "json"]
    result = CliRunner().invoke(cli, common, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    docs = [json.loads(line) for line in result.stdout.splitlines()]
    assert sorted(d["row"]["id"] for d in docs) == list(range(6))
    assert {d["kind"] for d in docs} == {"+I"} and all(d["key"] == {"id": d["row"]["id"]} for d in docs)
    result = CliRunner().invoke(cli, [*common, "--columns", "name"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert {tuple(json.loads(line)["row"]) for line in result.stdout.splitlines()} == {("id", "name")}
    result = CliRunner().invoke(cli, [*common, "--columns", "nope"])
    assert result.exit_code != 0 and "no column 'nope'" in result.output + result.stderr


def _documented_decoder() -> tuple[set[str], Any]:
    """The decoding function of the foreign-reader snippet in docs/log-formats.md, run as written."""
    page = (Path(__file__).parents[2] / "docs" / "log-formats.md").read_text()
    snippet = page.split("<!-- foreign-reader-snippet -->", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    module = ast.parse(snippet)
    [function] = [node for node in module.body if isinstance(node, ast.FunctionDef)]
    imports = [node for node in module.body if isinstance(node, ast.Import) and node.names[0].name == "pyarrow"]
    source = ast.unparse(ast.Module(body=[*imports, function], type_ignores=[]))
    namespace: dict[str, Any] = {}  # a fresh module: pyarrow is all it has
    exec(compile(source, "docs/log-formats.md", "exec"), namespace)  # noqa: S102 -- our own docs
    names = {node.id for node in ast.walk(function) if isinstance(node, ast.Name)}
    return names, namespace[function.name]


def test_the_documented_foreign_reader_decodes_a_record_with_pyarrow_alone(tmp_path: Path) -> None:
    names, decode = _documented_decoder()
    assert names <= {"pa", "value", "bytes"}  # pyarrow and its argument, nothing else
    table = make(tmp_path, bucket=1)
    write(table, rows(4))
    write(table, [("-D", rows(1)[0])])
    decoded = [decode(value) for value in log_records(table, 0).values()]
    assert [t.schema.metadata[b"tablelog.schema-id"] for t in decoded] == [b"0", b"0"]
    assert pa.concat_tables(decoded).to_pylist() == [
        *({"_kind": "+I", **r} for r in rows(4)), {"_kind": "-D", **rows(1)[0]}]


def test_a_reader_given_columns_returns_records_of_an_older_schema_under_the_new_names(tmp_path: Path) -> None:
    table = make(tmp_path)
    write(table, rows(3))
    table.alter(RenameColumn("name", "label"))
    write(table, [{"id": 9, "label": "new", "score": 1.0, "note": "x"}])
    with table.reader(consistency="transactional", scan_mode="earliest", columns=["label"]) as reader:
        changes = reader.read_all(idle_timeout_s=0.2)
    assert sorted((c.row["id"], c.row["label"]) for c in changes) == [(0, "v-0"), (1, "v-1"), (2, "v-2"), (9, "new")]
    assert all(list(c.row) == ["id", "label"] for c in changes)


@pytest.mark.parametrize("consistency", ["transactional", "eventual"])
def test_poll_arrow_given_columns_returns_only_them_for_records_before_and_after_an_alter(
    tmp_path: Path, consistency: str
) -> None:
    table = make(tmp_path, **{"log.max-record-bytes": "3000"})
    write(table, rows(30))
    table.alter(RenameColumn("name", "label"))
    table.alter(AddColumn("extra", pa.int32()))
    write(table, [{"id": i, "label": f"new-{i}", "score": 1.0, "note": "x", "extra": 7} for i in range(100, 110)])
    with table.reader(consistency=consistency, scan_mode="earliest", columns=["label", "extra"]) as reader:
        parts = [reader.poll_arrow(max_records=15, timeout_s=0.2)]
        while parts[-1].num_rows:
            parts.append(reader.poll_arrow(max_records=15, timeout_s=0.2))
    arrow = pa.concat_tables(parts)
    assert arrow.schema.names == ["_kind", "id", "label", "extra"]
    assert sorted(arrow.drop_columns(["_kind"]).to_pylist(), key=lambda r: r["id"]) == [
        *({"id": i, "label": f"v-{i}", "extra": None} for i in range(30)),
        *({"id": i, "label": f"new-{i}", "extra": 7} for i in range(100, 110))]


@pytest.mark.parametrize("consistency", ["transactional", "eventual"])
def test_poll_arrow_returns_the_changes_poll_returns_across_an_alter(tmp_path: Path, consistency: str) -> None:
    table = make(tmp_path, **{"log.max-record-bytes": "3000"})
    write(table, rows(60))
    table.alter(AddColumn("extra", pa.int32()))
    write(table, [{**r, "extra": 1} for r in rows(40, start=100)])
    with table.reader(consistency=consistency, scan_mode="earliest") as reader:
        changes = reader.read_all(idle_timeout_s=0.2)
    with table.reader(consistency=consistency, scan_mode="earliest") as reader:
        parts = [reader.poll_arrow(max_records=25, timeout_s=0.2)]
        while parts[-1].num_rows:
            parts.append(reader.poll_arrow(max_records=25, timeout_s=0.2))
    arrow = pa.concat_tables(parts)
    assert arrow.schema.names == ["_kind", *SCHEMA.names, "extra"]
    expected = [{"_kind": c.kind.value, **c.row} for c in changes]
    if consistency == "eventual":  # in order per partition only: polls of other sizes interleave them otherwise
        assert sorted(arrow.to_pylist(), key=lambda r: r["id"]) == sorted(expected, key=lambda r: r["id"])
    else:
        assert arrow.to_pylist() == expected


def test_an_eventual_reader_bounded_by_until_positions_returns_whole_records_before_them_only(tmp_path: Path) -> None:
    table = make(tmp_path)
    write(table, rows(30))
    ends = log_ends(table)
    write(table, rows(30, start=100))  # past the bound
    with table.reader(consistency="eventual", scan_mode="earliest", until_positions=ends) as reader:
        got = reader.poll_arrow(max_records=1_000, timeout_s=0.5)
        assert reader.position.offsets == ends
        assert reader.poll_arrow(max_records=1_000, timeout_s=0.2).num_rows == 0
    assert sorted(got.column("id").to_pylist()) == list(range(30))
