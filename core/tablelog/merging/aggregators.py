"""The field aggregators of Paimon's ``aggregation`` engine and of partial-update's
sequence groups, each following its Java class in
``org.apache.paimon.mergetree.compact.aggregate`` (Paimon 1.x, commit 5dacde51).

An aggregator is made once per merge of a key (:func:`make_aggregator`) and may keep
state between calls (``first_value``), as Java's do between ``reset()`` calls.
Values are the Python values Arrow gives (int, float, Decimal, str, bytes, bool,
date/time); ``None`` is SQL NULL.
"""

from __future__ import annotations

import decimal
import math
import struct
from typing import Any

import pyarrow as pa

#: The functions tablelog builds, as Paimon names them (``first_not_null_value`` is
#: Paimon's legacy name of ``first_non_null_value``; ``primary-key`` is the function
#: Paimon gives key columns).
BUILT_FUNCTIONS = (
    "sum", "min", "max", "last_value", "last_non_null_value", "first_value",
    "first_non_null_value", "first_not_null_value", "listagg", "bool_and", "bool_or", "primary-key",
)
#: Functions Paimon defines (its ``FieldAggregatorFactory`` services) that tablelog does not build.
UNBUILT_FUNCTIONS = (
    "product", "collect", "merge_map", "merge_map_with_keytime", "nested_update",
    "nested_partial_update", "rbm32", "rbm64", "hll_sketch", "theta_sketch",
)
#: Functions whose ``retract`` Java implements; the others throw unless ``ignore-retract``.
RETRACTABLE = ("sum", "last_value", "last_non_null_value", "primary-key")


class RetractRefused(ValueError):
    """A retraction reached a function that cannot retract (Java's
    ``FieldAggregator.retract`` throws ``UnsupportedOperationException``)."""


def java_compare(a: Any, b: Any) -> int:
    """Java's ``InternalRowUtils.compare`` of two non-null values of one type: floats as
    ``Double.compare`` (``-0.0 < 0.0``, NaN equal to NaN and above every number), strings by
    code point (the order of their UTF-8 bytes, as ``BinaryString.compareTo``), bytes unsigned."""
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return int(math.isnan(a)) - int(math.isnan(b))
        if a == b == 0.0:
            return int(math.copysign(1, a) > 0) - int(math.copysign(1, b) > 0)
    return (a > b) - (a < b)


class FieldAggregator:
    """``FieldAggregator``: ``agg`` folds an input into the accumulator, ``retract`` takes
    a retracted input out; ``agg_reversed`` is ``agg`` with its arguments swapped (used
    by sequence groups for an input older than the row)."""

    def __init__(self, name: str, field: str, type_: pa.DataType) -> None:
        self.name, self.field, self.type = name, field, type_

    def reset(self) -> None:
        pass

    def agg(self, accumulator: Any, value: Any) -> Any:
        raise NotImplementedError

    def agg_reversed(self, accumulator: Any, value: Any) -> Any:
        return self.agg(value, accumulator)

    def retract(self, accumulator: Any, value: Any) -> Any:
        raise RetractRefused(
            f"Aggregate function '{self.name}' does not support retraction, If you allow this function "
            f"to ignore retraction messages, you can configure 'fields.{self.field}.ignore-retract'='true'."
        )


