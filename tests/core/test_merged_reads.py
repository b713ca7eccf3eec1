"""The store's reads of merge-engine tables merge as Java does (tablelog.merging), level 0
included; key_records returns a key's raw records in merge order; writes of folded rows
with their kinds are taken as they are; compaction keeps the rows. Checked against the
pure merge of every record written, pypaimon's own read where it supports the table, and
pypaimon-rust's native read for aggregation retractions."""

from __future__ import annotations

import itertools
import types
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import pyarrow as pa
import pytest

from tablelog.commit.compaction import compact, compact_after_commit
from tablelog.merging import KeyValue, merge, merged_row
from tablelog.records import RowKind
from tablelog.store.other_writers import create_paimon_table
from tablelog.store.schema_changes import AddColumn
from tablelog.store.warehouse import Warehouse

Change = tuple[str, Mapping[str, Any]]
_COMMITS = itertools.count(1)


def _table(tmp_path: Any, schema: pa.Schema, options: Mapping[str, str], bucket: int = 1) -> Any:
    wh = Warehouse(str(tmp_path))
    create_paimon_table(wh, "db.t", schema, ["k"], bucket=bucket, options=options)
    return wh.open("db.t")


def _prepare(files: Any, changes: Sequence[Change]) -> list[Any]:
    write = files.new_write()
    try:
        write.write_arrow(pa.Table.from_pylist([dict(r) for _, r in changes], schema=files.schema),
                          [k for k, _ in changes])
        return write.prepare_commit(next(_COMMITS))
    finally:
        write.close()


def _commit(files: Any, changes: Sequence[Change]) -> None:
    files.commit(_prepare(files, changes), commit_user="test", commit_identifier=next(_COMMITS), properties={})


def _expected(files: Any, commits: Sequence[Sequence[Change]]) -> list[dict[str, Any]]:
    """The pure merge of every record written, in write order."""
    by_key: dict[Any, list[KeyValue]] = {}
    sequence = itertools.count()
    for changes in commits:
        for kind, row in changes:
            full = {name: row.get(name) for name in files.schema.names}
            by_key.setdefault(row["k"], []).append(KeyValue(RowKind(kind), full, next(sequence)))
    options = files._merge()
    rows = [merged_row(merge(records, options)) for _, records in sorted(by_key.items())]
    return [dict(r) for r in rows if r is not None]


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    return sorted(table.to_pylist(), key=lambda r: r["k"])


