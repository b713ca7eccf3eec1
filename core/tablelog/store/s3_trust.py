"""An ``https://`` S3 endpoint's certificate checked at the first connection of the process
(:func:`check_trusted`): an endpoint that boto3 or pyarrow does not trust is refused with
what to set (:mod:`tablelog.ca_bundle`), not later as a ``curlCode: 60`` from a file read."""

from __future__ import annotations

import os
import threading
from typing import Any

from tablelog.ca_bundle import ENVIRONMENT, adopted
from tablelog.errors import OptionError

_lock = threading.Lock()
_checked: set[str] = set()


def check_trusted(client: Any, settings: dict[str, str], bucket: str, warehouse: str) -> None:
    """Once per ``https://`` endpoint in the process: one request by boto3 and one by
    pyarrow's S3 client to the ``bucket``; an untrusted certificate is refused with what
    to set. Any other answer (the bucket missing, access denied, no connection) is left to
    the warehouse's own requests."""
    endpoint = settings.get("s3.endpoint", "")
    if not endpoint.lower().startswith("https://"):
        return
    problem = adopted()[2]
    if problem:
        raise OptionError(f"warehouse {warehouse!r}: {problem}")
    with _lock:
        if endpoint in _checked:
            return
    refused = _boto3_refusal(client, bucket) or _pyarrow_refusal(settings, bucket)
    if refused:
        raise OptionError(f"warehouse {warehouse!r}: the S3 endpoint {endpoint} presented a certificate "
                          f"that is not trusted ({refused}): {_advice(refused)}")
    with _lock:
        _checked.add(endpoint)


def _advice(refused: str) -> str:
    if "doesn't match" in refused or "mismatch" in refused.lower():
        return ("the certificate does not name the host of the endpoint: connect by a name it holds, or give "
                "the store a certificate for this one; the CA that signed it is trusted")
    combined, late, _ = adopted()
    if combined is None:
        return (f"set {ENVIRONMENT} to the PEM file of the certificate authority that signed it, in the "
                "environment of every process that opens the warehouse (a Spark executor's too), before "
                "the process starts")
    if late:
        return (f"{ENVIRONMENT} is set, but pyarrow's S3 client was loaded before tablelog and reads the CAs "
                f"it trusts only then: import tablelog before pyarrow.fs (or pyarrow.dataset), or start the "
                f"process with SSL_CERT_FILE={combined}")
    return f"{ENVIRONMENT}={os.environ.get(ENVIRONMENT)!r} does not hold the CA that signed it"


def _boto3_refusal(client: Any, bucket: str) -> str | None:
    from botocore.exceptions import BotoCoreError, ClientError, SSLError

    try:
        client.head_bucket(Bucket=bucket)
    except SSLError as err:
        text = str(err)
        return text[text.find("[SSL"):] if "[SSL" in text else text
    except (ClientError, BotoCoreError):
        pass
    return None


def _pyarrow_refusal(settings: dict[str, str], bucket: str) -> str | None:
    from pyarrow import fs

    endpoint = settings["s3.endpoint"]
    files = fs.S3FileSystem(
        access_key=settings.get("s3.access-key") or None, secret_key=settings.get("s3.secret-key") or None,
        region=settings.get("s3.region") or None, endpoint_override=endpoint, scheme="https",
        connect_timeout=10, request_timeout=20)
    try:
        files.get_file_info(bucket)
    except OSError as err:
        if "curlCode: 60" in str(err) or "certificate" in str(err).lower():
            return "pyarrow: " + str(err).rsplit(": ", 1)[-1]
    return None
