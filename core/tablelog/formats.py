"""Record encodings: Arrow rows with row kinds <-> log record keys and values.

``debezium-json`` values are Debezium envelopes a consumer that knows nothing of
tablelog understands::

    +I  {"before": null, "after": {...}, "op": "c", "ts_ms": ...}
    +U  {"before": null, "after": {...}, "op": "u", "ts_ms": ...}
    -U  {"before": {...}, "after": null, "op": "u", "ts_ms": ...}
    -D  {"before": {...}, "after": null, "op": "d", "ts_ms": ...}

``json`` values are the row itself with its row kind in ``"_kind"``. Keys are the
primary key as a JSON object (``{"id": 7}``); tables without one have no key.

Values that JSON cannot carry exactly are encoded the way Debezium does:
timestamps as epoch microseconds, dates as epoch days, decimals as strings,
binary as base64.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from tablelog.errors import SchemaMismatchError
from tablelog.options import LogFormat
from tablelog.records import RowKind

KIND_COLUMN = "_kind"

_OPS = {RowKind.INSERT: "c", RowKind.UPDATE_AFTER: "u", RowKind.UPDATE_BEFORE: "u", RowKind.DELETE: "d"}


def _json_type(data_type: pa.DataType) -> pa.DataType:
    """The Arrow type a column takes on its way through JSON."""
    if pa.types.is_timestamp(data_type) or pa.types.is_time(data_type):
        return pa.int64()
    if pa.types.is_date(data_type):
        return pa.int32()
    if pa.types.is_decimal(data_type):
        return pa.string()
    if pa.types.is_binary(data_type) or pa.types.is_large_binary(data_type):
        return pa.string()
    if pa.types.is_large_string(data_type):
        return pa.string()
    if (
        pa.types.is_integer(data_type)
        or pa.types.is_floating(data_type)
        or pa.types.is_boolean(data_type)
        or pa.types.is_string(data_type)
    ):
        return data_type
    raise SchemaMismatchError(
        f"type {data_type} cannot be written to the log; supported: integers, floats, boolean, "
        "string, binary, decimal, date, time, timestamp"
    )


def check_loggable(schema: pa.Schema) -> None:
    """Raise a clear error now for a column the log format cannot carry."""
    for field in schema:
        try:
            _json_type(field.type)
        except SchemaMismatchError as err:
            raise SchemaMismatchError(f"column {field.name!r}: {err}") from None


def _to_json_column(column: pa.ChunkedArray | pa.Array) -> list[Any]:
    data_type = column.type
    if pa.types.is_timestamp(data_type):
        micros = pc.cast(column, pa.timestamp("us", tz=data_type.tz))
        return pc.cast(micros, pa.int64()).to_pylist()  # type: ignore[no-any-return]
    if pa.types.is_time(data_type):
        return pc.cast(pc.cast(column, pa.time64("us")), pa.int64()).to_pylist()  # type: ignore[no-any-return]
    if pa.types.is_date(data_type):
        return pc.cast(pc.cast(column, pa.date32()), pa.int32()).to_pylist()  # type: ignore[no-any-return]
    if pa.types.is_decimal(data_type):
        return pc.cast(column, pa.string()).to_pylist()  # type: ignore[no-any-return]
    if pa.types.is_binary(data_type) or pa.types.is_large_binary(data_type):
        return [None if v is None else base64.b64encode(v).decode() for v in column.to_pylist()]
    return column.to_pylist()  # type: ignore[no-any-return]


def _from_json_column(values: list[Any], data_type: pa.DataType) -> pa.Array:
    if pa.types.is_binary(data_type) or pa.types.is_large_binary(data_type):
        return pa.array([None if v is None else base64.b64decode(v) for v in values], data_type)
    if pa.types.is_timestamp(data_type):
        micros = pa.array(values, pa.int64()).cast(pa.timestamp("us", tz=data_type.tz))
        return micros.cast(data_type)
    if pa.types.is_time(data_type):
        return pa.array(values, pa.int64()).cast(pa.time64("us")).cast(data_type)
    if pa.types.is_date(data_type):
        return pa.array(values, pa.int32()).cast(pa.date32()).cast(data_type)
    if pa.types.is_decimal(data_type):
        return pa.array(values, pa.string()).cast(data_type)
    return pa.array(values, data_type)


@attrs.frozen
class Encoded:
    """One partition's encoded records, in input order."""

    keys: list[bytes | None]
    values: list[bytes]
    row_indices: list[int]  # which input rows these are (for error messages)