def _pypaimon_read(files: Any, options: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    paimon = files.paimon.copy(dict(options or {}))
    builder = paimon.new_read_builder()
    result = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    return [] if result is None else _rows(result)


def _write_and_check(files: Any, commits: Sequence[Sequence[Change]]) -> list[dict[str, Any]]:
    for changes in commits:
        _commit(files, changes)
    expected = _expected(files, commits)
    assert _rows(files.read_rows()) == expected
    assert files.count_rows(files.latest_snapshot()) == len(expected)
    return expected


def _schema(*fields: tuple[str, pa.DataType]) -> pa.Schema:
    return pa.schema([pa.field("k", pa.int64(), nullable=False), *fields])


def test_a_first_row_tables_read_includes_level_0_as_pypaimons_read_after_compaction(tmp_path: Any) -> None:
    files = _table(tmp_path, _schema(("v", pa.string())), {"merge-engine": "first-row"})
    commits = [[("+I", {"k": 1, "v": "a"}), ("+I", {"k": 2, "v": "b"})], [("+I", {"k": 1, "v": "x"}), ("+I", {"k": 3, "v": "c"})]]
    expected = _write_and_check(files, commits)
    assert expected == [{"k": 1, "v": "a"}, {"k": 2, "v": "b"}, {"k": 3, "v": "c"}]
    assert _pypaimon_read(files) == []  # pypaimon's batch read skips level 0
    _compact_all(files)
    assert _rows(files.read_rows()) == expected == _pypaimon_read(files)


def test_a_partial_update_tables_read_equals_pypaimons(tmp_path: Any) -> None:
    files = _table(tmp_path, _schema(("a", pa.string()), ("b", pa.int64())), {"merge-engine": "partial-update"})
    commits = [[("+I", {"k": 1, "a": "x"}), ("+I", {"k": 2, "b": 3})], [("+I", {"k": 1, "b": 7}), ("+I", {"k": 3})]]
    expected = _write_and_check(files, commits)
    assert expected == _pypaimon_read(files)


def test_partial_update_sequence_groups_and_their_retractions_merge_as_java(tmp_path: Any) -> None:
    schema = _schema(("a", pa.string()), ("g1", pa.int64()), ("b", pa.int64()), ("g2", pa.int64()))
    files = _table(tmp_path, schema, {"merge-engine": "partial-update", "fields.g1.sequence-group": "a",
                                      "fields.g2.sequence-group": "b"})
    commits = [
        [("+I", {"k": 1, "a": "new", "g1": 5, "b": 1, "g2": 1}), ("+I", {"k": 2, "a": "x", "g1": 1})],
        [("+I", {"k": 1, "a": "late", "g1": 3, "b": 2, "g2": 2}), ("-D", {"k": 2, "a": "x", "g1": 2})],
        [("-U", {"k": 1, "b": 2, "g2": 3})],
    ]
    expected = _write_and_check(files, commits)
    assert expected == [{"k": 1, "a": "new", "g1": 5, "b": None, "g2": 3}, {"k": 2, "a": None, "g1": 2, "b": None, "g2": None}]
    with pytest.raises(NotImplementedError):
        _pypaimon_read(files)  # pypaimon refuses sequence groups


def test_aggregation_retractions_merge_as_pypaimon_rusts_native_read(tmp_path: Any) -> None:
    schema = _schema(("s", pa.int64()), ("l", pa.string()))
    files = _table(tmp_path, schema, {"merge-engine": "aggregation", "fields.s.aggregate-function": "sum",
                                      "fields.l.aggregate-function": "last_non_null_value"})
    commits = [
        [("+I", {"k": 1, "s": 5, "l": "x"}), ("+I", {"k": 2, "s": 1, "l": "y"})],
        [("-U", {"k": 1, "s": 5, "l": "x"}), ("-D", {"k": 2, "s": 1, "l": "y"}), ("-D", {"k": 3, "s": 2, "l": None})],
        [("+U", {"k": 1, "s": 7, "l": None})],
    ]
    expected = _write_and_check(files, commits)
    assert expected == [{"k": 1, "s": 7, "l": None}, {"k": 2, "s": 0, "l": None}, {"k": 3, "s": -2, "l": None}]
    # pypaimon-rust drops a key whose only record is a -D; Java's FieldSumAgg.retract makes it -2.
    assert _pypaimon_read(files, {"read.native.enabled": "true"}) == expected[:2]
    _compact_all(files)
    assert _rows(files.read_rows()) == expected


def test_a_deduplicate_table_with_a_sequence_field_reads_as_pypaimon(tmp_path: Any) -> None:
    files = _table(tmp_path, _schema(("ts", pa.int64()), ("v", pa.string())), {"sequence.field": "ts"})
    commits = [[("+I", {"k": 1, "ts": 10, "v": "a"})], [("+I", {"k": 1, "ts": 5, "v": "late"}), ("+I", {"k": 2, "ts": 1, "v": "b"})]]
    expected = _write_and_check(files, commits)
    assert expected == _pypaimon_read(files) == [{"k": 1, "ts": 10, "v": "a"}, {"k": 2, "ts": 1, "v": "b"}]


def test_merge_options_are_the_merged_changelogs_only(tmp_path: Any) -> None:
    assert _table(tmp_path / "a", _schema(("v", pa.int64())), {}).merge_options is None
    lookup = _table(tmp_path / "b", _schema(("v", pa.int64())), {"changelog-producer": "lookup"}).merge_options
    assert lookup is not None and lookup.engine.value == "deduplicate"
    options = _table(tmp_path / "c", _schema(("v", pa.int64())), {"merge-engine": "first-row"}).merge_options
    assert options is not None and options.engine.value == "first-row"


@pytest.mark.parametrize("thin", ["false", "true"])
def test_key_records_are_every_raw_record_of_the_keys_in_order_across_schemas_and_prepared_files(
    tmp_path: Any, thin: str,
) -> None:
    schema = _schema(("s", pa.int64()))
    options = {"merge-engine": "aggregation", "fields.s.aggregate-function": "sum", "data-file.thin-mode": thin}
    files = _table(tmp_path, schema, options, bucket=2)
    _commit(files, [("+I", {"k": 1, "s": 1}), ("+I", {"k": 2, "s": 2}), ("+I", {"k": 9, "s": 9})])
    _commit(files, [("-D", {"k": 1, "s": 1})])
    files.alter([AddColumn("n", pa.string())])
    files = Warehouse(str(tmp_path)).open("db.t")
    _commit(files, [("+I", {"k": 1, "s": 4, "n": "new"})])
    prepared = _prepare(files, [("+I", {"k": 2, "s": 5, "n": "p"}), ("+I", {"k": 7, "s": 7, "n": None})])
    keys = pa.table({"k": [1, 2, 3]})
    found = files.key_records(files.latest_snapshot().id, keys, prepared)
    as_tuples = {key: [(r.kind.value, dict(r.row)) for r in records] for key, records in found.items()}
    assert as_tuples == {
        (1,): [("+I", {"k": 1, "s": 1, "n": None}), ("-D", {"k": 1, "s": 1, "n": None}), ("+I", {"k": 1, "s": 4, "n": "new"})],
        (2,): [("+I", {"k": 2, "s": 2, "n": None}), ("+I", {"k": 2, "s": 5, "n": "p"})],
    }
    assert [r.sequence for r in found[(1,)]] == sorted(r.sequence for r in found[(1,)])
    assert files.key_records(None, keys, prepared).keys() == {(2,)}
    assert files.key_records(None, keys) == {}


def test_compaction_of_retractions_merges_them_with_the_keys_older_runs(tmp_path: Any) -> None:
    # last_non_null_value: a -D compacted alone becomes +I null, which merged later with the
    # older 5 gives 5 where the direct merge gives null (design note 3.8).
    files = _table(tmp_path, _schema(("l", pa.int64())), {"merge-engine": "aggregation"})
    _commit(files, [("+I", {"k": k, "l": 5}) for k in range(1, 2001)])  # a big old run: not picked by size
    _compact_all(files)
    for k in (2, 3, 4, 5):
        _commit(files, [("+I", {"k": -k, "l": k})])
    _commit(files, [("-D", {"k": 1, "l": 5})])
    expected = sorted([{"k": 1, "l": None}, *({"k": k, "l": 5} for k in range(2, 2001)),
                       *({"k": -k, "l": k} for k in (2, 3, 4, 5))], key=lambda r: r["k"])
    assert _rows(files.read_rows()) == expected
    result = compact(_View(files, trigger=3), automatic=True)
    assert result.snapshot_id is not None
    assert _rows(files.read_rows()) == expected
    (bucket,) = files.compactions().bucket_files(files.latest_snapshot().id)
    assert bucket.sorted_runs == 1


def test_a_commit_of_a_first_row_table_is_compacted_out_of_level_0(tmp_path: Any) -> None:
    files = _table(tmp_path, _schema(("v", pa.string())), {"merge-engine": "first-row"})
    for changes in ([("+I", {"k": 1, "v": "a"})], [("+I", {"k": 1, "v": "b"}), ("+I", {"k": 2, "v": "c"})]):
        _commit(files, changes)
        assert compact_after_commit(_View(files), [((), 0)]) is not None
        (bucket,) = files.compactions().bucket_files(files.latest_snapshot().id)
        assert {f.level for f in bucket.files} != {0} and all(f.level > 0 for f in bucket.files)
    assert _pypaimon_read(files) == _rows(files.read_rows()) == [{"k": 1, "v": "a"}, {"k": 2, "v": "c"}]


@attrs.frozen
class _View:
    """The compaction's view of a table (tablelog.table_view.TableView) over store files."""

    files: Any
    trigger: int = 5

    @property
    def identifier(self) -> str:
        return "db.t"

    @property
    def primary_key(self) -> tuple[str, ...]:
        return tuple(self.files.primary_key)

    @property
    def options(self) -> Any:
        return types.SimpleNamespace(num_sorted_run_compaction_trigger=self.trigger)


def _compact_all(files: Any) -> None:
    operations = files.compactions()
    latest = files.latest_snapshot()
    rewrites = [(b, operations.rewrite_bucket(b, 5, True)) for b in operations.bucket_files(latest.id)]
    operations.commit(rewrites, commit_user="compaction", commit_identifier=latest.id, properties={})
