"""An S3 warehouse over real TLS (SeaweedFS's HTTPS port, its certificate signed by a CA the
test made): with the CA in ``AWS_CA_BUNDLE`` all three of its clients (boto3's commits,
pyarrow's file reads, pypaimon-rust's writes) work; without it, or with the wrong CA, the
first connection is refused saying what to set, and nothing is written.

The CAs are a process's (pyarrow's S3 client reads them once, when it is loaded), and this
test process has used S3 already: each scenario runs in a child process
(``drivers/s3_tls_client.py``) with its own environment."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import attrs
import pytest

import tablelog
from tablelog.testing.processes import run_python
from tablelog.testing.s3_server import S3Endpoint
from tablelog.testing.tls import certificate_authority
from tablelog.testing.tls_proxy import tls_proxy

pytestmark = pytest.mark.cluster

DRIVER = Path(__file__).parent / "drivers" / "s3_tls_client.py"
ROWS = 500
COMMITS = 3


def _run(config: dict[str, Any], ca_bundle: str | None) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k not in ("AWS_CA_BUNDLE", "SSL_CERT_FILE")}
    if ca_bundle is not None:
        env["AWS_CA_BUNDLE"] = ca_bundle
    done = run_python(DRIVER, config, timeout_s=300, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _objects(server: S3Endpoint, prefix: str) -> list[str]:
    return [key for key, _ in server.objects(prefix)]


@pytest.fixture
def tls(s3_server: S3Endpoint) -> S3Endpoint:
    return s3_server.over_https()


def _options(server: S3Endpoint, tmp_path: Path) -> dict[str, str]:
    return {**server.tablelog_options(), "log.system": "filesystem", "filesystem.path": str(tmp_path / "log")}


def test_tables_are_written_committed_and_read_over_https_with_the_private_ca_in_aws_ca_bundle(
    tls: S3Endpoint, s3_server: S3Endpoint, tmp_path: Path,
) -> None:
    folder = f"tls-{uuid.uuid4().hex[:8]}"

    written = _run({"action": "write", "warehouse": tls.url(folder), "options": _options(tls, tmp_path),
                    "rows": ROWS, "commits": COMMITS}, tls.ca_file)
    read = _run({"action": "read", "warehouse": tls.url(folder), "options": _options(tls, tmp_path)}, tls.ca_file)

    assert written == read == {"rows": {"db.plain": ROWS, "db.partial": ROWS}}
    snapshots = [k for k in _objects(tls, folder) if "/snapshot/snapshot-" in k]
    assert len(snapshots) >= 2 * COMMITS  # each commit a conditional put over TLS
    # read back over plain HTTP, in this process: the files written over TLS are the table's
    partial = tablelog.open_table(s3_server.url(folder), "db.partial", options=_options(s3_server, tmp_path))
    assert {r["id"]: (r["a"], r["b"]) for r in partial.rows().to_pylist()} == {
        i: ("a2", "b1") for i in range(ROWS)}  # the columns of its two streams merged


def test_an_endpoint_whose_ca_is_not_given_is_refused_saying_to_set_aws_ca_bundle_and_nothing_is_written(
    tls: S3Endpoint, tmp_path: Path,
) -> None:
    folder = f"tls-untrusted-{uuid.uuid4().hex[:8]}"

    result = _run({"action": "write", "warehouse": tls.url(folder), "options": _options(tls, tmp_path),
                   "rows": 10, "commits": 1}, None)

    assert result["error"] == "OptionError"
    assert f"the S3 endpoint {tls.https_endpoint} presented a certificate that is not trusted" in result["message"]
    assert "set AWS_CA_BUNDLE to the PEM file of the certificate authority" in result["message"]
    assert _objects(tls, folder) == []


@pytest.mark.matrix
def test_a_ca_that_does_not_sign_the_endpoint_s_certificate_is_refused_naming_the_bundle(
    tls: S3Endpoint, tmp_path: Path,
) -> None:
    folder = f"tls-other-ca-{uuid.uuid4().hex[:8]}"
    other = str(certificate_authority(tmp_path, "another-ca").ca_file)

    result = _run({"action": "write", "warehouse": tls.url(folder), "options": _options(tls, tmp_path),
                   "rows": 10, "commits": 1}, other)

    assert result["error"] == "OptionError"
    assert f"AWS_CA_BUNDLE={other!r} does not hold the CA that signed it" in result["message"]
    assert _objects(tls, folder) == []


@pytest.mark.matrix
def test_pyarrow_loaded_before_tablelog_is_refused_saying_what_to_change(tls: S3Endpoint, tmp_path: Path) -> None:
    folder = f"tls-late-{uuid.uuid4().hex[:8]}"

    result = _run({"action": "write", "warehouse": tls.url(folder), "options": _options(tls, tmp_path),
                   "rows": 10, "commits": 1, "pyarrow_first": True}, tls.ca_file)

    assert result["error"] == "OptionError"
    assert "pyarrow's S3 client was loaded before tablelog" in result["message"]
    assert "SSL_CERT_FILE=" in result["message"]
    assert _objects(tls, folder) == []


@pytest.mark.matrix
@pytest.mark.parametrize("content", [None, b"not a certificate\n"], ids=["missing", "not-pem"])
def test_an_aws_ca_bundle_that_is_not_a_pem_file_is_refused_at_the_s3_warehouse_naming_its_value(
    tls: S3Endpoint, tmp_path: Path, content: bytes | None,
) -> None:
    bundle = tmp_path / "bundle.pem"
    if content is not None:
        bundle.write_bytes(content)
    folder = f"tls-bad-bundle-{uuid.uuid4().hex[:8]}"

    result = _run({"action": "write", "warehouse": tls.url(folder), "options": _options(tls, tmp_path),
                   "rows": 10, "commits": 1}, str(bundle))
    local = _run({"action": "write", "warehouse": str(tmp_path / "wh"),
                  "options": {"log.system": "filesystem", "filesystem.path": str(tmp_path / "log")},
                  "rows": 10, "commits": 1}, str(bundle))

    assert result["error"] == "OptionError"
    assert f"the environment variable AWS_CA_BUNDLE={str(bundle)!r} is not a readable PEM file" in result["message"]
    assert _objects(tls, folder) == []
    assert local == {"rows": {"db.plain": 10, "db.partial": 10}}  # a local warehouse needs no CA


def test_a_certificate_for_another_host_is_refused_even_signed_by_the_ca_given(
    s3_server: S3Endpoint, tmp_path: Path,
) -> None:
    authority = certificate_authority(tmp_path, "proxy-ca")
    elsewhere = authority.server(tmp_path, "elsewhere", names=("s3.elsewhere.example",))
    folder = f"tls-wrong-host-{uuid.uuid4().hex[:8]}"
    with tls_proxy(elsewhere.certificate, elsewhere.key, int(s3_server.endpoint.rsplit(":", 1)[1])) as port:
        proxied = attrs.evolve(s3_server, endpoint=f"https://127.0.0.1:{port}")
        result = _run({"action": "write", "warehouse": proxied.url(folder), "options": _options(proxied, tmp_path),
                       "rows": 10, "commits": 1}, str(authority.ca_file))

    assert result["error"] == "OptionError"
    assert "presented a certificate that is not trusted" in result["message"]
    assert "doesn't match 's3.elsewhere.example'" in result["message"]
    assert "the certificate does not name the host of the endpoint" in result["message"]
    assert _objects(s3_server, folder) == []
