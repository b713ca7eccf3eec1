"""Values and changes as JSON documents, the same for the CLI (text and ``--format
json``) and the dashboard.

Every value a table holds prints as a JSON value a program can read back, never
as a Python repr: bytes as base64 strings, dates, times and timestamps as ISO
8601 strings, decimals as strings (no binary float rounding), non-finite floats
as the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"`` (JSON has no such numbers).
"""

from __future__ import annotations

import base64
import datetime
import decimal
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from tablelog.reading import Change

FORMATS = ("text", "json")


def json_value(value: Any) -> Any:
    """``value`` as something :func:`json.dumps` prints as plain, valid JSON."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, Sequence):
        return [json_value(v) for v in value]
    return str(value)


def dumps(value: Any) -> str:
    """One line of strict JSON (``allow_nan=False``: nothing a JSON parser refuses)."""
    return json.dumps(json_value(value), ensure_ascii=False, allow_nan=False)


def change_document(change: Change, primary_key: Sequence[str]) -> dict[str, Any]:
    """A change as ``tail --format json`` prints it: the log coordinates, the
    record key (the primary key's columns; null without one), the kind and the row."""
    return {
        "partition": change.partition,
        "position": change.position,
        "snapshot": change.snapshot_id,
        "kind": change.kind.value,
        "key": {k: change.row.get(k) for k in primary_key} if primary_key else None,
        "row": change.row,
    }
