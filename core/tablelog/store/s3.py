"""Object-storage warehouses (``s3://bucket/path``): the connection settings, the boto3
client, and the conditional creation of snapshot files that makes commits safe without
a shared disk.

A renaming commit (pypaimon's: "does snapshot-N exist? write a temporary file, move it")
is not atomic on S3: two committers can both create ``snapshot-N`` and one commit is lost
without an error. Instead the snapshot file is created with a conditional put
(``If-None-Match: *``): of two committers of snapshot N exactly one succeeds; the other is
told so, re-reads the table and tries N+1 (:mod:`tablelog.commit.committer`). A store that
ignores ``If-None-Match`` would make every put succeed, so it is detected once per bucket
and refused (:func:`check_conditional_put`), before the first conditional put: readers
put nothing, and need no right to write.
"""

from __future__ import annotations

import contextlib
import os
import threading
import uuid
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlparse

import attrs

from tablelog.ca_bundle import bundle as ca_bundle
from tablelog.errors import CommitError, OptionError
from tablelog.option_values import InvalidValue, parse_duration_ms

#: The connection options of an ``s3://`` warehouse, in the spelling both pypaimon's
#: pure-Python file IO and pypaimon-rust (the native writer) read. Runtime options: given
#: when a table is created or opened, never stored in the table.
S3_OPTION_DOCS: dict[str, str] = {
    "s3.endpoint": "S3 endpoint URL of an `s3://` warehouse, with its scheme (`http://10.0.0.5:8333`); default "
    "`AWS_ENDPOINT_URL_S3` / `AWS_ENDPOINT_URL`, else AWS. Never stored in the table.",
    "s3.access-key": "S3 access key id; default `AWS_ACCESS_KEY_ID`. A secret: never stored or shown.",
    "s3.secret-key": "S3 secret access key; default `AWS_SECRET_ACCESS_KEY`. A secret: never stored or shown.",
    "s3.region": "S3 region; default `AWS_REGION` / `AWS_DEFAULT_REGION`, else `us-east-1` "
    "(the native writer needs one).",
    "s3.path-style-access": "`true`: address the bucket in the path (needed for an IP endpoint and "
    "the native writer); default `true` with an `s3.endpoint`, else `false`.",
    "s3.connect-timeout": "The longest opening a connection to the S3 endpoint may take before that attempt "
    "fails (a duration: `500 ms`, `5 s`); default `5 s`. Also pypaimon's reads and writes of the table files.",
    "s3.request-timeout": "The longest an S3 request waits for the next bytes of its answer before that attempt "
    "fails; default `30 s`. Also pypaimon's reads and writes of the table files.",
    "s3.max-attempts": "Attempts of one S3 request, the first included, before its error is raised; default `3`. "
    "A request cut off from the store fails within about `s3.max-attempts` x (`s3.connect-timeout` + "
    "`s3.request-timeout`).",
    "s3.write-timeout": "The longest a write attempt waits for its data files to be written to the store "
    "(at `finish()`, or when its writing falls that far behind); default `5 min`. pypaimon-rust's writer "
    "(thin tables' files) has no request timeout of its own: an attempt cut off from the store fails after "
    "this with a `StoreUnavailableError`, and is made again.",
}
S3_OPTION_KEYS = tuple(S3_OPTION_DOCS)
#: The timeouts' defaults, in the options' spelling.
TIMEOUT_DEFAULTS = {"s3.connect-timeout": "5 s", "s3.request-timeout": "30 s", "s3.max-attempts": "3",
                    "s3.write-timeout": "5 min"}

# The standard AWS variables, for the options not given (first one set wins).
_ENVIRONMENT = {
    "s3.endpoint": ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"),
    "s3.access-key": ("AWS_ACCESS_KEY_ID",),
    "s3.secret-key": ("AWS_SECRET_ACCESS_KEY",),
    "s3.region": ("AWS_REGION", "AWS_DEFAULT_REGION"),
}

INSTALL_HINT = 'pip install "tablelog[s3]"'

#: What an S3 endpoint may be, for error messages.
ENDPOINT_FORMS = "a URL with its scheme, http://host:port or https://host:port (e.g. http://127.0.0.1:8333)"


def endpoint_problem(endpoint: str) -> str | None:
    """Why ``endpoint`` cannot be an S3 endpoint, or None. Checked where the options are
    read: boto3 would refuse ``127.0.0.1:8333`` only when the first client is made, with
    a bare ``ValueError``."""
    url = urlparse(endpoint)
    try:
        url.port  # noqa: B018 -- raises for a port that is not a number
    except ValueError:
        return f"its port is not a number; expected {ENDPOINT_FORMS}"
    if url.scheme.lower() not in ("http", "https") or not url.hostname:
        return f"expected {ENDPOINT_FORMS}"
    return None


