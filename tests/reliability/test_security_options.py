"""Security options reach the clients: Kafka SASL/TLS keys go unchanged into the
confluent-kafka producer, consumer and admin configs (and librdkafka accepts
them); Pulsar authentication and TLS options become the pulsar.Client's
authentication and keyword arguments."""

from __future__ import annotations

from pathlib import Path

import pulsar
import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from tablelog.errors import OptionError
from tablelog.logs.discovery import load_log_system
from tablelog.records import LogConfig
from tablelog_kafka.config import parse_settings
from tablelog_pulsar.config import parse_config

SECRET = "SENTINEL-pw-4c1d"

KAFKA_SECURITY = {
    "security.protocol": "SASL_SSL",
    "sasl.mechanism": "SCRAM-SHA-512",
    "sasl.username": "ada",
    "sasl.password": SECRET,
    "ssl.endpoint.identification.algorithm": "https",
    "client.id": "tablelog-test",
}


def _kafka_config(options: dict[str, str]) -> LogConfig:
    return LogConfig("kafka", "db.t", "secure-topic", 2, True,
                     {"bootstrap.servers": "127.0.0.1:9", **options})


@pytest.fixture
def tls_files(tmp_path: Path) -> dict[str, str]:
    """A self-signed certificate and its key, made with openssl (files only: no broker uses them)."""
    import subprocess

    key, cert = tmp_path / "client.key", tmp_path / "client.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
                    "-out", str(cert), "-days", "1", "-subj", "/CN=tablelog-test"],
                   check=True, capture_output=True)
    return {"ssl.ca.location": str(cert), "ssl.certificate.location": str(cert),
            "ssl.key.location": str(key)}


def test_kafka_sasl_and_tls_options_pass_unchanged_to_producer_consumer_and_admin_configs(
    tls_files: dict[str, str],
) -> None:
    settings = parse_settings(_kafka_config({**KAFKA_SECURITY, **tls_files}))
    expected = {**KAFKA_SECURITY, **tls_files, "bootstrap.servers": "127.0.0.1:9"}
    for config in (settings.producer_config(), settings.consumer_config("g"), settings.admin_config()):
        assert {k: config[k] for k in expected} == expected
    # the guarantees tablelog depends on cannot be switched off by a user key
    producer = parse_settings(_kafka_config({"acks": "1", "enable.idempotence": "false"})).producer_config()
    assert producer["acks"] == "all" and producer["enable.idempotence"] is True
    # librdkafka itself accepts every one of them (it refuses unknown or malformed keys)
    Producer(settings.producer_config()).flush(0)
    Consumer(settings.consumer_config("g")).close()
    AdminClient(settings.admin_config())
    # and the secret is shown nowhere
    assert SECRET not in repr(settings) and SECRET not in str(settings.shown_options())


def test_kafka_table_options_reach_the_plugin_connection(tls_files: dict[str, str]) -> None:
    options = {**KAFKA_SECURITY, **tls_files}
    with load_log_system("kafka").open(_kafka_config(options)) as log:
        client = log.connection.settings.client
        assert {k: client[k] for k in options} == options
        assert SECRET not in repr(log.connection)


def test_kafka_invalid_security_value_is_refused_without_echoing_the_secret() -> None:
    settings = parse_settings(_kafka_config({**KAFKA_SECURITY, "security.protocol": "carrier-pigeon"}))
    with load_log_system("kafka").open(_kafka_config({**KAFKA_SECURITY, "security.protocol": "carrier-pigeon"})) \
            as log, pytest.raises(OptionError) as raised:
        log.ensure_topic()
    assert "security.protocol" in str(raised.value) and SECRET not in str(raised.value)
    assert settings.client["security.protocol"] == "carrier-pigeon"


def _pulsar_config(options: dict[str, str]) -> LogConfig:
    return LogConfig("pulsar", "db.t", "secure-topic", 2, True,
                     {"service-url": "pulsar+ssl://127.0.0.1:6651", **options})


def test_pulsar_token_reaches_the_client_as_token_authentication(tls_files: dict[str, str]) -> None:
    config = parse_config(_pulsar_config({
        "token": SECRET,
        "tls-trust-certs-file-path": tls_files["ssl.ca.location"],
        "tls-allow-insecure-connection": "false",
        "tls-validate-hostname": "true",
        "operation-timeout-seconds": "7",
    }))
    assert config.service_url == "pulsar+ssl://127.0.0.1:6651"
    assert config.client_kwargs == {
        "tls_trust_certs_file_path": tls_files["ssl.ca.location"],
        "tls_allow_insecure_connection": False,
        "tls_validate_hostname": True,
        "operation_timeout_seconds": 7,
        "connection_timeout_ms": 10000,
        "io_threads": 1,
    }
    auth = config.authentication()
    assert isinstance(auth, pulsar.AuthenticationToken)
    assert config.token == SECRET and SECRET not in repr(config)
    # pulsar.Client takes exactly these (it connects lazily: no broker needed)
    client = pulsar.Client(config.service_url, authentication=auth, **config.client_kwargs)
    client.close()


def test_pulsar_auth_plugin_and_params_reach_the_client_and_mutual_tls_files_too(
    tls_files: dict[str, str],
) -> None:
    params = '{"username": "ada", "password": "' + SECRET + '"}'
    config = parse_config(_pulsar_config({
        "auth-plugin": "basic", "auth-params": params,
        "tls-certificate-file-path": tls_files["ssl.certificate.location"],
        "tls-private-key-file-path": tls_files["ssl.key.location"],
    }))
    assert (config.auth_plugin, config.auth_params) == ("basic", params)
    assert config.client_kwargs["tls_certificate_file_path"] == tls_files["ssl.certificate.location"]
    assert config.client_kwargs["tls_private_key_file_path"] == tls_files["ssl.key.location"]
    assert isinstance(config.authentication(), pulsar.Authentication)
    assert SECRET not in repr(config)
    with load_log_system("pulsar").open(_pulsar_config({"auth-plugin": "basic", "auth-params": params})) as log:
        assert log.connection.config.auth_params == params
        assert SECRET not in repr(log.connection)


def test_pulsar_conflicting_or_incomplete_authentication_is_an_option_error() -> None:
    with pytest.raises(OptionError, match="exclude each other"):
        parse_config(_pulsar_config({"token": SECRET, "auth-plugin": "basic"}))
    with pytest.raises(OptionError, match="needs 'pulsar.auth-plugin'") as raised:
        parse_config(_pulsar_config({"auth-params": SECRET}))
    assert SECRET not in str(raised.value)
