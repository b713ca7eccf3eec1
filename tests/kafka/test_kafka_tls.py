"""The Kafka log over TLS against a real listener: a broker (Tansu) behind a TLS
terminator with a certificate from a CA the test made (:mod:`tablelog.testing.tls`), its
advertised address the terminator's, so every connection is TLS. With the CA a table
writes and reads its changes; with another CA, or a certificate for another host name,
creating the table fails naming the TLS failure, and a client asked for TLS never falls
back to plaintext (nor does a plaintext client get through)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import attrs
import pyarrow as pa
import pytest

import tablelog
from tablelog.testing.kafka_server import tansu_broker
from tablelog.testing.processes import free_port
from tablelog.testing.tls import CertificateAuthority, certificate_authority
from tablelog.testing.tls_proxy import tls_proxy

pytestmark = pytest.mark.kafka

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


@attrs.frozen
class TlsBroker:
    bootstrap: str  # the TLS address
    plaintext: str  # the broker's own, plaintext
    ca: CertificateAuthority
    other_ca: CertificateAuthority
    wrong_host: str  # a TLS address whose certificate names another host


@pytest.fixture(scope="module")
def tls_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsBroker]:
    work = tmp_path_factory.mktemp("kafka-tls")
    ca, other = certificate_authority(work / "ca"), certificate_authority(work / "other", "other-ca")
    served, wrong = ca.server(work, "broker"), ca.server(work, "elsewhere", ["broker.example"])
    port = free_port()
    with tansu_broker(work, advertised_port=port) as plaintext, \
            tls_proxy(served.certificate, served.key, int(plaintext.rsplit(":", 1)[1]), port=port), \
            tls_proxy(wrong.certificate, wrong.key, int(plaintext.rsplit(":", 1)[1])) as wrong_port:
        yield TlsBroker(f"127.0.0.1:{port}", plaintext, ca, other, f"127.0.0.1:{wrong_port}")


def _options(bootstrap: str, ca_file: Path | None, **extra: str) -> dict[str, str]:
    tls = {"kafka.security.protocol": "ssl", "kafka.ssl.ca.location": str(ca_file)} if ca_file else {}
    return {"log.system": "kafka", "kafka.bootstrap.servers": bootstrap,
            "kafka.socket.connection.setup.timeout.ms": "1500", **tls, **extra}


def test_a_table_writes_and_reads_its_changes_over_tls(tls_broker: TlsBroker, tmp_path: Path) -> None:
    table = tablelog.create_table(str(tmp_path), "db.t", SCHEMA, primary_key=["id"], bucket=2,
                                  options=_options(tls_broker.bootstrap, tls_broker.ca.ca_file))
    with table.writer("w") as writer:
        writer.write([{"id": i, "v": f"v{i}"} for i in range(20)])
        writer.commit()
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        changes = reader.read_all()
    assert sorted(c.row["id"] for c in changes) == list(range(20))


def _create(tmp_path: Path, options: dict[str, str]) -> subprocess.CompletedProcess[str]:
    args = ["create", "-w", str(tmp_path / "wh"), "db.t", "--schema", "id bigint", "-k", "id",
            *(arg for key, value in options.items() for arg in ("-o", f"{key}={value}"))]
    return subprocess.run([sys.executable, "-c", "from tablelog.cli import main; main()", *args],
                          capture_output=True, text=True, timeout=120)


def test_a_broker_certificate_from_another_ca_fails_naming_the_untrusted_issuer(
    tls_broker: TlsBroker, tmp_path: Path,
) -> None:
    began = time.monotonic()
    result = _create(tmp_path, _options(tls_broker.bootstrap, tls_broker.other_ca.ca_file))
    assert result.returncode == 3, result.stderr
    assert time.monotonic() - began < 30
    message = result.stderr.strip()
    assert message.startswith(f"error: the TLS handshake with the Kafka brokers at {tls_broker.bootstrap} failed "
                              "(kafka.security.protocol=ssl): "), message
    assert f"the broker's certificate is not signed by a CA in {tls_broker.other_ca.ca_file} (kafka.ssl.ca.location)" \
        in message, message
    assert not (tmp_path / "wh" / "db.db" / "t").exists()  # nothing was created


def test_a_broker_certificate_for_another_host_fails_naming_the_host_mismatch(
    tls_broker: TlsBroker, tmp_path: Path,
) -> None:
    result = _create(tmp_path, _options(tls_broker.wrong_host, tls_broker.ca.ca_file))
    assert result.returncode == 3, result.stderr
    message = result.stderr.strip()
    assert f"the TLS handshake with the Kafka brokers at {tls_broker.wrong_host} failed" in message, message
    assert "IP address mismatch, certificate is not valid for '127.0.0.1': the broker's certificate names another " \
        "host than '127.0.0.1'" in message, message
    assert not (tmp_path / "wh" / "db.db" / "t").exists()


def test_nothing_falls_back_to_plaintext(tls_broker: TlsBroker, tmp_path: Path) -> None:
    """A TLS client given the plaintext listener, and a plaintext client given the TLS one,
    both fail: neither gets an answer in the other's protocol."""
    for bootstrap, ca_file in ((tls_broker.plaintext, tls_broker.ca.ca_file), (tls_broker.bootstrap, None)):
        result = _create(tmp_path / bootstrap.replace(":", "-"), _options(bootstrap, ca_file))
        assert result.returncode == 3, result.stderr
        assert f"cannot reach the Kafka brokers at {bootstrap}" in result.stderr, result.stderr
        assert "kafka.security.protocol matches their listener" in result.stderr
