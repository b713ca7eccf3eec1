"""The per-record log formats, ``debezium-json`` and ``json``: a record is one row.

``debezium-json`` values are Debezium envelopes (:mod:`tablelog.formats.debezium`).
``json`` values are the row itself with its row kind in ``"_kind"`` and its schema id
in ``"_schema"``. Keys are the primary key as a JSON object (``{"id": 7}``); tables
without one have no key. How each column type is written is
:mod:`tablelog.formats.json_values`.
"""

from __future__ import annotations

import decimal
import json
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, cast

import attrs
import orjson
import pyarrow as pa

from tablelog.errors import SchemaMismatchError
from tablelog.formats.codec import (
    KIND_COLUMN,
    SCHEMA_FIELD,
    ArrowParts,
    PartitionRecords,
    RecordCodec,
    RecordReader,
)
from tablelog.formats.debezium import ENVELOPE_BY_KIND, debezium_change
from tablelog.formats.json_columns import parse_values
from tablelog.formats.json_rows import Encoded, encode_rows
from tablelog.formats.json_values import float_from_json, is_float, python_converter
from tablelog.options import LogFormat
from tablelog.records import RowKind

#: Values up to this size on average decode faster all at once by Arrow's JSON reader
#: than one by one; longer ones not (its string parsing is slower). See
#: docs/performance-history.md, "Why the reader does what it does".
_AT_ONCE_MAX_AVERAGE_BYTES = 512


@attrs.define
class JsonCodec(RecordCodec):
    """``debezium-json`` or ``json`` (``value_format``): one row a record."""

    value_format: LogFormat = LogFormat.DEBEZIUM_JSON

    rows_per_record_vary: ClassVar[bool] = False

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
        super().__attrs_post_init__()
        if any(pa.types.is_decimal(f.type) for f in self.schema):
            self._loads = _exact_loads
        converters = [(f.name, python_converter(f.type)) for f in self.schema]
        self._row_converters = [(name, convert or _identity) for name, convert in converters]
        if all(convert in (None, float_from_json) for _, convert in converters):
            self._identity_names = tuple(self.schema.names)
        self._float_names = tuple(f.name for f in self.schema if is_float(f.type))

    @property
    def name(self) -> str:
        return self.value_format.value

    # -- writing ---------------------------------------------------------------

    def encode_partitions(
        self, data: pa.Table, kinds: Sequence[RowKind], groups: Sequence[tuple[int, int, int]], timestamp_ms: int,
        limit: int, input_row: Callable[[int], int],
    ) -> list[PartitionRecords]:
        """All rows encoded at once (:meth:`encode`), each partition's records a slice of them."""
        encoded = self.encode(data, kinds, timestamp_ms)
        if max(map(len, encoded.values)) > limit:
            sizes = [len(v) for v in encoded.values]
            row = next(i for i, size in enumerate(sizes) if size > limit)
            raise SchemaMismatchError(
                f"table {self.table!r}: row {input_row(row)} encodes to {sizes[row]} bytes, "
                f"more than log.max-record-bytes={limit}; nothing was written"
            )
        if len(groups) == 1:
            return [(groups[0][0], encoded.keys, encoded.values)]
        return [
            (partition, encoded.keys[start:stop], encoded.values[start:stop]) for partition, start, stop in groups
        ]

    def encode(self, data: pa.Table, kinds: Sequence[RowKind], timestamp_ms: int) -> Encoded:
        """Encode every row of ``data`` (already cast to the table schema), column-wise
        (:func:`~tablelog.formats.json_rows.encode_rows`)."""
        return encode_rows(data, kinds, timestamp_ms, self.schema, self.primary_key, self.schema_id,
                           envelope=self.value_format is not LogFormat.JSON)

    # -- reading: a reader's changes -------------------------------------------

    def decode_changes(
        self, values: Sequence[bytes | None], positions: Sequence[int], partition: int, snapshot_id: int | None,
        out: list[Any], reader: RecordReader,
    ) -> list[int]:
        """One tight loop: it runs for every record a reader returns one by one."""
        decode = self.change_decoder
        new, change = tuple.__new__, reader.change_type  # what Change(...) does, without its Python-level __new__
        append = out.append
        left_out: list[int] = []
        for value, pos in zip(values, positions, strict=True):
            if value is None:
                reader.foreign(partition, pos, "it has no value")
                left_out.append(pos)
                continue
            try:
                try:
                    kind, row = decode(value)
                except OtherSchema as other:  # written under another schema: mapped into the reader's
                    kind = other.kind
                    row = _in_reader_schema(other.row, other.schema_id, out, reader)
                    decode = cast(JsonCodec, reader.codec).change_decoder  # the reader may have moved to it
                decoded = new(change, (kind, row, snapshot_id, partition, pos))
            except (ValueError, KeyError, TypeError) as err:
                reader.foreign(partition, pos, f"its value does not decode as {self.name} ({err})")
                left_out.append(pos)
                continue
            append(decoded)
        return left_out

    def decode_arrow(
        self, values: Sequence[bytes | None], positions: Sequence[int], partition: int, snapshot_id: int | None,
        out: ArrowParts, reader: RecordReader, moved: Callable[[], None], *, at_once: bool = False,
    ) -> list[int]:
        """Many short values all at once into Arrow (:meth:`values_to_arrow`), else (and
        whenever a value does not decode that way) one by one into changes."""
        if at_once and _decodes_faster_at_once(values):
            try:
                out.add(self.values_to_arrow(values), reader.schema_id)
                return []
            except ValueError:
                pass  # decoded one by one below, which reports the value that is not ours
        left_out = self.decode_changes(values, positions, partition, snapshot_id, out.changes(reader.schema_id), reader)
        out.changes(reader.schema_id)  # the reader maps the list when its schema moves
        return left_out

    # -- reading: one value ----------------------------------------------------

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
        doc = self._loads(value)
        if not isinstance(doc, dict):
            raise ValueError("value is not a JSON object")
        if self.value_format is LogFormat.JSON:
            kind = RowKind.parse(doc.pop(KIND_COLUMN))
            return kind, doc, doc.pop(SCHEMA_FIELD, 0)
        # debezium_change's first case inlined: it is what tablelog writes, one call less a record
        known = ENVELOPE_BY_KIND.get(doc.get(KIND_COLUMN))  # type: ignore[arg-type]
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
        decode_record, python_row, own = self.decode_record, self.python_row, self.schema_id

        def general(value: bytes) -> tuple[RowKind, dict[str, Any]]:
            kind, row, written = decode_record(value)
            if written != own:
                raise OtherSchema(kind, row, written)
            return kind, python_row(row)

        names = self._identity_names
        if self.value_format is LogFormat.JSON or names is None:
            return general
        loads, envelopes = orjson.loads, ENVELOPE_BY_KIND
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

    def python_row(self, row: dict[str, Any]) -> dict[str, Any]:
        """A decoded JSON-level row with values converted to the table's Python types."""
        if self._identity_names is not None and tuple(row) == self._identity_names:
            floats = self._float_names  # a special float arrives as a string: converted below
            if not floats or not any(type(row[name]) is str for name in floats):
                return row  # exactly the table's columns, in order, nothing to convert
        return {name: convert(row.get(name)) for name, convert in self._row_converters}

    # -- reading: many values at once -------------------------------------------

    def values_to_arrow(self, values: Sequence[bytes | None]) -> pa.Table:
        """Many values decoded at once into an Arrow table with a leading ``_kind``
        column (the schema of :meth:`rows_to_arrow`), by Arrow's JSON reader in native
        code: no Python object per record (:mod:`tablelog.formats.json_columns`). Raises
        ValueError when any value is not one :meth:`decode_value` accepts with the table's
        types; the caller then decodes them one by one to report the culprit."""
        envelope = self.value_format is not LogFormat.JSON
        parsed = parse_values(values, self.schema, self.schema_id, envelope=envelope)
        return parsed if parsed is not None else self._values_to_arrow_one_by_one(values)  # type: ignore[arg-type]

    def _values_to_arrow_one_by_one(self, values: list[bytes]) -> pa.Table:
        try:
            decoded = [self.decode_record(v) for v in values]
            if any(schema_id(s) != self.schema_id for _, _, s in decoded):
                raise ValueError("values of another schema")
            return self.rows_to_arrow([k for k, _, _ in decoded], [self.python_row(r) for _, r, _ in decoded])
        except (KeyError, TypeError) as err:
            raise ValueError(f"a value is not a row of the table: {err!r}") from None

