"""The JSON text of rows and keys, built column-wise in native code by polars.

Polars' ``struct.json_encode`` writes most columns the way :mod:`tablelog.formats.json_values`
says. Two kinds of value it does not: a decimal, which it quotes (the text of the
number is written instead), and NaN or an infinity, which it writes as null (Jackson's
``"NaN"``, ``"Infinity"``, ``"-Infinity"`` are written instead). Such columns are written
member by member with polars' string expressions, every other value of them with the
very text polars gives it: a value has one text whatever else its row or its write holds,
so a key value is one record key (Kafka's log compaction merges its records).

:func:`encode_rows` makes the values and keys of a write from them. Polars is imported
by writers only (see there).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import attrs
import pyarrow as pa
import pyarrow.compute as pc

from tablelog.formats.codec import KIND_COLUMN, SCHEMA_FIELD
from tablelog.formats.debezium import OP_BY_VALUE, RETRACTION_VALUES
from tablelog.formats.json_values import is_float, to_json_array, written_as_number
from tablelog.records import RowKind

if TYPE_CHECKING:
    import polars as pl


@attrs.frozen
class Encoded:
    """Encoded records, one per input row, in input order."""

    keys: list[bytes | None]
    values: list[bytes]


def encode_rows(
    data: pa.Table, kinds: Sequence[RowKind], timestamp_ms: int, schema: pa.Schema, primary_key: Sequence[str],
    schema_id: int, *, envelope: bool,
) -> Encoded:
    """Every row of ``data`` (already cast to the table ``schema``, id ``schema_id``) as a
    value (a Debezium envelope when ``envelope``, else the row with its ``_kind``) and a
    key (the primary key; None without one), column-wise.

    Polars builds the JSON of all rows in native code: several times faster than a dumps
    call per row, which matters because encoding sits on the writer's hot path between
    Arrow and the log client. Polars is imported here, by writers only: readers (Spark's
    planner and tasks among them, a fresh process each query) never pay its import.
    """
    import polars as pl

    json_level = pa.Table.from_arrays(
        [to_json_array(data.column(i)) for i in range(data.num_columns)], names=data.schema.names
    )
    frame = pl.from_arrow(json_level, rechunk=False)
    assert isinstance(frame, pl.DataFrame)
    texts = value_texts(json_level, schema)
    # A RowKind is a str holding its value: polars reads "+I", "-U"... in native code
    # (a Python-level .value / dict look-up per row cost more than the JSON encoding).
    kind_values = pl.Series(KIND_COLUMN, kinds, dtype=pl.String)
    quoted_kind = pl.concat_str([pl.lit('"'), kind_values, pl.lit('"')])
    schema_text = pl.lit(str(schema_id))
    names = data.schema.names
    if not envelope:
        value_expr = json_objects(names, texts, [(KIND_COLUMN, quoted_kind), (SCHEMA_FIELD, schema_text)])
    else:
        row = json_objects(names, texts)
        retraction = kind_values.is_in(RETRACTION_VALUES)
        ops = kind_values.replace_strict(OP_BY_VALUE, return_dtype=pl.String)
        value_expr = json_objects((), {}, [
            ("before", pl.when(retraction).then(row).otherwise(pl.lit("null"))),
            ("after", pl.when(retraction).then(pl.lit("null")).otherwise(row)),
            ("op", pl.concat_str([pl.lit('"'), ops, pl.lit('"')])),
            ("ts_ms", pl.lit(str(timestamp_ms))),
            (KIND_COLUMN, quoted_kind),
            (SCHEMA_FIELD, schema_text),
        ])
    columns = [value_expr.cast(pl.Binary).alias("value")]
    if primary_key:
        columns.append(json_objects(primary_key, texts).cast(pl.Binary).alias("key"))
    encoded = frame.select(columns)
    values: list[bytes] = encoded.get_column("value").to_list()
    keys: list[bytes | None] = encoded.get_column("key").to_list() if primary_key else [None] * data.num_rows
    return Encoded(keys, values)


def value_texts(json_level: pa.Table, schema: pa.Schema) -> dict[str, pl.Expr]:
    """For each column of ``json_level`` (the rows of ``schema`` in their JSON-level
    types) that polars' encoder does not write as tablelog does, the JSON text of each of
    its values (null for a null)."""
    import polars as pl

    texts: dict[str, pl.Expr] = {}
    for field, column in zip(schema, json_level.columns, strict=True):
        if written_as_number(field.type):
            texts[field.name] = pl.col(field.name)
        elif is_float(field.type) and _has_special_float(column):
            value = pl.col(field.name)
            texts[field.name] = (
                pl.when(value.is_nan()).then(pl.lit('"NaN"'))
                .when(value == float("inf")).then(pl.lit('"Infinity"'))
                .when(value == float("-inf")).then(pl.lit('"-Infinity"'))
                .otherwise(_polars_text(field.name))
            )
    return texts


def json_objects(
    names: Sequence[str], texts: Mapping[str, pl.Expr], members: Sequence[tuple[str, pl.Expr]] = ()
) -> pl.Expr:
    """The JSON object of each row: its columns ``names`` in that order, each as polars
    writes it or as ``texts`` gives it, then ``members`` (name, text of the value)."""
    import polars as pl

    if not members and not any(name in texts for name in names):
        return pl.struct(list(names)).struct.json_encode()
    parts: list[pl.Expr] = []
    run: list[str] = []  # consecutive columns polars writes: encoded together

    def end_run() -> None:
        if run:
            parts.append(pl.struct(list(run)).struct.json_encode().str.strip_prefix("{").str.strip_suffix("}"))
            run.clear()

    for name in names:
        if name in texts:
            end_run()
            parts.append(pl.concat_str([pl.lit(_member(name)), texts[name].fill_null("null")]))
        else:
            run.append(name)
    end_run()
    parts.extend(pl.concat_str([pl.lit(_member(name)), text]) for name, text in members)
    return pl.concat_str([pl.lit("{"), pl.concat_str(parts, separator=","), pl.lit("}")])


def _polars_text(name: str) -> pl.Expr:
    """The text polars writes for each value of the column, in a row of its own."""
    import polars as pl

    return pl.struct(name).struct.json_encode().str.strip_prefix("{" + _member(name)).str.strip_suffix("}")


@functools.cache
def _member(name: str) -> str:
    """``"name":`` as polars writes the column's name (its escapes included)."""
    import polars as pl

    row = pl.DataFrame({name: [None]}, schema={name: pl.Int8}).select(pl.struct(pl.all()).struct.json_encode())
    return str(row.item())[1:-len("null}")]


def _has_special_float(column: pa.ChunkedArray) -> bool:
    if column.null_count == len(column):
        return False
    return not pc.all(pc.is_finite(column)).as_py()
