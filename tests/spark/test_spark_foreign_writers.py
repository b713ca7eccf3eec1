"""The Spark source reads commits other writers made (pypaimon directly) like the Python
readers do: from the table files, with the log's changes; transactional reads each once."""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa

import tablelog
from tablelog.store import commit_changes
from tablelog.table import Table

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def foreign_write(table: Table, changes: list[tuple[str, dict[str, Any]]]) -> None:
    """One commit by another writer (:func:`tablelog.store.commit_changes`)."""
    commit_changes(table.warehouse, table.identifier, changes)


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
