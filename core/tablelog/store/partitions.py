"""A partitioned table's partitions as pypaimon selects them: the predicate its scan
prunes the files of other partitions by."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def partition_predicate(builder: Any, partitions: Sequence[Mapping[str, Any]]) -> Any:
    """pypaimon's predicate "in any of ``partitions``" (mappings of partition column to
    value, in the column's type) for the read builder ``builder``."""
    predicates = builder.new_predicate_builder()
    ors = []
    for spec in partitions:
        ands = [predicates.is_null(c) if v is None else predicates.equal(c, v) for c, v in spec.items()]
        ors.append(ands[0] if len(ands) == 1 else predicates.and_predicates(ands))
    return ors[0] if len(ors) == 1 else predicates.or_predicates(ors)