class Sum(FieldAggregator):
    """``FieldSumAgg``: nulls skipped; integers overflow with an error (Java's
    ``Math.addExact``); a retraction into a null accumulator gives the negated input;
    floats in single precision for FLOAT; decimals at the column's scale, ``None`` past
    its precision when the precision is over 18 (Java's ``DecimalUtils``; at 18 or
    less Java keeps the too-wide value)."""

    def agg(self, accumulator: Any, value: Any) -> Any:
        if accumulator is None or value is None:
            return value if accumulator is None else accumulator
        total = _EXACT.add(accumulator, value) if isinstance(value, decimal.Decimal) else accumulator + value
        return self._fit(total, f"{accumulator} + {value}")

    def retract(self, accumulator: Any, value: Any) -> Any:
        if accumulator is None or value is None:
            return accumulator if accumulator is not None else (None if value is None else self._fit(-value, f"-{value}"))
        total = _EXACT.subtract(accumulator, value) if isinstance(value, decimal.Decimal) else accumulator - value
        return self._fit(total, f"{accumulator} - {value}")

    def _fit(self, result: Any, what: str) -> Any:
        t = self.type
        if pa.types.is_integer(t):
            bits = t.bit_width
            if not -(2 ** (bits - 1)) <= result < 2 ** (bits - 1):
                raise ArithmeticError(f"{_JAVA_INT_NAMES[bits]} overflow: {what}")
            return result
        if pa.types.is_float32(t):
            return struct.unpack("f", struct.pack("f", result))[0]
        if pa.types.is_decimal(t):
            exact = result.quantize(decimal.Decimal(1).scaleb(-t.scale), rounding=decimal.ROUND_HALF_UP, context=_EXACT)
            if t.precision > 18 and len(exact.as_tuple().digits) > t.precision:
                return None
            return exact
        return result


#: Decimal arithmetic without rounding (Java's BigDecimal adds exactly; Paimon's widest is 38 digits).
_EXACT = decimal.Context(prec=100)
_JAVA_INT_NAMES = {8: "byte", 16: "short", 32: "int", 64: "long"}


class Min(FieldAggregator):
    """``FieldMinAgg``: the smaller of the non-null values."""

    def agg(self, accumulator: Any, value: Any) -> Any:
        if accumulator is None or value is None:
            return value if accumulator is None else accumulator
        return accumulator if java_compare(accumulator, value) < 0 else value


class Max(FieldAggregator):
    """``FieldMaxAgg``: the larger of the non-null values (the input on a tie)."""

    def agg(self, accumulator: Any, value: Any) -> Any:
        if accumulator is None or value is None:
            return value if accumulator is None else accumulator
        return value if java_compare(accumulator, value) < 0 else accumulator


class LastValue(FieldAggregator):
    """``FieldLastValueAgg``: the input, even null; a retraction leaves null."""

    def agg(self, accumulator: Any, value: Any) -> Any:
        return value

    def retract(self, accumulator: Any, value: Any) -> Any:
        return None


class LastNonNullValue(FieldAggregator):
    """``FieldLastNonNullValueAgg``: the input unless null; retracting a non-null input
    leaves null, retracting a null keeps the accumulator."""

    def agg(self, accumulator: Any, value: Any) -> Any:
        return accumulator if value is None else value

    def retract(self, accumulator: Any, value: Any) -> Any:
        return None if value is not None else accumulator


class FirstValue(FieldAggregator):
    """``FieldFirstValueAgg``: the first input since ``reset``, even null."""

    def reset(self) -> None:
        self.initialized = False

    def agg(self, accumulator: Any, value: Any) -> Any:
        if not self.initialized:
            self.initialized = True
            return value
        return accumulator


class FirstNonNullValue(FieldAggregator):
    """``FieldFirstNonNullValueAgg``: the first non-null input since ``reset``."""

    def reset(self) -> None:
        self.initialized = False

    def agg(self, accumulator: Any, value: Any) -> Any:
        if not self.initialized and value is not None:
            self.initialized = True
            return value
        return accumulator


class Listagg(FieldAggregator):
    """``FieldListaggAgg``: blank inputs skipped; the input is appended after the
    delimiter; with ``distinct``, only the input's tokens not already present (split on
    the whole delimiter, blank tokens skipped)."""

    def __init__(self, name: str, field: str, type_: pa.DataType, delimiter: str, distinct: bool) -> None:
        super().__init__(name, field, type_)
        self.delimiter, self.distinct = delimiter, distinct

    def agg(self, accumulator: Any, value: Any) -> Any:
        if value is None or _blank(value):
            return accumulator
        if accumulator is None or _blank(accumulator):
            return value
        if not self.distinct:
            return accumulator + self.delimiter + value
        existing = set(_split(accumulator, self.delimiter))
        parts = [accumulator]
        for token in _split(value, self.delimiter):
            if _blank(token) or token in existing:
                continue
            existing.add(token)
            parts += [self.delimiter, token]
        return "".join(parts)


