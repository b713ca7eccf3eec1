"""Certificates for TLS tests: a private certificate authority made by the test, and
server certificates it signs, written as PEM files (with the ``cryptography`` package).

:func:`certificate_authority` makes a CA; :meth:`CertificateAuthority.server` a server's
certificate and key for the names it answers to (``localhost`` and ``127.0.0.1`` unless
told otherwise: a certificate for other names is how a test makes a host-name mismatch).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

#: What a test server's certificate names by default: the loopback names tests connect to.
LOOPBACK_NAMES = ("localhost", "127.0.0.1")


@attrs.frozen
class ServerCertificate:
    """A server's certificate (its chain file) and its private key, PEM files."""

    certificate: Path
    key: Path


@attrs.frozen
class CertificateAuthority:
    """A private CA: its certificate (``ca_file``, what clients trust) and key."""

    ca_file: Path
    _key: Any = attrs.field(repr=False)
    _certificate: Any = attrs.field(repr=False)

    def server(self, directory: Path, name: str, names: Sequence[str] = LOOPBACK_NAMES) -> ServerCertificate:
        """A certificate for ``names`` (host names or IP addresses) signed by this CA, and
        its key, written to ``directory`` as ``<name>.pem`` and ``<name>-key.pem``."""
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

        key = ec.generate_private_key(ec.SECP256R1())
        alternative = [x509.IPAddress(ipaddress.ip_address(n)) if _is_ip(n) else x509.DNSName(n) for n in names]
        now = dt.datetime.now(dt.timezone.utc)
        certificate = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
            .issuer_name(self._certificate.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName(alternative), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(self._key, hashes.SHA256())
        )
        files = ServerCertificate(directory / f"{name}.pem", directory / f"{name}-key.pem")
        files.certificate.write_bytes(_pem(certificate) + _pem(self._certificate))
        files.key.write_bytes(_private_pem(key))
        return files


def certificate_authority(directory: Path, name: str = "test-ca") -> CertificateAuthority:
    """A new CA, its certificate written to ``directory/<name>.pem``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    directory.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"tablelog {name}")])
    now = dt.datetime.now(dt.timezone.utc)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                     crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
        .sign(key, hashes.SHA256())
    )
    ca_file = directory / f"{name}.pem"
    ca_file.write_bytes(_pem(certificate))
    return CertificateAuthority(ca_file, key, certificate)


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _pem(certificate: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return certificate.public_bytes(serialization.Encoding.PEM)


def _private_pem(key: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())
