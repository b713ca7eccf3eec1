"""tablelog.testing.spark_test_session never hands back a session with another master."""

from __future__ import annotations

from typing import Any

import pytest

from tablelog.testing import spark_test_session


def test_a_session_with_another_master_running_is_refused_naming_both(spark: Any) -> None:
    assert spark.sparkContext.master == "local[2,2]"
    with pytest.raises(pytest.fail.Exception, match=r"'local\[1\]'.*'local\[2,2\]'"):
        spark_test_session("local[1]")


def test_the_running_session_is_returned_for_the_same_master(spark: Any) -> None:
    assert spark_test_session("local[2,2]") is spark
