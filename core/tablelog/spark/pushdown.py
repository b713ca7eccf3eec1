"""Spark filters a batch read of a partitioned table takes over: equality on partition
columns (``where dt = '2026-11-24'``, ``dt in (...)``) limits the read to those table
partitions, as the ``partitions`` option does (the full scan prunes files). Spark
evaluates every other filter itself.

pyspark offers filter pushdown to Python batch readers only, and only where the session
allows it (``spark.sql.python.filterPushdown.enabled``, which
:func:`tablelog.spark.register` sets); a streaming read applies the filter after reading,
and its ``partitions`` option prunes."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import product
from typing import Any

#: The session option that lets Spark hand filters to a Python data source.
FILTER_PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def partition_specs(filters: Sequence[Any], partition_keys: Sequence[str]) -> tuple[list[dict[str, Any]] | None, list[Any]]:
    """``(specs, rest)``: the table partitions the equality filters on partition columns
    allow (each a mapping of some partition columns to values; None: no such filter), and
    the filters Spark still evaluates. A filter that allows no partition, or a null, is
    left to Spark (it then returns no row)."""
    from pyspark.sql.datasource import EqualTo, In

    allowed: dict[str, set[Any]] = {}
    taken: list[Any] = []
    rest: list[Any] = []
    for f in filters:
        column = f.attribute[0] if len(f.attribute) == 1 else ""
        if column in partition_keys and isinstance(f, EqualTo) and f.value is not None:
            values = {f.value}
        elif column in partition_keys and isinstance(f, In) and None not in f.value:
            values = set(f.value)
        else:
            rest.append(f)
            continue
        allowed[column] = allowed[column] & values if column in allowed else values
        taken.append(f)
    if not allowed or any(not values for values in allowed.values()):
        return None, [*rest, *taken]
    columns = sorted(allowed)
    specs = [dict(zip(columns, combination, strict=True))
             for combination in product(*(sorted(allowed[c], key=repr) for c in columns))]
    return specs, rest