def s3_settings(given: Mapping[str, str], environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The connection settings of an ``s3://`` warehouse: the ``s3.*`` options ``given``,
    else the AWS environment variables, with the region and path-style access the native
    writer needs."""
    settings = {k: str(v).strip() for k, v in given.items()}
    for key, variables in _ENVIRONMENT.items():
        if key not in settings:
            found = next((v for v in variables if environ.get(v)), None)
            if found:
                settings[key] = environ[found]
                problem = endpoint_problem(environ[found]) if key == "s3.endpoint" else None
                if problem:
                    raise OptionError(f"invalid value {environ[found]!r} of the environment variable {found} "
                                      f"(the default of option 's3.endpoint'): {problem}")
    for key, default in TIMEOUT_DEFAULTS.items():
        settings.setdefault(key, default)
    settings.setdefault("s3.region", "us-east-1")
    settings.setdefault("s3.path-style-access", "true" if settings.get("s3.endpoint") else "false")
    return settings


@attrs.frozen
class S3Timeouts:
    """How long one S3 request may take: per attempt, to connect and to wait for the
    answer's next bytes; and how many attempts. ``write_s``: how long a write attempt's
    data files may take."""

    connect_s: float
    request_s: float
    attempts: int
    write_s: float = 300.0

    @property
    def longest_s(self) -> float:
        """The longest one request takes to fail when the store does not answer at all
        (backoff between attempts aside)."""
        return self.attempts * (self.connect_s + self.request_s)


def s3_timeouts(settings: Mapping[str, str]) -> S3Timeouts:
    """The timeouts of :func:`s3_settings`' ``settings`` (defaults for those not given);
    an :class:`~tablelog.errors.OptionError` naming the key for a value that is not one."""
    values = {**TIMEOUT_DEFAULTS, **{k: v for k, v in settings.items() if k in TIMEOUT_DEFAULTS}}
    for key, value in values.items():
        if problem := timeout_problem(key, value):
            raise OptionError(f"invalid value {value!r} for option {key!r}: {problem}")
    return S3Timeouts(connect_s=parse_duration_ms(values["s3.connect-timeout"]) / 1000,
                      request_s=parse_duration_ms(values["s3.request-timeout"]) / 1000,
                      attempts=int(values["s3.max-attempts"]),
                      write_s=parse_duration_ms(values["s3.write-timeout"]) / 1000)


def timeout_problem(key: str, value: str) -> str | None:
    """Why ``value`` cannot be the timeout option ``key``, or None."""
    if key == "s3.max-attempts":
        return None if str(value).strip().isdigit() and 1 <= int(value) <= 100 else "expected a whole number from 1 to 100"
    try:
        millis = parse_duration_ms(value)
    except InvalidValue as err:
        return str(err)
    return None if millis >= 100 else "expected a duration of at least 100 ms, such as '5 s' or '500 ms'"


def split_s3_url(url: str) -> tuple[str, str]:
    """``s3://bucket/a/b`` -> ``("bucket", "a/b")``."""
    parsed = urlparse(url)
    return parsed.netloc, parsed.path.lstrip("/")


def boto3_client(settings: Mapping[str, str]) -> Any:
    """A boto3 S3 client for ``settings`` (:func:`s3_settings`), verifying an ``https://``
    endpoint with the CAs of ``AWS_CA_BUNDLE`` and the machine's (:mod:`tablelog.ca_bundle`);
    a clear error without boto3."""
    try:
        import boto3
        from botocore.config import Config
    except ImportError:
        raise OptionError(
            f"an s3:// warehouse needs boto3 (for its conditional snapshot commits): {INSTALL_HINT}"
        ) from None
    path_style = settings.get("s3.path-style-access", "false").lower() == "true"
    timeouts = s3_timeouts(settings)
    return boto3.client(
        "s3",
        endpoint_url=settings.get("s3.endpoint") or None,
        aws_access_key_id=settings.get("s3.access-key") or None,
        aws_secret_access_key=settings.get("s3.secret-key") or None,
        region_name=settings.get("s3.region") or None,
        verify=ca_bundle(),
        config=Config(s3={"addressing_style": "path" if path_style else "auto"},
                      connect_timeout=timeouts.connect_s, read_timeout=timeouts.request_s,
                      # botocore's "max_attempts" counts the retries; "total_max_attempts" the first too
                      retries={"total_max_attempts": timeouts.attempts, "mode": "standard"}),
    )


def _error_code(exc: Exception) -> str:
    response = getattr(exc, "response", None) or {}
    return str(response.get("Error", {}).get("Code", ""))


# A conditional put that failed because the key exists (412), or because a concurrent
# conditional put of the same key is in flight (409 on AWS).
_LOST_RACE_CODES = ("PreconditionFailed", "ConditionalRequestConflict", "412", "409")


def create_if_absent(client: Any, bucket: str, key: str, body: bytes) -> bool:
    """Create ``key`` with ``body`` unless an object has that name: True when this call
    created it, False when the store says it exists. Other errors propagate; the caller
    decides what happened by reading the table again. The store is checked to honour the
    condition before the first such put to a bucket (:func:`check_conditional_put`): a
    reader, which puts nothing, never needs the right to write."""
    check_conditional_put(client, bucket, warehouse_prefix(key))
    return _put_if_absent(client, bucket, key, body)


def _put_if_absent(client: Any, bucket: str, key: str, body: bytes) -> bool:
    from botocore.exceptions import ClientError

    try:
        client.put_object(Bucket=bucket, Key=key, Body=body, IfNoneMatch="*")
    except ClientError as exc:
        if _error_code(exc) in _LOST_RACE_CODES:
            return False
        raise
    return True


def warehouse_prefix(key: str) -> str:
    """The warehouse's part of a table file's ``key`` (``wh/db.db/t/snapshot/snapshot-1``
    -> ``wh``): what comes before the database folder."""
    parts = key.split("/")
    database = next((i for i, part in enumerate(parts[:-1]) if part.endswith(".db")), len(parts) - 1)
    return "/".join(parts[:database])


_checked: set[tuple[str, str]] = set()
_checked_lock = threading.Lock()


def check_conditional_put(client: Any, bucket: str, prefix: str) -> None:
    """Refuse a store that ignores ``If-None-Match``: create one probe key under the
    warehouse folder ``prefix`` twice, once per (endpoint, bucket) and process. On such a
    store two committers could both create one snapshot file, and one commit would be lost
    without an error."""
    endpoint = str(getattr(getattr(client, "meta", None), "endpoint_url", "") or "")
    marker = (endpoint, bucket)
    with _checked_lock:
        if marker in _checked:
            return
    warehouse = f"s3://{bucket}/{prefix}".rstrip("/")
    key = "/".join(p for p in (prefix, ".tablelog", "conditional-put-probe", uuid.uuid4().hex) if p)
    try:
        _put_if_absent(client, bucket, key, b"1")
        second = _put_if_absent(client, bucket, key, b"2")
    except Exception as exc:
        denied = _error_code(exc) in ("AccessDenied", "403")
        raise CommitError(
            f"warehouse {warehouse!r}: could not write to the bucket {bucket!r}: {exc}"
            + ("; writers and committers need s3:PutObject and s3:DeleteObject on the warehouse's keys "
               "(readers need only s3:GetObject and s3:ListBucket: see docs/deploying.md)" if denied else "")
        ) from exc
    finally:
        with contextlib.suppress(Exception):
            client.delete_object(Bucket=bucket, Key=key)
    # Only a second creation is evidence: a first put refused means an attempt of it that
    # timed out had landed and was retried.
    if second:
        raise CommitError(
            f"warehouse {warehouse!r}: the S3 store at {endpoint or 'AWS'} ignores "
            "conditional puts (If-None-Match: *): a probe object was created twice. tablelog commits "
            "snapshots with a conditional put, so on this store two committers could overwrite each "
            "other's snapshot and lose a commit silently; use a store that supports conditional writes "
            "(AWS S3, MinIO, SeaweedFS, ...)"
        )
    with _checked_lock:
        _checked.add(marker)


class ConditionalSnapshotCommit:
    """A pypaimon ``SnapshotCommit`` that creates ``snapshot-<expected_id>`` with a
    conditional put, and nothing else: a commit that pypaimon prepared for another id (it
    found a newer snapshot than the caller checked for its commit identifier) is refused,
    so the caller checks that identifier again before committing."""

    def __init__(self, snapshot_manager: Any, client: Any, expected_id: int) -> None:
        self.snapshot_manager = snapshot_manager
        self.client = client
        self.expected_id = expected_id
        self.attempted = False
        self.created = False

    def commit(self, base_snapshot_uuid: Any, snapshot: Any, statistics: Any) -> bool:
        from pypaimon.common.json_util import JSON

        self.attempted = True
        if snapshot.id != self.expected_id:
            return False
        bucket, key = split_s3_url(self.snapshot_manager.get_snapshot_path(snapshot.id))
        if not create_if_absent(self.client, bucket, key, JSON.to_json(snapshot, indent=2).encode()):
            return False
        self.created = True
        # The LATEST file is a hint only: readers check hint + 1 and list the directory.
        with contextlib.suppress(Exception):
            self.snapshot_manager.file_io.overwrite_file_utf8(self.snapshot_manager.latest_file, str(snapshot.id))
        return True

    def close(self) -> None:
        pass

    def __enter__(self) -> ConditionalSnapshotCommit:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