def _blank(text: str) -> bool:
    """Commons-lang ``StringUtils.isBlank``: empty or only whitespace."""
    return not text or text.isspace()


def _split(text: str, delimiter: str) -> list[str]:
    """``splitByWholeSeparatorPreserveAllTokens`` (an empty delimiter splits on whitespace)."""
    return text.split(delimiter) if delimiter else text.split()


class BoolAnd(FieldAggregator):
    """``FieldBoolAndAgg``: null-skipping AND."""

    def agg(self, accumulator: Any, value: Any) -> Any:
        if accumulator is None or value is None:
            return value if accumulator is None else accumulator
        return bool(accumulator and value)


class BoolOr(FieldAggregator):
    """``FieldBoolOrAgg``: null-skipping OR."""

    def agg(self, accumulator: Any, value: Any) -> Any:
        if accumulator is None or value is None:
            return value if accumulator is None else accumulator
        return bool(accumulator or value)


class PrimaryKey(FieldAggregator):
    """``FieldPrimaryKeyAgg``: the input, for both add and retract."""

    def agg(self, accumulator: Any, value: Any) -> Any:
        return value

    def retract(self, accumulator: Any, value: Any) -> Any:
        return value


class IgnoreRetract(FieldAggregator):
    """``FieldIgnoreRetractAgg`` (``fields.<f>.ignore-retract``): a retraction keeps the accumulator."""

    def __init__(self, inner: FieldAggregator) -> None:
        super().__init__(inner.name, inner.field, inner.type)
        self.inner = inner

    def reset(self) -> None:
        self.inner.reset()

    def agg(self, accumulator: Any, value: Any) -> Any:
        return self.inner.agg(accumulator, value)

    def agg_reversed(self, accumulator: Any, value: Any) -> Any:
        return self.inner.agg_reversed(accumulator, value)

    def retract(self, accumulator: Any, value: Any) -> Any:
        return accumulator


_CLASSES: dict[str, type[FieldAggregator]] = {
    "sum": Sum, "min": Min, "max": Max, "last_value": LastValue, "last_non_null_value": LastNonNullValue,
    "first_value": FirstValue, "first_non_null_value": FirstNonNullValue,
    "first_not_null_value": FirstNonNullValue, "bool_and": BoolAnd, "bool_or": BoolOr, "primary-key": PrimaryKey,
}


def make_aggregator(
    function: str, field: str, type_: pa.DataType, *, ignore_retract: bool = False,
    delimiter: str = ",", distinct: bool = False,
) -> FieldAggregator:
    """A fresh, reset aggregator (``FieldAggregatorFactory.create``). The function and
    its column type were checked when the options were parsed."""
    aggregator: FieldAggregator
    if function == "listagg":
        aggregator = Listagg(function, field, type_, delimiter, distinct)
    else:
        aggregator = _CLASSES[function](function, field, type_)
    if ignore_retract:
        aggregator = IgnoreRetract(aggregator)
    aggregator.reset()
    return aggregator


def type_refusal(function: str, field: str, type_: pa.DataType) -> str | None:
    """Why ``function`` cannot aggregate a column of ``type_`` (the Java factories'
    checks), or None."""
    if function == "sum" and not (pa.types.is_integer(type_) or pa.types.is_floating(type_) or pa.types.is_decimal(type_)):
        return f"Data type for sum column must be 'NumericType' but was '{type_}'"
    if function in ("min", "max") and _nested(type_):
        return f"Data type for {function} column '{field}' must be comparable but was '{type_}'"
    if function == "listagg" and not (pa.types.is_string(type_) or pa.types.is_large_string(type_)):
        return f"Data type for list agg column must be STRING (unbounded VARCHAR) but was '{type_}'"
    if function in ("bool_and", "bool_or") and not pa.types.is_boolean(type_):
        return f"Data type for {function.replace('_', ' ')} column must be 'BooleanType' but was '{type_}'"
    return None


def _nested(type_: pa.DataType) -> bool:
    return pa.types.is_nested(type_) or pa.types.is_map(type_)
