"""Which table partitions a batch read's Spark filters allow (tablelog.spark.pushdown):
pure logic over pyspark's filter objects."""

from __future__ import annotations

from pyspark.sql.datasource import EqualTo, GreaterThan, In

from tablelog.spark.pushdown import partition_specs


def test_equality_on_a_partition_column_becomes_a_partition_and_other_filters_stay_with_spark() -> None:
    other = GreaterThan(("id",), 3)
    specs, rest = partition_specs([EqualTo(("dt",), "2026-11-24"), other], ["dt"])
    assert specs == [{"dt": "2026-11-24"}] and rest == [other]


def test_in_lists_on_two_partition_columns_give_every_combination() -> None:
    specs, rest = partition_specs([In(("dt",), ("a", "b")), EqualTo(("hour",), 7)], ["dt", "hour"])
    assert specs == [{"dt": "a", "hour": 7}, {"dt": "b", "hour": 7}] and rest == []


def test_two_filters_on_one_column_allow_only_the_values_both_allow() -> None:
    specs, _ = partition_specs([In(("dt",), ("a", "b")), EqualTo(("dt",), "b")], ["dt"])
    assert specs == [{"dt": "b"}]


def test_filters_that_allow_no_partition_or_a_null_are_left_to_spark() -> None:
    contradiction = [EqualTo(("dt",), "a"), EqualTo(("dt",), "b")]
    assert partition_specs(contradiction, ["dt"]) == (None, contradiction)
    null = [EqualTo(("dt",), None)]
    assert partition_specs(null, ["dt"]) == (None, null)


def test_filters_on_other_columns_push_nothing() -> None:
    filters = [EqualTo(("id",), 1)]
    assert partition_specs(filters, ["dt"]) == (None, filters)
