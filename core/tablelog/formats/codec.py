"""Record encodings: Arrow rows with row kinds <-> log record keys and values.

``debezium-json`` values follow Flink's ``debezium-json`` format, which is what
Paimon's log system wrote (Flink's ``DebeziumJsonSerializationSchema``): an
addition (``+I``, ``+U``) is a create, a retraction (``-U``, ``-D``) a delete::

    +I  {"before": null, "after": {...}, "op": "c", "ts_ms": ..., "_kind": "+I", "_schema": 0}
    +U  {"before": null, "after": {...}, "op": "c", "ts_ms": ..., "_kind": "+U", "_schema": 0}
    -U  {"before": {...}, "after": null, "op": "d", "ts_ms": ..., "_kind": "-U", "_schema": 0}
    -D  {"before": {...}, "after": null, "op": "d", "ts_ms": ..., "_kind": "-D", "_schema": 0}

``ts_ms`` is Debezium's event time (Flink reads it as the ``ingestion-timestamp``
metadata); ``_kind`` is the exact row kind for tablelog's readers, and ``_schema`` the
id of the table schema the row was written with (Paimon's ``schema-<id>``): fields
Flink's and Debezium's consumers ignore. A value without ``_schema`` (written before
tables could change their schema) is of schema 0. Reading also takes what Flink's deserializer takes
(``op`` ``"r"`` for a snapshot read, a ``source`` block, the ``{"schema", "payload"}``
wrapper) and the records tablelog wrote before (``op`` ``"u"`` with only ``after``
for ``+U``, only ``before`` for ``-U``; no ``_kind``).

``json`` values are the row itself with its row kind in ``"_kind"`` and its schema id
in ``"_schema"``. Keys are the
primary key as a JSON object (``{"id": 7}``); tables without one have no key.
How each column type is written is :mod:`tablelog.formats.json_values`.

``arrow`` values hold a batch of rows each: :mod:`tablelog.formats.arrow`, which the
codec delegates to (:attr:`RecordCodec.batched`).
"""

from __future__ import annotations

import decimal
import json
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from tablelog.errors import SchemaMismatchError
from tablelog.formats import arrow as arrow_records
from tablelog.formats.json_rows import json_objects, value_texts
from tablelog.formats.json_values import (
    float_from_json,
    from_json_arrow,
    is_float,
    json_type,
    python_converter,
    to_json_array,
    unloggable_value,
)
from tablelog.options import ArrowCompression, LogFormat
from tablelog.records import RowKind

KIND_COLUMN = "_kind"
#: The field of a log value that holds the id of the schema its row was written with.
SCHEMA_FIELD = "_schema"

#: Flink's debezium-json ops: additions are creates, retractions deletes.
_OP_BY_VALUE = {k.value: ("d" if k.is_retraction else "c") for k in RowKind}
_RETRACTION_VALUES = [k.value for k in RowKind if k.is_retraction]
_KIND_BY_VALUE = {k.value: k for k in RowKind}


