"""What another Paimon writer (pypaimon alone, a Flink or Spark Paimon job) does to a
table, for tests and the conformance kit: create a plain Paimon table, without anything of
tablelog's (no table id, no log options, no row-kind column), and commit rows to it as
such a writer does (a snapshot without a log-commit record). Only public pypaimon API.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pyarrow as pa

from tablelog.store.warehouse import Warehouse


def create_paimon_table(
    wh: Warehouse, identifier: str, schema: pa.Schema, primary_key: Sequence[str] = (), bucket: int = 1,
    options: Mapping[str, str] | None = None,
) -> None:
    """Create ``identifier`` as pypaimon alone does."""
    from pypaimon import Schema

    fields = [f.with_nullable(False) if f.name in primary_key else f for f in schema]
    paimon_schema = Schema.from_pyarrow_schema(
        pa.schema(fields), primary_keys=list(primary_key) or None, options={"bucket": str(bucket), **(options or {})},
    )
    wh.catalog.create_database(identifier.split(".", 1)[0], True)
    wh.catalog.create_table(identifier, paimon_schema, False)


def commit_rows(wh: Warehouse, identifier: str, rows: pa.Table | Sequence[Mapping[str, object]]) -> None:
    """Write ``rows`` (upserts of a primary-key table) and commit them in one snapshot, as
    pypaimon alone does: a snapshot without any of tablelog's properties."""
    schema = wh.open(identifier).schema
    data = rows.cast(schema) if isinstance(rows, pa.Table) else pa.Table.from_pylist(list(rows), schema=schema)
    _commit_with_pypaimon(wh, identifier, data)


def _commit_with_pypaimon(wh: Warehouse, identifier: str, data: pa.Table, *, overwrite: bool = False) -> None:
    """One batch write of ``data`` and its commit, through pypaimon's public API alone."""
    builder = wh.catalog.get_table(identifier).new_batch_write_builder()
    if overwrite:
        builder = builder.overwrite()
    write, commit = builder.new_write(), builder.new_commit()
    try:
        write.write_arrow(data)
        commit.commit(write.prepare_commit())
    finally:
        write.close()
        commit.close()


def commit_changes(
    wh: Warehouse, identifier: str, changes: Sequence[tuple[str, Mapping[str, object]]], *, overwrite: bool = False,
) -> int:
    """Commit ``changes`` (row kind, row) in one snapshot as another Paimon writer does, and
    return the snapshot's id. Inserts, and an overwrite, go through pypaimon alone. pypaimon
    writes other row kinds only into a ``rowkind.field`` column: where the table has one
    (tables of earlier tablelog versions) the kinds go there; elsewhere the rows are written
    with their kinds in Paimon's ``_VALUE_KIND``, as a Java engine's ``DELETE FROM`` or
    changelog stream writes them, and committed without a property."""
    import uuid

    files = wh.open(identifier)
    kinds = [kind for kind, _ in changes]
    data = pa.Table.from_pylist([dict(row) for _, row in changes], schema=files.schema)
    kind_column = files.properties.get("rowkind.field")
    if kind_column or overwrite or all(kind == "+I" for kind in kinds):
        if kind_column:
            data = data.append_column(pa.field(kind_column, pa.string()), pa.array(kinds, pa.string()))
        _commit_with_pypaimon(wh, identifier, data, overwrite=overwrite)
    else:
        table_write = files.new_write()
        try:
            table_write.write_arrow(data, kinds)
            messages = table_write.prepare_commit(1)
        finally:
            table_write.close()
        files.commit(messages, commit_user=f"another-writer-{uuid.uuid4().hex[:8]}", commit_identifier=1,
                     properties={})
    latest = files.latest_snapshot()
    assert latest is not None
    return latest.id
