"""The Spark source's offsets: a :class:`~tablelog.positions.ReaderPosition` as the JSON
Spark keeps in a query's checkpoint.

The source has no position type of its own: an offset is a reader position, written as::

    {"v": 1, "table": ID, "topic": "<system>:<topic>", "consistency": "transactional",
     "snapshot": N, "full": false, "positions": {"0": "1234"}}

``full`` is the position's ``full_pending`` (the hybrid read's full scan is still to
come), ``positions`` its ``offsets`` (eventual: the next log position per partition; as
strings, since positions may exceed 64 bits). ``table`` and ``topic`` name whose offset
it is (:mod:`tablelog.positions`); an offset without its table is refused. A Spark offset never has a
position inside a full scan or a snapshot, so ``full_offset`` and ``horizon`` are not
written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from tablelog.errors import OptionError
from tablelog.options import Consistency
from tablelog.positions import (
    ReaderPosition,
    check_identity,
    check_partitions,
    check_snapshot,
    log_name,
    topic_to_check,
)

if TYPE_CHECKING:
    from tablelog.table import Table

#: What the checks' messages call an offset.
WHAT = "Spark checkpoint offset"


def to_offset(position: ReaderPosition) -> dict[str, Any]:
    """The checkpoint JSON of ``position``."""
    return {
        "v": 1,
        **({"table": position.table} if position.table is not None else {}),
        **({"topic": position.topic} if position.topic is not None else {}),
        "consistency": position.consistency.value,
        "snapshot": position.snapshot,
        "full": position.full_pending,
        "positions": {str(p): str(pos) for p, pos in sorted(position.offsets.items())},
    }


def parse_offset(value: Mapping[str, Any]) -> ReaderPosition:
    """The reader position of a checkpoint offset."""
    try:
        if value.get("table") is None:
            raise KeyError("table")  # no release checkpointed an offset without its table's id
        return ReaderPosition(
            consistency=Consistency(value["consistency"]),
            snapshot=int(value["snapshot"]),
            offsets={int(p): int(pos) for p, pos in dict(value.get("positions", {})).items()},
            full_pending=bool(value.get("full", False)),
            table=str(value["table"]),
            topic=None if value.get("topic") is None else str(value["topic"]),
        )
    except KeyError as err:
        raise OptionError(f"invalid tablelog source offset {dict(value)!r}: it has no {err.args[0]!r}") from None
    except (ValueError, TypeError) as err:
        raise OptionError(f"invalid tablelog source offset {dict(value)!r}: {err}") from None


def checked(table: Table, position: ReaderPosition) -> ReaderPosition:
    """``position``, refused when it belongs to another table or topic or is ahead of the
    table (see :mod:`tablelog.positions`); it names the table from then on."""
    from tablelog.table import internals

    view = internals(table)
    check_identity(view, position.table, topic_to_check(position), WHAT)
    check_snapshot(view, position.snapshot, WHAT)
    check_partitions(view, position.offsets, WHAT)
    return attrs.evolve(position, table=table.table_id, topic=log_name(view))
