"""The certificate authorities an ``https://`` S3 endpoint is verified with: a private CA,
as object stores inside a company use, given once in the process's environment as
``AWS_CA_BUNDLE`` (the AWS tools' variable), reaches all three S3 clients of a warehouse.

- boto3 (the conditional snapshot commits, listings) takes a CA file per client.
- pyarrow's S3 file system (pypaimon's file IO: every table file) and pypaimon-rust's writer
  take no CA per client: they trust ``SSL_CERT_FILE``, which pyarrow reads once, when its S3
  module is loaded. So when tablelog is imported (before pyarrow's S3 is, in the usual
  order) :func:`adopt_aws_ca_bundle` writes a bundle of the machine's CAs and those of
  ``AWS_CA_BUNDLE`` and points ``SSL_CERT_FILE`` at it: other TLS in the process still
  trusts what it trusted, plus the private CA. tablelog's boto3 clients verify with the
  same bundle (:func:`bundle`).

This is process-wide, hence an environment variable and not a table option: one process
trusts one set of CAs. This module imports nothing that loads pyarrow (it runs first); an
endpoint that is not trusted is refused at the first connection
(:func:`tablelog.store.s3_trust.check_trusted`).
"""

from __future__ import annotations

import hashlib
import os
import ssl
import sys
import tempfile
import threading
from pathlib import Path

ENVIRONMENT = "AWS_CA_BUNDLE"
#: What :func:`adopt_aws_ca_bundle` did: the bundle written (None: nothing to adopt), and
#: whether pyarrow's S3 was loaded already (then ``SSL_CERT_FILE`` came too late for it).
_adopted: tuple[str | None, bool] = (None, False)
#: Why ``AWS_CA_BUNDLE`` could not be adopted (raised when an S3 warehouse opens), or None.
_problem: str | None = None


class _NotABundle(ValueError):
    pass


def adopt_aws_ca_bundle() -> None:
    """At tablelog's import: with ``AWS_CA_BUNDLE`` set, make ``SSL_CERT_FILE`` a bundle of
    the machine's CAs and its own. Imports nothing that loads pyarrow."""
    global _adopted, _problem
    given = os.environ.get(ENVIRONMENT)
    if not given:
        return
    try:
        combined = _combined(given)
    except _NotABundle as err:
        _problem = str(err)  # a local warehouse needs no CA: the S3 one is refused when it opens
        return
    late = "pyarrow._s3fs" in sys.modules and os.environ.get("SSL_CERT_FILE") != combined
    os.environ["SSL_CERT_FILE"] = combined
    _adopted = (combined, late)


def bundle() -> str | None:
    """The CA bundle tablelog's boto3 clients verify with (None: boto3's own)."""
    return _adopted[0]


def adopted() -> tuple[str | None, bool, str | None]:
    """The bundle adopted (None: none), whether it came after pyarrow's S3 was loaded, and
    why ``AWS_CA_BUNDLE`` was not adopted (None: no problem)."""
    return _adopted[0], _adopted[1], _problem


def _combined(given: str) -> str:
    """The path of a bundle of the machine's CAs and those of the PEM file ``given``,
    written once per content under the temporary directory."""
    try:
        ca = Path(given).expanduser().read_bytes()
        ssl.create_default_context(cadata=ca.decode("ascii", errors="replace"))
    except (OSError, ssl.SSLError, ValueError) as err:
        raise _NotABundle(
            f"the environment variable {ENVIRONMENT}={given!r} is not a readable PEM file of certificate "
            f"authorities ({err}); expected the PEM file of the CA that signs the S3 endpoint's certificate"
        ) from None
    content = _machine_bundle() + b"\n" + ca
    directory = Path(tempfile.gettempdir()) / f"tablelog-ca-{os.getuid() if hasattr(os, 'getuid') else 'user'}"
    target = directory / f"ca-bundle-{hashlib.sha256(content).hexdigest()[:16]}.pem"
    if not target.exists():
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        temporary = directory / f".{target.name}.{os.getpid()}.{threading.get_ident()}"
        temporary.write_bytes(content)
        os.replace(temporary, target)  # whole, under its name: another process never reads half
    return str(target)


def _machine_bundle() -> bytes:
    """The CAs the process trusts without a bundle of tablelog's: ``SSL_CERT_FILE`` (unless
    it is one of tablelog's, inherited from a parent), else OpenSSL's default file, else
    certifi's (what boto3 trusts)."""
    paths = ssl.get_default_verify_paths()
    inherited = os.environ.get("SSL_CERT_FILE")
    if inherited and Path(inherited).name.startswith("ca-bundle-") and "tablelog-ca-" in inherited:
        inherited = None
    candidates = [inherited, paths.cafile, paths.openssl_cafile]
    try:
        import certifi

        candidates.append(certifi.where())
    except ImportError:
        pass
    for candidate in candidates:
        if candidate and os.path.isfile(candidate):
            return Path(candidate).read_bytes()
    return b""
