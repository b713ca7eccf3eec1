"""The Spark exactly-once scenarios of tablelog.testing give every Spark read the log
system's own options: a plugin whose options carry a secret (never stored with the
table) must get it on the reading side too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tablelog.testing import SparkExactlyOnceScenarios
from tablelog.testing.spark_scenarios import runtime_options


class RecordingReader:
    """Stands in for ``spark.readStream``: records the options a read is given."""

    def __init__(self) -> None:
        self.options: dict[str, str] = {}

    def format(self, name: str) -> RecordingReader:
        self.options["<format>"] = name
        return self

    def option(self, key: str, value: str) -> RecordingReader:
        self.options[key] = value
        return self

    def load(self) -> dict[str, str]:
        return self.options


LOG_OPTIONS = {"log.system": "vault", "vault.url": "vault://db", "vault.api-secret": "s3cr3t"}


def test_the_scenarios_spark_reads_carry_the_log_systems_options_secrets_included(tmp_path: Path) -> None:
    spark: Any = type("Spark", (), {"readStream": RecordingReader()})()
    options = SparkExactlyOnceScenarios()._read_stream(
        spark, tmp_path, "db.t", LOG_OPTIONS, **{"scan.mode": "earliest"})
    assert options["vault.api-secret"] == "s3cr3t" and options["vault.url"] == "vault://db"
    assert options["scan.mode"] == "earliest" and options["table"] == "db.t"


def test_the_options_a_reader_gives_again_are_the_log_systems_not_the_tables() -> None:
    assert runtime_options(LOG_OPTIONS) == {"vault.url": "vault://db", "vault.api-secret": "s3cr3t"}
