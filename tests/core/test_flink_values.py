"""Column values as Flink's JSON formats write and read them, in both directions.

``FLINK_READERS`` is an independent reimplementation of how Flink's ``json`` and
``debezium-json`` formats read each SQL type (``JsonToRowDataConverters`` and
``JsonParserToRowDataConverters``, with the default ``timestamp-format.standard = SQL``),
and ``flink_text`` of how they write one (``RowDataToJsonConverters`` through Jackson),
written from Flink's source and Java's documented formats, not from tablelog's code:

* numbers: a JSON number as it is, else Java's ``parseXxx`` of the text (``"NaN"``,
  ``"Infinity"``); Jackson writes a float with Java's ``Float.toString`` / ``Double.toString``
  (``1.0E10``) and NaN and infinities as strings (``QUOTE_NON_NUMERIC_NUMBERS``);
* DECIMAL(p, s): ``new BigDecimal(text)`` of the number (or string), rounded HALF_UP to s
  digits, null past p digits (``DecimalData.fromBigDecimal``); written with
  ``BigDecimal.toString`` (``1.00000E-7``);
* DATE: ``ISO_LOCAL_DATE``; TIME: ``HH:mm:ss`` then an optional fraction of 0-9 digits,
  kept to the millisecond (Flink's TIME is an int of milliseconds), written as whole
  seconds; TIMESTAMP: the date, a space, the time; TIMESTAMP_LTZ: that and ``Z``, in UTC;
  a fraction is written with the digits it needs, none for a whole second;
* BYTES: base64; STRING, BOOLEAN and integers as they are.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import math
import re
import struct
from fractions import Fraction
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import tablelog
from tablelog.formats import record_codec
from tablelog.options import LogFormat
from tablelog.records import ProduceBatch, RowKind
from tablelog.table import internals

UTC = dt.timezone.utc
F32_MAX = 3.4028234663852886e38
F32_TINY = 1.401298464324817e-45
D = decimal.Decimal

#: Each column: its Arrow type, the Flink SQL type a Flink table declares for it, edge values.
COLUMNS: dict[str, tuple[pa.DataType, str, list[Any]]] = {
    "i8": (pa.int8(), "TINYINT", [127, -128, None]),
    "i16": (pa.int16(), "SMALLINT", [32767, -32768, None]),
    "i32": (pa.int32(), "INT", [2**31 - 1, -(2**31), None]),
    "i64": (pa.int64(), "BIGINT", [2**63 - 1, -(2**63), 0]),
    "flag": (pa.bool_(), "BOOLEAN", [True, False, None]),
    "f32": (pa.float32(), "FLOAT", [0.10000000149011612, F32_MAX, -F32_TINY, -0.0, 1e10, math.nan, math.inf,
                                    -math.inf, None]),
    "f64": (pa.float64(), "DOUBLE", [0.1, 5e-324, 1.7976931348623157e308, 1e-7, 123456789.125, -0.0, math.nan,
                                     -math.inf, None]),
    "dec": (pa.decimal128(38, 10), "DECIMAL(38, 10)", [D("9999999999999999999999999999.9999999999"),
                                                       D("-0.0000000001"), D("0E-10"), D("0.0000001"), None]),
    "dec0": (pa.decimal128(38, 0), "DECIMAL(38, 0)", [D("-99999999999999999999999999999999999999"), D(7), None]),
    "price": (pa.decimal128(10, 2), "DECIMAL(10, 2)", [D("12.34"), D("-0.05"), D("12345678.90"), None]),
    "s": (pa.string(), "STRING", ["", 'quote " back\\slash \n', "\U0001f600 ünï", "\u2028", None]),
    "ls": (pa.large_string(), "STRING", ["large", None]),
    "bin": (pa.binary(), "BYTES", [b"", b"\x00\xff", bytes(range(256)), None]),
    "day": (pa.date32(), "DATE", [dt.date(1, 1, 1), dt.date(9999, 12, 31), dt.date(1969, 12, 31), None]),
    "tod": (pa.time32("ms"), "TIME(3)", [dt.time(0, 0), dt.time(23, 59, 59), dt.time(12, 30, 1, 250000),
                                         dt.time(1, 2, 3, 4000), None]),
    "at": (pa.timestamp("us"), "TIMESTAMP(6)", [dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
                                                dt.datetime(1969, 12, 31, 23, 59, 59, 120000), None]),
    "at_ms": (pa.timestamp("ms"), "TIMESTAMP(3)", [dt.datetime(1900, 1, 1, 0, 0, 0, 1000), None]),
    "at_ns": (pa.timestamp("ns"), "TIMESTAMP(9)", [dt.datetime(1677, 9, 22), dt.datetime(2262, 4, 11, 0, 0, 1), None]),
    "at_tz": (pa.timestamp("us", tz="UTC"), "TIMESTAMP_LTZ(6)", [dt.datetime(1901, 1, 1, tzinfo=UTC),
                                                                 dt.datetime(2038, 1, 19, 3, 14, 8, 5, tzinfo=UTC),
                                                                 None]),
}
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False),
                    *(pa.field(name, data_type) for name, (data_type, _, _) in COLUMNS.items())])
FLINK_TYPES = {"id": "BIGINT", **{name: flink for name, (_, flink, _) in COLUMNS.items()}}


def edge_rows(count: int) -> list[dict[str, Any]]:
    """Every edge value of every column at least once."""
    return [{"id": i, **{name: values[i % len(values)] for name, (_, _, values) in COLUMNS.items()}}
            for i in range(count)]


# -- Java's number rules ------------------------------------------------------------------------

_JAVA_SPECIALS = {"NaN": math.nan, "Infinity": math.inf, "+Infinity": math.inf, "-Infinity": -math.inf}


def _f32_bits(value: float) -> int:
    return int(struct.unpack("<I", struct.pack("<f", value))[0])


def _f32_of_bits(bits: int) -> float:
    return float(struct.unpack("<f", struct.pack("<I", bits))[0])


def java_parse_float(text: str) -> float:
    """``Float.parseFloat``: the float32 nearest the decimal (ties to even), as a double."""
    text = text.strip()
    if text in _JAVA_SPECIALS:
        return _JAVA_SPECIALS[text]
    exact = Fraction(D(text))
    magnitude = abs(exact)
    try:
        guess = _f32_bits(float(magnitude))  # rounded twice: the nearest is this or a neighbour
    except OverflowError:  # nearer infinity than the largest float32
        return math.inf if exact > 0 else -math.inf
    candidates = [b for b in (guess - 1, guess, guess + 1) if 0 <= b < 0x7F800000]
    best = min(candidates, key=lambda b: (abs(Fraction(_f32_of_bits(b)) - magnitude), b & 1))
    value = _f32_of_bits(best)
    return -value if exact < 0 or (exact == 0 and text.startswith("-")) else value


def java_parse_double(text: str) -> float:
    text = text.strip()
    return _JAVA_SPECIALS[text] if text in _JAVA_SPECIALS else float(D(text))


def java_float_text(value: float, float32: bool) -> str:
    """``Float.toString`` / ``Double.toString`` (JDK 19 on): the shortest decimal that reads
    back as the value, two digits when one would do; plain from 10^-3 to 10^7, else
    ``d.dddE±n``."""
    if value == 0:
        return "-0.0" if math.copysign(1, value) < 0 else "0.0"
    parse = (lambda s: java_parse_float(s)) if float32 else float
    digits = next(p for p in range(1, 18) if parse(f"{value:.{p - 1}e}") == value)
    mantissa, exponent_text = f"{abs(value):.{max(digits, 2) - 1}e}".split("e")
    figures = mantissa.replace(".", "").rstrip("0") or "0"
    exponent = int(exponent_text)
    sign = "-" if value < 0 else ""
    if 1e-3 <= abs(value) < 1e7:
        point = exponent + 1
        if point <= 0:
            return f"{sign}0.{'0' * -point}{figures}"
        whole, fraction = figures[:point].ljust(point, "0"), figures[point:]
        return f"{sign}{whole}.{fraction or '0'}"
    return f"{sign}{figures[0]}.{figures[1:] or '0'}E{exponent}"


def java_big_decimal_text(value: decimal.Decimal) -> str:
    """``BigDecimal.toString``: plain unless the adjusted exponent is below -6 (or the scale
    negative), then ``d.dddE±n``."""
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    unscaled = "".join(map(str, digits)).lstrip("0") or "0"
    scale = -exponent
    adjusted = -scale + len(unscaled) - 1
    minus = "-" if sign else ""
    if scale == 0:
        return minus + unscaled
    if scale > 0 and adjusted >= -6:
        padded = unscaled.rjust(scale + 1, "0")
        return f"{minus}{padded[:-scale]}.{padded[-scale:]}"
    tail = f".{unscaled[1:]}" if len(unscaled) > 1 else ""
    return f"{minus}{unscaled[0]}{tail}E{'+' if adjusted > 0 else ''}{adjusted}"


# -- Flink's readers ----------------------------------------------------------------------------

_DATE = r"(\d{4})-(\d{2})-(\d{2})"
_TIME = r"(\d{2}):(\d{2}):(\d{2})(?:\.(\d{0,9}))?"


class FlinkParseError(Exception):
    pass


def _match(pattern: str, node: Any) -> re.Match[str]:
    found = re.fullmatch(pattern, node if isinstance(node, str) else json.dumps(node))
    if found is None:
        raise FlinkParseError(f"Text {node!r} could not be parsed")
    return found


def _local_time(hour: str, minute: str, second: str, fraction: str | None) -> tuple[dt.time, int]:
    nanos = int((fraction or "").ljust(9, "0"))
    return dt.time(int(hour), int(minute), int(second), nanos // 1000), nanos % 1000


def _text(node: Any) -> str:
    """Jackson's ``asText`` of a scalar node: a number's text as it was written."""
    return node if isinstance(node, str) else str(node)


def _flink_decimal(node: Any, precision: int, scale: int) -> decimal.Decimal | None:
    value = D(_text(node).strip()).quantize(D(1).scaleb(-scale), rounding=decimal.ROUND_HALF_UP,
                                            context=decimal.Context(prec=100))
    return None if len(value.as_tuple().digits) > precision else value  # BigDecimal.precision()


def _flink_time(node: Any) -> dt.time:
    hour, minute, second, fraction = _match(_TIME, node).groups()
    moment, _ = _local_time(hour, minute, second, fraction)
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)  # milliseconds of the day


def _flink_timestamp(node: Any, zone: bool) -> dt.datetime:
    year, month, day, hour, minute, second, fraction = _match(_DATE + " " + _TIME + ("Z" if zone else ""), node).groups()
    moment, below_micros = _local_time(hour, minute, second, fraction)
    assert below_micros == 0, "no column here is finer than microseconds"
    value = dt.datetime.combine(dt.date(int(year), int(month), int(day)), moment)
    return value.replace(tzinfo=UTC) if zone else value


def flink_value(node: Any, flink_type: str) -> Any:
    """What a Flink column of ``flink_type`` holds for a JSON value (``json.loads`` with
    exact decimals, as Jackson with ``USE_BIG_DECIMAL_FOR_FLOATS``)."""
    if node is None:
        return None
    base, _, arguments = flink_type.partition("(")
    if base in ("TINYINT", "SMALLINT", "INT", "BIGINT"):
        return node if type(node) is int else int(_text(node).strip())
    if base == "BOOLEAN":
        return node if type(node) is bool else _text(node).strip().lower() == "true"
    if base == "FLOAT":
        return java_parse_float(_text(node))
    if base == "DOUBLE":
        return java_parse_double(_text(node))
    if base == "DECIMAL":
        precision, scale = (int(x) for x in arguments.rstrip(")").split(","))
        return _flink_decimal(node, precision, scale)
    if base == "STRING":
        return node if isinstance(node, str) else json.dumps(node)
    if base == "BYTES":
        return base64.b64decode(node, validate=True)
    if base == "DATE":
        return dt.date(*(int(x) for x in _match(_DATE, node).groups()))
    if base == "TIME":
        return _flink_time(node)
    if base in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return _flink_timestamp(node, zone=base == "TIMESTAMP_LTZ")
    raise AssertionError(flink_type)


def flink_rows(value: bytes, log_format: str) -> list[dict[str, Any]]:
    """The rows a Flink table (``debezium-json``: its envelope; ``json``: the row itself, the
    fields it does not declare ignored) reads from one record."""
    doc = json.loads(value, parse_float=D)
    if log_format == "debezium-json":
        doc = doc["after"] if doc["op"] in ("c", "r") else doc["before"]
    return [{name: flink_value(doc.get(name), flink_type) for name, flink_type in FLINK_TYPES.items()}]


# -- Flink's writers ----------------------------------------------------------------------------


def flink_text(value: Any, flink_type: str) -> str:
    """The JSON text Flink writes for a value of ``flink_type``."""
    base = flink_type.partition("(")[0]
    if value is None:
        return "null"
    if base in ("FLOAT", "DOUBLE"):
        if math.isnan(value) or math.isinf(value):
            return json.dumps("NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity"))
        return java_float_text(value, float32=base == "FLOAT")
    if base == "DECIMAL":
        return java_big_decimal_text(value)
    if base == "BYTES":
        return json.dumps(base64.b64encode(value).decode())
    if base == "DATE":
        return json.dumps(f"{value.year:04d}-{value.month:02d}-{value.day:02d}")
    if base == "TIME":  # LocalTime.ofSecondOfDay(millis / 1000): whole seconds
        return json.dumps(f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}")
    if base in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        moment = value.astimezone(UTC) if base == "TIMESTAMP_LTZ" else value
        fraction = f"{moment.microsecond:06d}".rstrip("0")
        text = (f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d} "
                f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}{'.' + fraction if fraction else ''}")
        return json.dumps(text + ("Z" if base == "TIMESTAMP_LTZ" else ""))
    return json.dumps(value, ensure_ascii=False)


def flink_envelope(kind: RowKind, row: dict[str, Any]) -> bytes:
    """``DebeziumJsonSerializationSchema``: an addition is a create, a retraction a delete."""
    text = "{" + ",".join(f"{json.dumps(name)}:{flink_text(row.get(name), t)}" for name, t in FLINK_TYPES.items()) + "}"
    before, after, op = (text, "null", "d") if kind.is_retraction else ("null", text, "c")
    return f'{{"before":{before},"after":{after},"op":"{op}"}}'.encode()


def debezium_connector_envelope(kind: RowKind, row: dict[str, Any]) -> bytes:
    """The older encoding (Debezium's connectors): decimals as strings, dates as epoch days,
    times and timestamps as microseconds."""
    def value(name: str) -> Any:
        v = row.get(name)
        if v is None or isinstance(v, bool | int | str):
            return v
        if isinstance(v, float):
            return ("NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")) if not math.isfinite(v) else v
        if isinstance(v, D):
            return str(v)
        if isinstance(v, bytes):
            return base64.b64encode(v).decode()
        if isinstance(v, dt.datetime):
            epoch = dt.datetime(1970, 1, 1, tzinfo=v.tzinfo and UTC)
            return (v - epoch) // dt.timedelta(microseconds=1)
        if isinstance(v, dt.date):
            return (v - dt.date(1970, 1, 1)).days
        return ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond
    doc = {name: value(name) for name in FLINK_TYPES}
    return json.dumps({"before": doc if kind.is_retraction else None,
                       "after": None if kind.is_retraction else doc,
                       "op": "d" if kind.is_retraction else "c"}).encode()


# -- comparing ----------------------------------------------------------------------------------


def comparable(row: dict[str, Any]) -> tuple[Any, ...]:
    """A row as a sortable tuple: NaN as a token, the sign of a zero kept."""
    def one(v: Any) -> Any:
        if isinstance(v, float):
            return ("nan",) if math.isnan(v) else (v, math.copysign(1, v))
        return v
    return tuple((name, one(row.get(name))) for name in FLINK_TYPES)


def as_flink_holds(row: dict[str, Any]) -> dict[str, Any]:
    """A table row as Flink's columns hold it: a TIME to the millisecond."""
    tod = row.get("tod")
    return {**row, "tod": None if tod is None else tod.replace(microsecond=tod.microsecond // 1000 * 1000)}


def log_values(table: tablelog.Table) -> list[bytes]:
    values: list[bytes] = []
    with internals(table).open_log() as log:
        for partition in range(internals(table).files.bucket):
            end, position = log.end_positions([partition])[partition], 0
            while position < end:
                result = log.fetch(partition, position, 10_000, timeout_s=1.0)
                values.extend(r.value for r in result.records if r.value is not None)
                position = result.next_position
    return values


# -- the tests ----------------------------------------------------------------------------------


@pytest.mark.parametrize("log_format", ["debezium-json", "json"])
def test_a_flink_table_reads_every_value_tablelog_writes_as_the_table_holds_it(tmp_path: Path, log_format: str) -> None:
    table = tablelog.create_table(str(tmp_path), "db.flink", SCHEMA, primary_key=["id"], bucket=2,
                                  options={"log.system": "filesystem", "log.format": log_format})
    with table.writer() as writer:
        writer.write(edge_rows(30))
        writer.commit()
    read_by_flink = [row for value in log_values(table) for row in flink_rows(value, log_format)]
    expected = [as_flink_holds(row) for row in table.rows().to_pylist()]
    assert sorted(map(comparable, read_by_flink)) == sorted(map(comparable, expected))


def whole_seconds(row: dict[str, Any]) -> dict[str, Any]:
    """Flink writes a TIME as whole seconds: rows whose TIME it writes as they are."""
    tod = row.get("tod")
    return {**row, "tod": None if tod is None else tod.replace(microsecond=0)}


@pytest.mark.parametrize("encode", [flink_envelope, debezium_connector_envelope], ids=["flink", "debezium-connector"])
def test_values_written_the_way_flink_writes_them_are_read_by_every_tablelog_decoder(
    tmp_path: Path, encode: Any
) -> None:
    # the values as the table's columns hold them (a decimal at the column's scale)
    rows = pa.Table.from_pylist([whole_seconds(row) for row in edge_rows(30)], schema=SCHEMA).to_pylist()
    kinds = [RowKind.DELETE if i % 7 == 3 else RowKind.INSERT for i in range(len(rows))]
    values = [encode(kind, row) for kind, row in zip(kinds, rows, strict=True)]
    expected = sorted(map(comparable, rows))
    codec = record_codec(SCHEMA, ("id",), LogFormat.DEBEZIUM_JSON)

    decoded = [codec.change_decoder(v) for v in values]
    assert [k for k, _ in decoded] == kinds
    assert sorted(comparable(row) for _, row in decoded) == expected
    at_once = codec.values_to_arrow(values)
    assert at_once.column("_kind").to_pylist() == [k.value for k in kinds]
    assert sorted(map(comparable, at_once.drop_columns(["_kind"]).to_pylist())) == expected

    table = tablelog.create_table(str(tmp_path), "db.from_flink", SCHEMA, primary_key=["id"], bucket=1,
                                  options={"log.system": "filesystem"})
    with internals(table).open_log() as log:
        log.produce(ProduceBatch(internals(table).token_prefix + "0" * 16, 0, [None] * len(values), values, 0))
        log.flush(5)
    with table.reader(consistency="eventual", scan_mode="earliest") as reader:
        changes = reader.read_all(idle_timeout_s=0.2)
    assert [c.kind for c in changes] == kinds
    assert sorted(comparable(c.row) for c in changes) == expected


@pytest.mark.parametrize("log_format", [LogFormat.DEBEZIUM_JSON, LogFormat.JSON])
def test_a_float_has_one_text_whatever_else_its_row_or_write_holds(log_format: LogFormat) -> None:
    schema = pa.schema([("k", pa.float32()), ("x", pa.float64()), ("y", pa.float32())])
    codec = record_codec(schema, ("k",), log_format)
    plain = pa.table({"k": [0.1, 1e10], "x": [1.0, 2.0], "y": [0.3, 0.3]}, schema=schema)
    special = pa.table({"k": [0.1, 1e10], "x": [math.nan, 2.0], "y": [0.3, -math.inf]}, schema=schema)
    plain_out = codec.encode(plain, [RowKind.INSERT] * 2, 0)
    special_out = codec.encode(special, [RowKind.INSERT] * 2, 0)
    # one record key per key value: Kafka's log compaction merges them
    assert special_out.keys == plain_out.keys
    assert plain_out.keys[0] == b'{"k":0.1}'
    def text(column: bytes, value: bytes) -> bytes:
        found = re.search(b'"' + column + b'":([^,}]*)', value)
        assert found is not None
        return found[1]

    for column in (b"k", b"y"):
        assert text(column, special_out.values[0]) == text(column, plain_out.values[0])
    assert [text(b"k", v) for v in special_out.values] == [b"0.1", b"10000000000.0"]
    assert [text(b"y", v) for v in special_out.values] == [b"0.3", b'"-Infinity"']
