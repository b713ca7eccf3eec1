"""Readers of an S3 warehouse (SeaweedFS) with credentials that may only get and list
objects, as a consumer's are: every read entry point works, the Spark source through a
Spark Connect server too, and no object of the bucket changes. The table's log is the
``filesystem`` one, in a local directory: only the warehouse is read-only here."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from tablelog.testing.read_only import COMMITS, ReadOnlyAccess, ReadOnlyScenarios, expected_rows
from tablelog.testing.s3_server import S3Endpoint

pytestmark = pytest.mark.cluster


@pytest.fixture
def access(s3_server: S3Endpoint, tmp_path: Path) -> ReadOnlyAccess:
    folder = f"read-only-{uuid.uuid4().hex[:8]}"
    reader = s3_server.read_only()
    log = {"log.system": "filesystem", "filesystem.path": str(tmp_path / "log")}
    return ReadOnlyAccess(
        writer_warehouse=s3_server.url(folder), writer_options={**log, **s3_server.tablelog_options()},
        reader_warehouse=s3_server.url(folder), reader_options={**log, **reader.tablelog_options()},
        stored=lambda: s3_server.objects(folder),  # listed as the writer
        cli_environment={"AWS_ACCESS_KEY_ID": reader.access_key, "AWS_SECRET_ACCESS_KEY": reader.secret_key,
                         "AWS_ENDPOINT_URL": reader.endpoint, "AWS_REGION": reader.region},
        cli_options=[f"filesystem.path={tmp_path / 'log'}"],
    )


class TestReadersWithReadOnlyS3Credentials(ReadOnlyScenarios):
    def test_the_spark_source_reads_the_table_and_writes_nothing(
        self, access: ReadOnlyAccess, table_name: str, connect: Any,
    ) -> None:
        before = access.stored()
        read = (connect.read.format("tablelog").option("warehouse", access.reader_warehouse)
                .options(**access.reader_options).load(table_name))
        assert sorted((r["id"], r["v"]) for r in read.collect()) == [(r["id"], r["v"]) for r in expected_rows()]
        assert len(expected_rows()) < COMMITS * 6  # later commits updated keys: the read is the merged table
        assert access.stored() == before


def test_the_read_only_identity_may_not_write(s3_server: S3Endpoint) -> None:
    from botocore.exceptions import ClientError

    with pytest.raises(ClientError, match="AccessDenied"):
        s3_server.read_only().client().put_object(Bucket=s3_server.bucket, Key="probe", Body=b"x")