class OtherSchema(Exception):  # noqa: N818 -- not an error: a value to map
    """Raised by a :meth:`JsonCodec.change_decoder` for a value written under another
    schema than the codec's: its row kind, JSON-level row and schema id, for the reader
    to map (:func:`_in_reader_schema`)."""

    def __init__(self, kind: RowKind, row: dict[str, Any], schema_id: Any) -> None:
        super().__init__(schema_id)
        self.kind, self.row, self.schema_id = kind, row, schema_id


def _in_reader_schema(row: dict[str, Any], written: Any, out: list[Any], reader: RecordReader) -> dict[str, Any]:
    """A row of schema ``written`` in the reader's schema (Python values). A newer
    schema moves the reader to it first, and the changes of this poll already in
    ``out`` with it."""
    before = reader.schema_id
    written_id = schema_id(written)
    if written_id == before:
        return cast(JsonCodec, reader.codec).python_row(row)
    try:
        if reader.upgrade(written_id):
            reader.remap(out, before)
        return cast(JsonCodec, reader.codec).python_row(reader.mapping(written_id).row(row))
    except LookupError as err:  # no such schema: not a row of this table
        raise ValueError(str(err)) from None


def _decodes_faster_at_once(values: Sequence[bytes | None]) -> bool:
    if None in values:
        return False  # not ours: decoded one by one, which reports it
    return sum(map(len, values)) <= _AT_ONCE_MAX_AVERAGE_BYTES * len(values)  # type: ignore[arg-type]


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