def check_loggable(schema: pa.Schema) -> None:
    """Raise a clear error now for a column the table and its log cannot carry."""
    for field in schema:
        try:
            json_type(field.type)
        except SchemaMismatchError as err:
            raise SchemaMismatchError(f"column {field.name!r}: {err}") from None


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
    schema_id: int = 0  # the id of ``schema`` among the table's schemas, written into every value
    compression: ArrowCompression = ArrowCompression.LZ4  # of ``arrow`` records

    # The per-column converters of python_row, and the names a decoded row has when
    # none is needed (then a row in schema order is returned as it is, unless a float
    # column holds one of the special-value strings): computed once, since python_row
    # runs for every record a reader returns.
    _row_converters: list[tuple[str, Callable[[Any], Any]]] = attrs.field(
        init=False, factory=list, repr=False, eq=False
    )
    _identity_names: tuple[str, ...] | None = attrs.field(init=False, default=None, repr=False, eq=False)
    _float_names: tuple[str, ...] = attrs.field(init=False, default=(), repr=False, eq=False)
    _change_decoder: Callable[[bytes], tuple[RowKind, dict[str, Any]]] | None = attrs.field(
        init=False, default=None, repr=False, eq=False)
    # orjson reads every number with a fraction or above 2^64 as a double: a table with a
    # decimal column reads its values exactly, with the standard library's parser.
    _loads: Callable[[bytes], Any] = attrs.field(init=False, default=orjson.loads, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        check_loggable(self.schema)
        if any(pa.types.is_decimal(f.type) for f in self.schema):
            self._loads = _exact_loads
        converters = [(f.name, python_converter(f.type)) for f in self.schema]
        self._row_converters = [(name, convert or _identity) for name, convert in converters]
        if all(convert in (None, float_from_json) for _, convert in converters):
            self._identity_names = tuple(self.schema.names)
        self._float_names = tuple(f.name for f in self.schema if is_float(f.type))

    @property
    def batched(self) -> bool:
        """Whether a record holds a batch of rows (``arrow``) rather than one row."""
        return self.value_format is LogFormat.ARROW

    # -- writing ---------------------------------------------------------------

    def check_values(self, data: pa.Table) -> None:
        """Raise :class:`SchemaMismatchError` naming the first value of ``data`` (in the
        table schema) that the log cannot carry exactly."""
        found = unloggable_value(data)
        if found is not None:
            column, row, value = found
            where = f"table {self.table!r}: " if self.table else ""
            raise SchemaMismatchError(
                f"{where}column {column!r} row {row}: {value!r} has a sub-microsecond part; the log "
                "carries times and timestamps to the microsecond. Round the values to microseconds; "
                "nothing was written"
            )

    def encode(self, data: pa.Table, kinds: Sequence[RowKind], timestamp_ms: int) -> Encoded:
        """Encode every row of ``data`` (already cast to the table schema), column-wise.

        Polars builds the JSON of all rows in native code (:mod:`tablelog.formats.json_rows`):
        several times faster than a dumps call per row, which matters because encoding
        sits on the writer's hot path between Arrow and the log client. Polars is imported
        here, by writers only: readers (Spark's planner and tasks among them, a fresh
        process each query) never pay its import.
        """
        import polars as pl

        self._check_per_row()
        json_level = pa.Table.from_arrays(
            [to_json_array(data.column(i)) for i in range(data.num_columns)], names=data.schema.names
        )
        frame = pl.from_arrow(json_level, rechunk=False)
        assert isinstance(frame, pl.DataFrame)
        texts = value_texts(json_level, self.schema)
        # A RowKind is a str holding its value: polars reads "+I", "-U"... in native code
        # (a Python-level .value / dict look-up per row cost more than the JSON encoding).
        kind_values = pl.Series(KIND_COLUMN, kinds, dtype=pl.String)
        quoted_kind = pl.concat_str([pl.lit('"'), kind_values, pl.lit('"')])
        schema_id = pl.lit(str(self.schema_id))
        names = data.schema.names
        if self.value_format is LogFormat.JSON:
            value_expr = json_objects(names, texts, [(KIND_COLUMN, quoted_kind), (SCHEMA_FIELD, schema_id)])
        else:
            row = json_objects(names, texts)
            retraction = kind_values.is_in(_RETRACTION_VALUES)
            ops = kind_values.replace_strict(_OP_BY_VALUE, return_dtype=pl.String)
            value_expr = json_objects((), {}, [
                ("before", pl.when(retraction).then(row).otherwise(pl.lit("null"))),
                ("after", pl.when(retraction).then(pl.lit("null")).otherwise(row)),
                ("op", pl.concat_str([pl.lit('"'), ops, pl.lit('"')])),
                ("ts_ms", pl.lit(str(timestamp_ms))),
                (KIND_COLUMN, quoted_kind),
                (SCHEMA_FIELD, schema_id),
            ])
        columns = [value_expr.cast(pl.Binary).alias("value")]
        if self.primary_key:
            columns.append(json_objects(self.primary_key, texts).cast(pl.Binary).alias("key"))
        encoded = frame.select(columns)
        values: list[bytes] = encoded.get_column("value").to_list()
        keys: list[bytes | None] = (
            encoded.get_column("key").to_list() if self.primary_key else [None] * data.num_rows
        )
        return Encoded(keys, values)

    def _check_per_row(self) -> None:
        # The per-row encodings must never write or read ``arrow`` records as Debezium JSON.
        if self.batched:
            raise TypeError(
                f"log.format={self.value_format.value} records hold batches of rows: use encode_batches "
                "(writing) and tablelog.formats.arrow (reading), not the per-row methods"
            )

    def encode_batches(self, data: pa.Table, kinds: Sequence[RowKind], limit: int) -> list[bytes]:
        """The rows of ``data`` (one partition's, in the table schema) as ``arrow``
        records of at most ``limit`` bytes each (see :mod:`tablelog.formats.arrow`)."""
        return arrow_records.encode_records(
            data, kinds, schema_id=self.schema_id, compression=self.compression, limit=limit,
            primary_key=self.primary_key, table=self.table,
        )

    # -- reading ---------------------------------------------------------------

    def decode_value(self, value: bytes) -> tuple[RowKind, dict[str, Any]]:
        """Row kind and JSON-level row of one value (in the schema it was written with);
        raises ValueError when it is not ours."""
        kind, row, _schema_id = self.decode_record(value)
        return kind, row

    def decode_record(self, value: bytes) -> tuple[RowKind, dict[str, Any], Any]:
        """Row kind, JSON-level row and schema id of one value (0 when it names none);
        raises ValueError when it is not ours. The row is in the schema the value names
        (see :mod:`tablelog.store.evolution`). The schema id is returned as the value
        holds it: the caller checks it only when it is not its own (:func:`schema_id`)."""
        self._check_per_row()
        doc = self._loads(value)
        if not isinstance(doc, dict):
            raise ValueError("value is not a JSON object")
        if self.value_format is LogFormat.JSON:
            kind = RowKind.parse(doc.pop(KIND_COLUMN))
            return kind, doc, doc.pop(SCHEMA_FIELD, 0)
        # debezium_change's first case inlined: it is what tablelog writes, one call less a record
        known = _ENVELOPE_BY_KIND.get(doc.get(KIND_COLUMN))  # type: ignore[arg-type]
        if known is not None:
            row = doc.get(known[1])
            if type(row) is dict and doc.get("op") == known[2]:
                return known[0], row, doc.get(SCHEMA_FIELD, 0)
        kind, row = debezium_change(doc)
        return kind, row, doc.get(SCHEMA_FIELD, 0)

    @property
    def change_decoder(self) -> Callable[[bytes], tuple[RowKind, dict[str, Any]]]:
        """:meth:`decode_value` and :meth:`python_row` in one call, for a reader's loop over
        every record. A value as tablelog writes it (a debezium-json envelope with its
        ``_kind``, the row in the table's columns, no special float) costs one parse, one
        look-up and a comparison; any other value takes the general path."""
        if self._change_decoder is None:
            self._change_decoder = self._make_change_decoder()
        return self._change_decoder

    def _make_change_decoder(self) -> Callable[[bytes], tuple[RowKind, dict[str, Any]]]:
        self._check_per_row()
        decode_record, python_row, own = self.decode_record, self.python_row, self.schema_id

        def general(value: bytes) -> tuple[RowKind, dict[str, Any]]:
            kind, row, written = decode_record(value)
            if written != own:
                raise OtherSchema(kind, row, written)
            return kind, python_row(row)

        names = self._identity_names
        if self.value_format is LogFormat.JSON or names is None:
            return general
        loads, envelopes = orjson.loads, _ENVELOPE_BY_KIND
        # A special float travels as a JSON string ("NaN", "Infinity", "-Infinity"): two
        # substring searches over the bytes send the (rare) values that may hold one the
        # general way.
        floats = bool(self._float_names)

        def decode(value: bytes) -> tuple[RowKind, dict[str, Any]]:
            doc = loads(value)
            if type(doc) is dict:
                known = envelopes.get(doc.get(KIND_COLUMN))  # type: ignore[arg-type]
                if known is not None:
                    kind, field, op = known
                    row = doc.get(field)
                    if (type(row) is dict and doc.get("op") == op and tuple(row) == names
                            and doc.get(SCHEMA_FIELD, 0) == own
                            and not (floats and (b'NaN"' in value or b'Infinity"' in value))):
                        return kind, row
            return general(value)

        return decode

    def values_to_arrow(self, values: list[bytes | None]) -> pa.Table:
        """Many values decoded at once into an Arrow table with a leading ``_kind``
        column (the schema of :meth:`rows_to_arrow`), by Arrow's JSON reader in native
        code: no Python object per record. Raises ValueError when any value is not one
        :meth:`decode_value` accepts with the table's types; the caller then decodes
        them one by one to report the culprit."""
        self._check_per_row()
        output = self._arrow_schema
        if not values:
            return output.empty_table()
        if None in values:
            raise ValueError("a record has no value")
        data = b"\n".join(values)  # type: ignore[arg-type]  # None ruled out above
        # A value must not straddle two blocks of the reader: blocks hold the largest value.
        block = max(1 << 20, 2 * max(map(len, values)) + 2)  # type: ignore[arg-type]
        try:
            parsed = pa_json.read_json(
                pa.BufferReader(data),
                read_options=pa_json.ReadOptions(block_size=block),
                parse_options=self._json_parse_options,
            )
        except pa.ArrowInvalid:
            # Arrow's reader takes a column's values of one JSON type only: the rare values
            # with NaN or an infinity (strings in a number column), and those of the older
            # encoding (numbers for times), are decoded one by one.
            return self._values_to_arrow_one_by_one(values)  # type: ignore[arg-type]
        if parsed.num_rows != len(values):  # a value with a raw newline: not one of ours
            raise ValueError("values do not parse one row each")
        schema_ids = parsed.column(SCHEMA_FIELD)  # none: written before schema ids, schema 0
        bounds = pc.min_max(schema_ids.fill_null(0) if schema_ids.null_count else schema_ids).as_py()
        if bounds["min"] != self.schema_id or bounds["max"] != self.schema_id:
            raise ValueError("values of another schema")  # decoded one by one, which maps them
        if self.value_format is LogFormat.JSON:
            kinds = parsed.column(KIND_COLUMN).combine_chunks()
            if kinds.null_count or not pc.all(pc.is_in(kinds, pa.array(_KIND_VALUES))).as_py():
                raise ValueError("a value has no valid _kind")
            columns = [parsed.column(field.name) for field in self.schema]
        else:
            kinds, columns = _debezium_columns(parsed, len(self.schema))
        try:
            arrays = [kinds] + [
                from_json_arrow(column, field.type) for column, field in zip(columns, self.schema, strict=True)
            ]
        except ValueError:  # Arrow's casts are stricter than the rules (a fraction's trailing zeros)
            return self._values_to_arrow_one_by_one(values)  # type: ignore[arg-type]
        return pa.Table.from_arrays(arrays, schema=output)

    def _values_to_arrow_one_by_one(self, values: list[bytes]) -> pa.Table:
        try:
            decoded = [self.decode_record(v) for v in values]
            if any(schema_id(s) != self.schema_id for _, _, s in decoded):
                raise ValueError("values of another schema")
            return self.rows_to_arrow([k for k, _, _ in decoded], [self.python_row(r) for _, r, _ in decoded])
        except (KeyError, TypeError) as err:
            raise ValueError(f"a value is not a row of the table: {err!r}") from None

    @property
    def _json_parse_options(self) -> pa_json.ParseOptions:
        row = pa.struct([pa.field(f.name, json_type(f.type)) for f in self.schema])
        if self.value_format is LogFormat.JSON:
            schema = pa.schema([*row, pa.field(KIND_COLUMN, pa.string()), pa.field(SCHEMA_FIELD, pa.int64())])
        else:
            schema = pa.schema([
                ("before", row), ("after", row), ("op", pa.string()), (KIND_COLUMN, pa.string()),
                (SCHEMA_FIELD, pa.int64()),
            ])
        return pa_json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")

    def rows_to_arrow(self, kinds: list[RowKind], rows: list[dict[str, Any]]) -> pa.Table:
        """Rows in the table's Python types (what :meth:`python_row` returns, what a
        reader's changes hold) as an Arrow table with a leading ``_kind`` column: the
        one way from decoded rows to Arrow."""
        return pa.Table.from_pylist(rows, schema=self.schema).add_column(0, KIND_COLUMN, pa.array(kinds, pa.string()))

    @property
    def _arrow_schema(self) -> pa.Schema:
        return pa.schema([pa.field(KIND_COLUMN, pa.string()), *self.schema])

    def python_row(self, row: dict[str, Any]) -> dict[str, Any]:
        """A decoded JSON-level row with values converted to the table's Python types."""
        if self._identity_names is not None and tuple(row) == self._identity_names:
            floats = self._float_names  # a special float arrives as a string: converted below
            if not floats or not any(type(row[name]) is str for name in floats):
                return row  # exactly the table's columns, in order, nothing to convert
        return {name: convert(row.get(name)) for name, convert in self._row_converters}


_KIND_VALUES = [k.value for k in RowKind]


#: For each ``_kind`` value: the row kind, the field holding its row, the op it goes with
#: (one look-up per record on the reader's path, instead of enum properties).
_ENVELOPE_BY_KIND = {
    k.value: (k, "before" if k.is_retraction else "after", _OP_BY_VALUE[k.value]) for k in RowKind
}


def debezium_change(doc: dict[str, Any]) -> tuple[RowKind, dict[str, Any]]:
    """Row kind and JSON-level row of one Debezium envelope (see the module docstring);
    raises ValueError when it is none."""
    known = _ENVELOPE_BY_KIND.get(doc.get(KIND_COLUMN))  # type: ignore[arg-type]
    if known is not None:  # what tablelog writes
        written, field, written_op = known
        row = doc.get(field)
        if type(row) is dict and doc.get("op") == written_op:
            return written, row
        raise ValueError(f"a {written.value} record needs op {written_op!r} and its row in {field}")
    payload = doc.get("payload")
    if "op" not in doc and isinstance(payload, dict):
        doc = payload  # Debezium's {"schema": ..., "payload": ...} wrapper
    op = doc.get("op")
    after, before = doc.get("after"), doc.get("before")
    kind = _KIND_BY_VALUE.get(doc.get(KIND_COLUMN))  # type: ignore[arg-type]
    if kind is not None:
        row = before if kind.is_retraction else after
        if isinstance(row, dict) and op == _OP_BY_VALUE[kind.value]:
            return kind, row
        raise ValueError(f"a {kind.value} record needs op {_OP_BY_VALUE[kind.value]!r} and its row "
                         f"in {'before' if kind.is_retraction else 'after'}")
    if op in ("c", "r") and isinstance(after, dict):
        return RowKind.INSERT, after
    if op == "u" and isinstance(after, dict):
        return RowKind.UPDATE_AFTER, after
    if op == "u" and isinstance(before, dict):
        return RowKind.UPDATE_BEFORE, before
    if op == "d" and isinstance(before, dict):
        return RowKind.DELETE, before
    raise ValueError(f"not a Debezium envelope (op={op!r})")


def _debezium_columns(parsed: pa.Table, width: int) -> tuple[pa.Array, list[pa.ChunkedArray]]:
    """Row kinds and row columns of parsed Debezium envelopes; the same rules as
    :func:`debezium_change`, column-wise."""
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
    by_op = pc.case_when(conditions, *(pa.scalar(k.value) for k in
                                       (RowKind.INSERT, RowKind.UPDATE_AFTER, RowKind.UPDATE_BEFORE, RowKind.DELETE)))
    given = parsed.column(KIND_COLUMN)
    if given.null_count == len(given):
        kinds = by_op  # records written before the _kind field
    else:
        retraction = pc.is_in(given, pa.array(_RETRACTION_VALUES))
        shaped = pc.if_else(
            retraction,
            pc.and_(pc.equal(op, "d"), has_before),
            pc.and_(pc.equal(op, "c"), has_after),
        )
        valid = pc.and_(pc.is_in(given, pa.array(_KIND_VALUES)), shaped)
        kinds = pc.if_else(pc.is_null(given), by_op, pc.if_else(valid, given, pa.scalar(None, pa.string())))
    if isinstance(kinds, pa.ChunkedArray):
        kinds = kinds.combine_chunks()
    if kinds.null_count:
        raise ValueError("a value is not a Debezium envelope of a row")
    from_before = pc.is_in(kinds, pa.array(_RETRACTION_VALUES))
    columns = [
        pc.if_else(from_before, pc.struct_field(before, [i]), pc.struct_field(after, [i])) for i in range(width)
    ]
    return kinds, columns


class OtherSchema(Exception):  # noqa: N818 -- not an error: a value to map
    """Raised by a :meth:`RecordCodec.change_decoder` for a value written under another
    schema than the codec's: its row kind, JSON-level row and schema id, for the reader
    to map (:mod:`tablelog.reading.decode`)."""

    def __init__(self, kind: RowKind, row: dict[str, Any], schema_id: Any) -> None:
        super().__init__(schema_id)
        self.kind, self.row, self.schema_id = kind, row, schema_id


def schema_id(value: Any) -> int:
    """A decoded value's ``_schema`` as a schema id; ValueError when it is none."""
    if type(value) is not int or value < 0:
        raise ValueError(f"{SCHEMA_FIELD} is {value!r}, not a schema id")
    return value


def _identity(value: Any) -> Any:
    return value


def _exact_loads(value: bytes) -> Any:
    """A JSON document with its numbers exact: integers as ints, the others as Decimals."""
    return json.loads(value, parse_float=decimal.Decimal, parse_constant=_no_constant)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # as orjson refuses it
