"""The Spark source reads commits other writers made (pypaimon directly) like the Python
readers do: from the table files, with the log's changes; transactional reads each once."""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pypaimon

import tablelog
from tablelog.store import KIND_FIELD
from tablelog.table import Table

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def foreign_write(table: Table, changes: list[tuple[str, dict[str, Any]]]) -> None:
    """One commit through pypaimon alone (the row-kind column supplied, where the table has one)."""
    paimon = pypaimon.CatalogFactory.create({"warehouse": table.warehouse.path}).get_table(table.identifier)
    builder = paimon.new_batch_write_builder()
    columns: dict[str, list[Any]] = {name: [row[name] for _, row in changes] for name in SCHEMA.names}
    if any(f.name == KIND_FIELD for f in paimon.table_schema.fields):
        columns[KIND_FIELD] = [kind for kind, _ in changes]
    batch_write, batch_commit = builder.new_write(), builder.new_commit()
    try:
        batch_write.write_arrow(pa.table(columns))
        batch_commit.commit(batch_write.prepare_commit())
    finally:
        batch_write.close()
        batch_commit.close()


def test_stream_reads_return_every_change_of_tablelog_and_of_another_writer(
    spark: Any, tmp_path: Path
) -> None:
    warehouse, name = str(tmp_path / "wh"), f"db.t_{uuid.uuid4().hex[:8]}"
    table = tablelog.create_table(warehouse, name, SCHEMA, primary_key=["id"], bucket=2,
                                  options={"log.system": "filesystem"})
    made: list[tuple[str, int, str]] = []
    for round_ in range(2):
        base = round_ * 10
        ours = [("+I", {"id": base + i, "name": f"t{base + i}"}) for i in range(4)]
        if round_:
            ours += [("-D", {"id": base - 5, "name": f"p{base - 5}"})]
        with table.writer() as writer:
            writer.write(ours)
            writer.commit()
        theirs = [("+I", {"id": base + 5 + i, "name": f"p{base + 5 + i}"}) for i in range(3)]
        theirs += [("+U", {"id": base + 1, "name": "p-updated"}), ("-D", {"id": base + 2, "name": f"t{base + 2}"})]
        foreign_write(table, theirs)
        made += [(k, r["id"], r["name"]) for k, r in ours + theirs]
    read = {}
    for consistency in ("transactional", "eventual"):
        query = (spark.readStream.format("tablelog").option("warehouse", warehouse).option("table", name)
                 .option("scan.mode", "earliest").option("log.consistency", consistency).load()
                 .writeStream.format("memory").queryName(f"foreign_{uuid.uuid4().hex[:8]}")
                 .option("checkpointLocation", str(tmp_path / f"ck-{consistency}")).trigger(availableNow=True)
                 .start())
        query.awaitTermination(120)
        read[consistency] = Counter((r["_kind"], r["id"], r["name"]) for r in spark.table(query.name).collect())
    assert read["transactional"] == Counter(made)  # each once
    assert set(read["eventual"]) == set(made)  # at least once (every attempt here committed: once)
