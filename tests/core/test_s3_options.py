"""The connection of an s3:// warehouse: options, AWS variables, secrets, boto3 missing,
and a store that ignores conditional puts (pure logic; tests/cluster runs a real server)."""

from __future__ import annotations

import re
import sys
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner

import tablelog
from tablelog.cli import cli
from tablelog.errors import CommitError, OptionError
from tablelog.options import is_secret, redact, split_warehouse_options
from tablelog.store.s3 import (
    TIMEOUT_DEFAULTS,
    S3Timeouts,
    create_if_absent,
    s3_settings,
    s3_timeouts,
    warehouse_prefix,
)

SCHEMA = pa.schema([("id", pa.int64())])


def test_without_boto3_an_s3_warehouse_names_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "boto3", None)
    with pytest.raises(OptionError, match=r'needs boto3.*pip install "tablelog\[s3\]"'):
        tablelog.create_table("s3://bucket/wh", "db.t", SCHEMA, options={"s3.endpoint": "http://127.0.0.1:1"})
    with pytest.raises(OptionError, match=r'pip install "tablelog\[s3\]"'):
        tablelog.open_table("s3://bucket/wh", "db.t")


def test_the_aws_variables_fill_the_s3_options_not_given() -> None:
    environ = {"AWS_ENDPOINT_URL": "http://env:1", "AWS_ACCESS_KEY_ID": "env-key",
               "AWS_SECRET_ACCESS_KEY": "env-secret", "AWS_DEFAULT_REGION": "eu-west-1"}
    assert s3_settings({"s3.access-key": "given"}, environ) == {
        "s3.endpoint": "http://env:1", "s3.access-key": "given", "s3.secret-key": "env-secret",
        "s3.region": "eu-west-1", "s3.path-style-access": "true", **TIMEOUT_DEFAULTS,
    }
    assert s3_settings({"s3.endpoint": "http://x:1", "s3.path-style-access": "false"}, {})["s3.path-style-access"] \
        == "false"
    assert s3_settings({}, {}) == {"s3.region": "us-east-1", "s3.path-style-access": "false", **TIMEOUT_DEFAULTS}


def test_the_s3_timeouts_default_and_are_checked_naming_the_key() -> None:
    assert s3_timeouts({}) == S3Timeouts(connect_s=5.0, request_s=30.0, attempts=3)
    given = s3_timeouts({"s3.connect-timeout": "500 ms", "s3.request-timeout": "2 s", "s3.max-attempts": "1"})
    assert given == S3Timeouts(connect_s=0.5, request_s=2.0, attempts=1) and given.longest_s == 2.5
    with pytest.raises(OptionError, match=r"invalid value 'soon' for option 's3.request-timeout': expected a duration"):
        split_warehouse_options({"s3.request-timeout": "soon"})
    with pytest.raises(OptionError, match=r"option 's3.max-attempts'.*whole number from 1 to 100"):
        split_warehouse_options({"s3.max-attempts": "0"})
    with pytest.raises(OptionError, match=r"option 's3.connect-timeout'.*at least 100 ms"):
        split_warehouse_options({"s3.connect-timeout": "10 ms"})


def test_the_s3_keys_are_secrets_and_split_from_the_table_options() -> None:
    assert is_secret("s3.access-key") and is_secret("s3.secret-key") and not is_secret("s3.endpoint")
    assert redact({"s3.access-key": "AK", "s3.secret-key": "SK"}) == {"s3.access-key": "******",
                                                                      "s3.secret-key": "******"}
    warehouse, rest = split_warehouse_options({"S3.Endpoint": "http://x:1", "log.system": "kafka"})
    assert warehouse == {"s3.endpoint": "http://x:1"} and rest == {"log.system": "kafka"}


class _IgnoresConditions:
    """An S3 client of a store that accepts every put, If-None-Match or not."""

    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}

    def put_object(self, Bucket: str, Key: str, Body: bytes, **conditions: Any) -> None:  # noqa: N803
        self.objects[Key] = Body

    def delete_object(self, Bucket: str, Key: str) -> None:  # noqa: N803
        self.objects.pop(Key, None)


def test_a_store_that_ignores_conditional_puts_is_refused_at_the_first_conditional_put() -> None:
    client = _IgnoresConditions()
    with pytest.raises(CommitError, match=r"'s3://bucket/wh'.*ignores conditional puts \(If-None-Match: \*\).*created twice"):
        create_if_absent(client, "bucket", "wh/db.db/t/snapshot/snapshot-1", b"{}")
    assert client.objects == {}  # the probe object is removed, the snapshot never written


def test_the_probe_goes_under_the_warehouse_folder() -> None:
    assert warehouse_prefix("wh/a/db.db/t/snapshot/snapshot-1") == "wh/a"
    assert warehouse_prefix("db.db/t/schema/schema-0") == ""


def test_the_spark_source_options_show_no_secret() -> None:
    from tablelog.spark.options import SourceOptions

    parsed = SourceOptions.parse({"warehouse": "s3://b/wh", "table": "db.t", "s3.endpoint": "http://x:1",
                                  "s3.access-key": "AKSENTINEL", "s3.secret-key": "SKSENTINEL"})
    assert parsed.warehouse == "s3://b/wh"
    assert parsed.runtime_options["s3.secret-key"] == "SKSENTINEL"  # used, only not shown
    assert "SENTINEL" not in repr(parsed)


def test_a_bad_path_style_value_is_refused_naming_the_key_and_the_allowed_values() -> None:
    with pytest.raises(OptionError, match=r"invalid value 'sometimes' for option 's3.path-style-access'.*'true'"):
        tablelog.create_table("s3://b/wh", "db.t", SCHEMA, options={"s3.path-style-access": "sometimes"})
    assert split_warehouse_options({"s3.path-style-access": "YES"})[0] == {"s3.path-style-access": "true"}


@pytest.mark.parametrize("endpoint", ["127.0.0.1:8333", "localhost:8333", "s3.example.com", "ftp://h:1", "http://h:port"])
def test_an_s3_endpoint_without_its_http_scheme_is_refused_naming_the_key_the_value_and_the_form(
        endpoint: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # boto3 refused it only when the first client was made, with a bare ValueError.
    allowed = r"http://host:port or https://host:port"
    with pytest.raises(OptionError, match=rf"invalid value '{re.escape(endpoint)}' for option 's3.endpoint': .*{allowed}"):
        split_warehouse_options({"s3.endpoint": endpoint})
    for call in (lambda: tablelog.create_table("s3://b/wh", "db.t", SCHEMA, options={"s3.endpoint": endpoint}),
                 lambda: tablelog.open_table("s3://b/wh", "db.t", {"s3.endpoint": endpoint})):
        with pytest.raises(OptionError, match=f"'s3.endpoint'.*{allowed}"):
            call()
    result = CliRunner().invoke(cli, ["describe", "-w", "s3://b/wh", "db.t", "-o", f"s3.endpoint={endpoint}"])
    assert result.exit_code == 1 and "'s3.endpoint'" in result.output and isinstance(result.exception, SystemExit)
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    with pytest.raises(OptionError, match=f"'{re.escape(endpoint)}' of the environment variable AWS_ENDPOINT_URL "
                       rf"\(the default of option 's3.endpoint'\): .*{allowed}"):
        tablelog.open_table("s3://b/wh", "db.t")
