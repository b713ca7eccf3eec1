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
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from tablelog.errors import SchemaMismatchError
from tablelog.options import LogFormat
from tablelog.records import RowKind

KIND_COLUMN = "_kind"

_OPS = {RowKind.INSERT: "c", RowKind.UPDATE_AFTER: "u", RowKind.UPDATE_BEFORE: "u", RowKind.DELETE: "d"}
_OP_BY_VALUE = {k.value: op for k, op in _OPS.items()}
_RETRACTION_VALUES = [k.value for k in RowKind if k.is_retraction]


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


def _to_json_array(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """The column in the types it has in JSON (see the module docstring)."""
    data_type = column.type
    if pa.types.is_timestamp(data_type):
        return pc.cast(pc.cast(column, pa.timestamp("us", tz=data_type.tz)), pa.int64())
    if pa.types.is_time(data_type):
        return pc.cast(pc.cast(column, pa.time64("us")), pa.int64())
    if pa.types.is_date(data_type):
        return pc.cast(pc.cast(column, pa.date32()), pa.int32())
    if pa.types.is_decimal(data_type):
        return pc.cast(column, pa.string())
    if pa.types.is_binary(data_type) or pa.types.is_large_binary(data_type):
        return pa.chunked_array(
            [pa.array([None if v is None else base64.b64encode(v).decode() for v in column.to_pylist()],
                      pa.string())]
        )
    if pa.types.is_large_string(data_type):
        return pc.cast(column, pa.string())
    return column


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
    """Encoded records, one per input row, in input order."""

    keys: list[bytes | None]
    values: list[bytes]


@attrs.define
class RecordCodec:
    """Encodes and decodes one table's rows for its log."""

    schema: pa.Schema  # the user-visible table schema
    primary_key: tuple[str, ...]
    value_format: LogFormat
    table: str = ""

    # The per-column converters of python_row, and whether all of them are the identity
    # (then a decoded row in schema order is returned as it is): computed once, since
    # python_row runs for every record a reader returns.
    _row_converters: list[tuple[str, Callable[[Any], Any]]] = attrs.field(
        init=False, factory=list, repr=False, eq=False
    )
    _identity_names: tuple[str, ...] | None = attrs.field(init=False, default=None, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        check_loggable(self.schema)
        self._row_converters = self._converters
        if all(convert is _identity for _, convert in self._row_converters):
            self._identity_names = tuple(self.schema.names)

    # -- writing ---------------------------------------------------------------

    def encode(self, data: pa.Table, kinds: Sequence[RowKind], timestamp_ms: int) -> Encoded:
        """Encode every row of ``data`` (already cast to the table schema), column-wise.

        Polars builds the JSON of all rows in native code: several times faster than
        a dumps call per row, which matters because encoding sits on the writer's
        hot path between Arrow and the log client.
        """
        json_level = pa.Table.from_arrays(
            [_to_json_array(data.column(i)) for i in range(data.num_columns)], names=data.schema.names
        )
        frame = pl.from_arrow(json_level, rechunk=False)
        assert isinstance(frame, pl.DataFrame)
        row = pl.struct(pl.all()) if data.num_columns else pl.lit(None)
        # A RowKind is a str holding its value: polars reads "+I", "-U"... in native code
        # (a Python-level .value / dict look-up per row cost more than the JSON encoding).
        kind_values = pl.Series(KIND_COLUMN, kinds, dtype=pl.String)
        if self.value_format is LogFormat.JSON:
            value_expr = pl.struct(pl.all(), kind_values.alias(KIND_COLUMN)).struct.json_encode()
        else:
            retraction = kind_values.is_in(_RETRACTION_VALUES).alias("retraction")
            ops = kind_values.replace_strict(_OP_BY_VALUE, return_dtype=pl.String).alias("op")
            value_expr = pl.struct(
                pl.when(retraction).then(row).otherwise(None).alias("before"),
                pl.when(retraction).then(None).otherwise(row).alias("after"),
                ops.alias("op"),
                pl.lit(timestamp_ms, dtype=pl.Int64).alias("ts_ms"),
            ).struct.json_encode()
        columns = [value_expr.cast(pl.Binary).alias("value")]
        if self.primary_key:
            columns.append(pl.struct(list(self.primary_key)).struct.json_encode().cast(pl.Binary).alias("key"))
        encoded = frame.select(columns)
        values: list[bytes] = encoded.get_column("value").to_list()
        keys: list[bytes | None] = (
            encoded.get_column("key").to_list() if self.primary_key else [None] * data.num_rows
        )
        return Encoded(keys, values)

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

    def values_to_arrow(self, values: list[bytes | None]) -> pa.Table:
        """Many values decoded at once into an Arrow table with a leading ``_kind``
        column (the schema of :meth:`rows_to_arrow`), by Arrow's JSON reader in native
        code: no Python object per record. Raises ValueError when any value is not one
        :meth:`decode_value` accepts with the table's types; the caller then decodes
        them one by one to report the culprit."""
        output = pa.schema([pa.field(KIND_COLUMN, pa.string()), *self.schema])
        if not values:
            return output.empty_table()
        if None in values:
            raise ValueError("a record has no value")
        data = b"\n".join(values)  # type: ignore[arg-type]  # None ruled out above
        # A value must not straddle two blocks of the reader: blocks hold the largest value.
        block = max(1 << 20, 2 * max(map(len, values)) + 2)  # type: ignore[arg-type]
        parsed = pa_json.read_json(
            pa.BufferReader(data),
            read_options=pa_json.ReadOptions(block_size=block),
            parse_options=self._json_parse_options,
        )
        if parsed.num_rows != len(values):  # a value with a raw newline: not one of ours
            raise ValueError("values do not parse one row each")
        if self.value_format is LogFormat.JSON:
            kinds = parsed.column(KIND_COLUMN).combine_chunks()
            if kinds.null_count or not pc.all(pc.is_in(kinds, pa.array(_KIND_VALUES))).as_py():
                raise ValueError("a value has no valid _kind")
            columns = [parsed.column(field.name) for field in self.schema]
        else:
            kinds, columns = _debezium_columns(parsed, len(self.schema))
        arrays = [kinds] + [
            _from_json_arrow(column, field.type) for column, field in zip(columns, self.schema, strict=True)
        ]
        return pa.Table.from_arrays(arrays, schema=output)

    @property
    def _json_parse_options(self) -> pa_json.ParseOptions:
        row = pa.struct([pa.field(f.name, _json_type(f.type)) for f in self.schema])
        if self.value_format is LogFormat.JSON:
            schema = pa.schema([*row, pa.field(KIND_COLUMN, pa.string())])
        else:
            schema = pa.schema([("before", row), ("after", row), ("op", pa.string())])
        return pa_json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")

    def rows_to_arrow(self, kinds: list[RowKind], rows: list[dict[str, Any]]) -> pa.Table:
        """Decoded rows as an Arrow table with a leading ``_kind`` column."""
        arrays = [pa.array([k.value for k in kinds], pa.string())]
        for field in self.schema:
            arrays.append(_from_json_column([r.get(field.name) for r in rows], field.type))
        return pa.Table.from_arrays(arrays, names=[KIND_COLUMN, *self.schema.names])

    def python_row(self, row: dict[str, Any]) -> dict[str, Any]:
        """A decoded JSON-level row with values converted to the table's Python types."""
        if self._identity_names is not None and tuple(row) == self._identity_names:
            return row  # exactly the table's columns, in order, nothing to convert
        return {name: convert(row.get(name)) for name, convert in self._row_converters}

    @property
    def _converters(self) -> list[tuple[str, Callable[[Any], Any]]]:
        result: list[tuple[str, Callable[[Any], Any]]] = []
        for field in self.schema:
            if _json_type(field.type) == field.type:
                result.append((field.name, _identity))
            else:
                result.append((field.name, _single_converter(field.type)))
        return result


_KIND_VALUES = [k.value for k in RowKind]


def _debezium_columns(parsed: pa.Table, width: int) -> tuple[pa.Array, list[pa.ChunkedArray]]:
    """Row kinds and row columns of parsed Debezium envelopes; the same rules as
    :meth:`RecordCodec.decode_value`, column-wise."""
    op = parsed.column("op")
    after, before = parsed.column("after"), parsed.column("before")
    has_after, has_before = pc.is_valid(after), pc.is_valid(before)
    update = pc.equal(op, "u")
    conditions = pc.make_struct(
        pc.and_(pc.is_in(op, pa.array(["c", "r"])), has_after),
        pc.and_(update, has_after),
        pc.and_(update, has_before),
        pc.and_(pc.equal(op, "d"), has_before),
    )
    kinds = pc.case_when(conditions, *(pa.scalar(k.value) for k in
                                       (RowKind.INSERT, RowKind.UPDATE_AFTER, RowKind.UPDATE_BEFORE, RowKind.DELETE)))
    if kinds.null_count:
        raise ValueError("a value is not a Debezium envelope of a row")
    columns = [
        pc.if_else(has_after, pc.struct_field(after, [i]), pc.struct_field(before, [i])) for i in range(width)
    ]
    return kinds, columns


def _from_json_arrow(column: pa.ChunkedArray | pa.Array, data_type: pa.DataType) -> pa.ChunkedArray | pa.Array:
    """A column parsed at its JSON-level type (see :func:`_json_type`) in the table's type."""
    if column.type == data_type:
        return column
    if pa.types.is_timestamp(data_type):
        return pc.cast(pc.cast(column, pa.timestamp("us", tz=data_type.tz)), data_type)
    if pa.types.is_time(data_type):
        return pc.cast(pc.cast(column, pa.time64("us")), data_type)
    if pa.types.is_date(data_type):
        return pc.cast(pc.cast(column, pa.date32()), data_type)
    if pa.types.is_binary(data_type) or pa.types.is_large_binary(data_type):
        return _from_json_column(column.to_pylist(), data_type)
    return pc.cast(column, data_type)


def _identity(value: Any) -> Any:
    return value


def _single_converter(data_type: pa.DataType) -> Callable[[Any], Any]:
    def convert(value: Any) -> Any:
        if value is None:
            return None
        return _from_json_column([value], data_type)[0].as_py()

    return convert
