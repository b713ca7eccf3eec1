"""Rows compared as values: NaN equals NaN.

Python's ``==`` says ``nan != nan`` and hashes each NaN object apart, so a row holding
NaN never equals itself read back from another place (the table, the log). Verify and
normalize compare and key rows through these functions instead.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


class _NaN:
    """The one stand-in for every NaN: equal to itself, one hash."""

    def __repr__(self) -> str:
        return "nan"


NAN = _NaN()


def canonical(value: Any) -> Any:
    """``value``, with NaN as :data:`NAN`."""
    if isinstance(value, float) and math.isnan(value):
        return NAN
    return value


def row_key(row: Mapping[str, Any], columns: tuple[str, ...]) -> tuple[Any, ...]:
    """The values of ``columns`` in ``row`` as a hashable key that equals itself across reads."""
    return tuple(canonical(row[c]) for c in columns)


def row_items(row: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """The whole row as a hashable value (column order does not matter)."""
    return tuple(sorted((name, canonical(value)) for name, value in row.items()))


def rows_equal(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return a == b or (a.keys() == b.keys() and all(canonical(a[k]) == canonical(b[k]) for k in a))