@attrs.define
class RecordCodec:
    """Encodes and decodes one table's rows for its log."""

    schema: pa.Schema  # the user-visible table schema
    primary_key: tuple[str, ...]
    value_format: LogFormat
    table: str = ""

    def __attrs_post_init__(self) -> None:
        check_loggable(self.schema)

    # -- writing ---------------------------------------------------------------

    def encode(self, data: pa.Table, kinds: Sequence[RowKind], timestamp_ms: int) -> Encoded:
        """Encode every row of ``data`` (already cast to the table schema)."""
        names = data.schema.names
        columns = [_to_json_column(data.column(i)) for i in range(data.num_columns)]
        rows = [dict(zip(names, values, strict=True)) for values in zip(*columns, strict=True)]
        if not names:
            rows = [{} for _ in range(data.num_rows)]
        values = self._encode_values(rows, kinds, timestamp_ms)
        keys: list[bytes | None]
        if self.primary_key:
            key_index = [names.index(k) for k in self.primary_key]
            key_names = self.primary_key
            keys = [
                orjson.dumps({n: columns[i][r] for n, i in zip(key_names, key_index, strict=True)})
                for r in range(data.num_rows)
            ]
        else:
            keys = [None] * data.num_rows
        return Encoded(keys, values, list(range(data.num_rows)))

    def _encode_values(self, rows: list[dict[str, Any]], kinds: Sequence[RowKind], ts: int) -> list[bytes]:
        dumps = orjson.dumps
        if self.value_format is LogFormat.JSON:
            out = []
            for row, kind in zip(rows, kinds, strict=True):
                row[KIND_COLUMN] = kind.value
                out.append(dumps(row))
            return out
        result = []
        for row, kind in zip(rows, kinds, strict=True):
            if kind.is_retraction:
                envelope = {"before": row, "after": None, "op": _OPS[kind], "ts_ms": ts}
            else:
                envelope = {"before": None, "after": row, "op": _OPS[kind], "ts_ms": ts}
            result.append(dumps(envelope))
        return result

    # -- reading ---------------------------------------------------------------

    def decode_value(self, value: bytes) -> tuple[RowKind, dict[str, Any]]:
        """Row kind and JSON-level row of one value; raises ValueError when it is not ours."""
        doc = orjson.loads(value)
        if not isinstance(doc, dict):
            raise ValueError("value is not a JSON object")
        if self.value_format is LogFormat.JSON:
            kind = RowKind.parse(doc.pop(KIND_COLUMN))
            return kind, doc
        op = doc.get("op")
        after, before = doc.get("after"), doc.get("before")
        if op in ("c", "r") and isinstance(after, dict):
            return RowKind.INSERT, after
        if op == "u" and isinstance(after, dict):
            return RowKind.UPDATE_AFTER, after
        if op == "u" and isinstance(before, dict):
            return RowKind.UPDATE_BEFORE, before
        if op == "d" and isinstance(before, dict):
            return RowKind.DELETE, before
        raise ValueError(f"not a Debezium envelope (op={op!r})")

    def rows_to_arrow(self, kinds: list[RowKind], rows: list[dict[str, Any]]) -> pa.Table:
        """Decoded rows as an Arrow table with a leading ``_kind`` column."""
        arrays = [pa.array([k.value for k in kinds], pa.string())]
        for field in self.schema:
            arrays.append(_from_json_column([r.get(field.name) for r in rows], field.type))
        return pa.Table.from_arrays(arrays, names=[KIND_COLUMN, *self.schema.names])

    def python_row(self, row: dict[str, Any]) -> dict[str, Any]:
        """A decoded JSON-level row with values converted to the table's Python types."""
        converters = self._converters
        return {name: convert(row.get(name)) for name, convert in converters}

    @property
    def _converters(self) -> list[tuple[str, Callable[[Any], Any]]]:
        result: list[tuple[str, Callable[[Any], Any]]] = []
        for field in self.schema:
            if _json_type(field.type) == field.type:
                result.append((field.name, _identity))
            else:
                result.append((field.name, _single_converter(field.type)))
        return result


def _identity(value: Any) -> Any:
    return value


def _single_converter(data_type: pa.DataType) -> Callable[[Any], Any]:
    def convert(value: Any) -> Any:
        if value is None:
            return None
        return _from_json_column([value], data_type)[0].as_py()

    return convert
