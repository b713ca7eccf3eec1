"""Table options: defaults, validation, did-you-mean, secrets."""

import pytest

from tablelog.errors import OptionError
from tablelog.options import Consistency, ScanMode, TableOptions, is_secret, option_docs, redact


def test_defaults_match_the_design_table() -> None:
    options, _, _ = TableOptions.parse({})
    assert options.log_system == "none"
    assert options.log_consistency is Consistency.TRANSACTIONAL
    assert options.scan_mode is ScanMode.LATEST_FULL
    assert options.log_system_auto_register is True
    assert options.log_system_partitions is None


def test_unknown_key_suggests_the_closest_option() -> None:
    with pytest.raises(OptionError, match=r"unknown option 'log.consistancy'; did you mean 'log.consistency'\?"):
        TableOptions.parse({"log.consistancy": "eventual"})


def test_invalid_enum_value_names_key_value_and_allowed_values() -> None:
    with pytest.raises(OptionError) as err:
        TableOptions.parse({"log.consistency": "sometimes"})
    message = str(err.value)
    assert "'sometimes'" in message and "'log.consistency'" in message
    assert "'transactional'" in message and "'eventual'" in message


def test_keys_with_a_log_system_prefix_go_to_that_system() -> None:
    _, system, paimon = TableOptions.parse({"kafka.bootstrap.servers": "h:1", "file.format": "parquet"},
                                           log_systems={"kafka"}, passthrough={"file.format"})
    assert system == {"kafka.bootstrap.servers": "h:1"}
    assert paimon == {"file.format": "parquet"}


def test_keys_are_case_insensitive_as_spark_lowercases_them() -> None:
    options, _, _ = TableOptions.parse({"Log.Consistency": "EVENTUAL"})
    assert options.log_consistency is Consistency.EVENTUAL


def test_integer_options_reject_non_numbers_and_too_small_values() -> None:
    with pytest.raises(OptionError, match="log.system.partitions"):
        TableOptions.parse({"log.system.partitions": "many"})
    with pytest.raises(OptionError, match="bucket"):
        TableOptions.parse({"bucket": "0"})


@pytest.mark.parametrize("key", ["kafka.sasl.password", "kafka.sasl.jaas.config", "pulsar.auth-params",
                                 "pulsar.token", "kafka.ssl.key.password", "x.client.secret"])
def test_secret_keys_are_recognized(key: str) -> None:
    assert is_secret(key)
    assert redact({key: "SENTINEL"}) == {key: "******"}


def test_plain_keys_are_not_secrets() -> None:
    assert not is_secret("kafka.bootstrap.servers")
    assert not is_secret("log.consistency")


def test_invalid_secret_value_is_not_echoed() -> None:
    with pytest.raises(OptionError) as err:
        TableOptions.parse({"bucket": "x"})
    assert "x" in str(err.value)  # plain values are shown...


def test_every_option_has_a_doc_line_for_the_generated_table() -> None:
    docs = option_docs()
    assert {d.key for d in docs} >= {"log.system", "log.consistency", "log.changelog-mode", "log.format",
                                     "log.key.format", "log.system.partitions", "log.system.auto-register",
                                     "scan.mode", "scan.timestamp-millis"}
    assert all(d.doc for d in docs)
