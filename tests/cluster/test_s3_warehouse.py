"""Tables in an ``s3://`` warehouse on a real S3 server (SeaweedFS): created, written,
committed and read through the Python API and the CLI; the connection's secrets used but
never stored or shown; the file log refused without a directory of its own."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

import tablelog
from tablelog.cli import cli
from tablelog.errors import OptionError, TableExistsError
from tablelog.table import internals
from tablelog.testing.s3_server import S3Endpoint
from tablelog.verify import verify

pytestmark = pytest.mark.cluster

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def sentinel_options(s3: S3Endpoint) -> dict[str, str]:
    """Connection options whose key and secret are sentinels: the test server's identity
    of sentinel credentials, or (a server that accepts any) new ones."""
    return {
        "s3.endpoint": s3.endpoint,
        "s3.access-key": s3.sentinel_access_key or f"AKIASENTINEL{uuid.uuid4().hex[:8]}",
        "s3.secret-key": s3.sentinel_secret_key or f"SECRETSENTINEL{uuid.uuid4().hex}",
    }


def object_texts(s3: S3Endpoint, warehouse: str) -> dict[str, bytes]:
    """Every object under the warehouse, by key."""
    client = s3.client()
    prefix = warehouse.removeprefix(f"s3://{s3.bucket}/") + "/"
    objects: dict[str, bytes] = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=s3.bucket, Prefix=prefix):
        for item in page.get("Contents", []):
            objects[item["Key"]] = client.get_object(Bucket=s3.bucket, Key=item["Key"])["Body"].read()
    return objects


def test_a_table_on_s3_is_created_written_committed_and_read_through_the_python_api(
        s3_server: S3Endpoint, tmp_path: Path) -> None:
    warehouse = s3_server.url(f"api-{uuid.uuid4().hex[:8]}")
    options = {**sentinel_options(s3_server), "log.system": "filesystem", "filesystem.path": str(tmp_path / "log")}
    table = tablelog.create_table(warehouse, "db.orders", SCHEMA, primary_key=["id"], bucket=2, options=options)
    with table.writer("w") as writer:
        writer.write([{"id": i, "name": f"n{i}"} for i in range(10)])
        first = writer.commit()
        writer.write([{"id": 3, "name": "changed"}])
        second = writer.commit()
    assert (first.snapshot_id, second.snapshot_id) == (1, 2)

    reopened = tablelog.open_table(warehouse, "db.orders", options)
    assert reopened.warehouse.path == warehouse
    rows = {r["id"]: r["name"] for r in reopened.rows().to_pylist()}
    assert rows == {**{i: f"n{i}" for i in range(10)}, 3: "changed"}
    with reopened.reader(consistency="transactional", scan_mode="earliest") as reader:
        changes = reader.read_all()
    assert len(changes) == 10 + 1  # upsert changelog: the update is one record
    assert changes[-1].row == {"id": 3, "name": "changed"}
    assert list(reopened.warehouse.tables()) == ["db.orders"]
    assert verify(reopened).consistent


def test_the_aws_environment_variables_connect_an_s3_warehouse(
        s3_server: S3Endpoint, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server.endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3_server.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3_server.secret_key)
    warehouse = s3_server.url(f"env-{uuid.uuid4().hex[:8]}")
    table = tablelog.create_table(warehouse, "db.t", SCHEMA, primary_key=["id"])
    with table.writer() as writer:
        writer.write([{"id": 1, "name": "a"}])
        writer.commit()
    assert tablelog.open_table(warehouse, "db.t").rows().num_rows == 1


def test_the_cli_creates_describes_tails_and_verifies_a_table_on_s3(s3_server: S3Endpoint, tmp_path: Path) -> None:
    warehouse = s3_server.url(f"cli-{uuid.uuid4().hex[:8]}")
    options = sentinel_options(s3_server)
    flags = [item for key, value in options.items() for item in ("-o", f"{key}={value}")]
    log = ["-o", "log.system=filesystem", "-o", f"filesystem.path={tmp_path / 'log'}"]
    runner = CliRunner()
    env = {"TABLELOG_WAREHOUSE": warehouse}
    outputs = []

    def run(*args: str) -> str:
        result = runner.invoke(cli, list(args), env=env)
        assert result.exit_code == 0, result.output
        outputs.append(result.output)
        return result.output

    assert f"created db.t in {warehouse}" in run("create", "db.t", "--schema", "id bigint, name string",
                                                  "-k", "id", *flags, *log)
    table = tablelog.open_table(warehouse, "db.t", options)
    with table.writer() as writer:
        writer.write([{"id": i, "name": f"n{i}"} for i in range(4)])
        writer.commit()
    described = json.loads(run("describe", "db.t", "--format", "json", *flags))
    assert described["warehouse"] == warehouse
    tailed = run("tail", "db.t", "--scan-mode", "earliest", "--format", "json", *flags)
    assert len([line for line in tailed.splitlines() if line.strip().startswith("{")]) == 4
    assert "consistent" in run("verify", "db.t", *flags).lower()
    for output in outputs:
        assert options["s3.access-key"] not in output and options["s3.secret-key"] not in output


def test_the_demo_runs_on_an_s3_warehouse_with_its_file_log_on_this_machine(
        s3_server: S3Endpoint, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server.endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3_server.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3_server.secret_key)
    warehouse = s3_server.url(f"demo-{uuid.uuid4().hex[:8]}")
    result = CliRunner().invoke(cli, ["demo", "--engine", "python", "-w", warehouse, "--batches", "2",
                                      "--rows", "20"])
    assert result.exit_code == 0, result.output
    assert "the file log goes to" in result.output
    assert "consistent: table demo.orders_" in result.output
    assert any("/snapshot/snapshot-2" in key for key in object_texts(s3_server, warehouse))


def test_the_connection_secrets_are_in_no_object_of_the_table(s3_server: S3Endpoint, tmp_path: Path) -> None:
    warehouse = s3_server.url(f"secrets-{uuid.uuid4().hex[:8]}")
    options = {**sentinel_options(s3_server), "log.system": "filesystem", "filesystem.path": str(tmp_path / "log")}
    table = tablelog.create_table(warehouse, "db.t", SCHEMA, primary_key=["id"], options=options)
    with table.writer() as writer:
        writer.write([{"id": 1, "name": "a"}])
        writer.commit()
    objects = object_texts(s3_server, warehouse)
    assert any("/snapshot/snapshot-1" in key for key in objects)
    assert any("/schema/schema-0" in key for key in objects)
    for sentinel in (options["s3.access-key"], options["s3.secret-key"], "SENTINEL"):
        leaked = [key for key, body in objects.items() if sentinel.encode() in body]
        assert leaked == [], f"{sentinel} stored in {leaked}"
    assert "s3.endpoint" not in internals(table).files.properties
    assert options["s3.secret-key"] not in repr(table) + repr(table.warehouse)


def test_the_file_log_on_s3_without_a_path_is_refused_naming_the_alternatives(s3_server: S3Endpoint) -> None:
    warehouse = s3_server.url(f"filelog-{uuid.uuid4().hex[:8]}")
    with pytest.raises(OptionError) as refused:
        tablelog.create_table(warehouse, "db.t", SCHEMA, primary_key=["id"],
                              options={**sentinel_options(s3_server), "log.system": "filesystem"})
    message = str(refused.value)
    assert warehouse in message
    for alternative in ("log.system=kafka", "log.system=pulsar", "'filesystem.path'"):
        assert alternative in message
    assert object_texts(s3_server, warehouse) == {}



def at_once(count: int, call: Callable[[int], object]) -> list[object]:
    """What ``call(i)`` returned (or raised) in each of ``count`` threads started together."""
    start = threading.Barrier(count)

    def run(i: int) -> object:
        start.wait()
        try:
            return call(i)
        except Exception as err:  # counted by the caller
            return err

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(run, range(count)))


def test_of_creators_of_one_table_on_s3_at_once_one_creates_it_and_the_others_are_told_it_exists(
        s3_server: S3Endpoint) -> None:
    # pypaimon's schema commit on S3 is "exists? write, copy": losers got its raw
    # TableAlreadyExistException, or two creators both believed they made the table.
    options = sentinel_options(s3_server)
    for round_ in range(2):
        warehouse = s3_server.url(f"race-{round_}-{uuid.uuid4().hex[:8]}")
        results = at_once(4, lambda _, warehouse=warehouse: tablelog.create_table(
            warehouse, "db.t", SCHEMA, primary_key=["id"], options=options))
        created = [r for r in results if isinstance(r, tablelog.Table)]
        refused = [r for r in results if not isinstance(r, tablelog.Table)]
        assert len(created) == 1, results
        assert [type(r) for r in refused] == [TableExistsError] * 3, refused
        assert {str(r) for r in refused} == {f"table 'db.t' already exists in warehouse {warehouse!r}"}
        assert tablelog.open_table(warehouse, "db.t", options).table_id == created[0].table_id
    result = CliRunner().invoke(cli, ["create", "-w", warehouse, "db.t", "--schema", "id bigint", "-k", "id",
                                      *(f"-o{k}={v}" for k, v in options.items())])
    assert result.exit_code == 1 and "already exists" in result.output and "Traceback" not in result.output


def test_alters_of_one_table_on_s3_at_once_all_land_each_in_a_schema_of_its_own(s3_server: S3Endpoint) -> None:
    # The same schema commit lost alters: four returned, one column was left.
    options = sentinel_options(s3_server)
    warehouse = s3_server.url(f"alters-{uuid.uuid4().hex[:8]}")
    tablelog.create_table(warehouse, "db.t", SCHEMA, primary_key=["id"], options=options)
    tables = [tablelog.open_table(warehouse, "db.t", options) for _ in range(4)]
    schema_ids = at_once(4, lambda i: tables[i].alter(tablelog.AddColumn(f"c{i}", pa.int64())))
    assert sorted(schema_ids) == [1, 2, 3, 4]
    assert set(tablelog.open_table(warehouse, "db.t", options).schema.names) >= {"c0", "c1", "c2", "c3"}


def test_expiry_on_s3_deletes_the_expired_files_many_keys_a_request(
        s3_server: S3Endpoint, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tablelog.store import deletions

    warehouse = s3_server.url(f"expire-{uuid.uuid4().hex[:8]}")
    options = {**sentinel_options(s3_server), "log.system": "filesystem", "filesystem.path": str(tmp_path / "log"),
               "snapshot.num-retained.min": "100", "num-sorted-run.compaction-trigger": "2"}
    table = tablelog.create_table(warehouse, "db.t", SCHEMA, primary_key=["id"], bucket=2, options=options)
    with table.writer("w") as writer:
        for commit in range(6):
            writer.write([{"id": i, "name": f"c{commit}"} for i in range(20)])
            writer.commit()
    requests: list[int] = []
    expiring = tablelog.open_table(warehouse, "db.t", {**options, "snapshot.num-retained.min": "1",
                                                        "snapshot.num-retained.max": "1",
                                                        "snapshot.time-retained": "0 ms"})
    client = internals(expiring).files.s3_client
    delete_objects = client.delete_objects

    def counted(**request: object) -> object:
        requests.append(len(request["Delete"]["Objects"]))  # type: ignore[index]
        return delete_objects(**request)

    monkeypatch.setattr(client, "delete_objects", counted)
    monkeypatch.setattr(deletions, "S3_BATCH", 3)
    before = set(object_texts(s3_server, warehouse))
    result = expiring.expire_snapshots()
    after = set(object_texts(s3_server, warehouse))

    assert result.expired.snapshots and len(requests) > 1 and max(requests) <= 3
    assert sum(requests) == len(before - after) - len(result.expired.snapshots)  # all but snapshots, batched
    assert {r["id"]: r["name"] for r in expiring.rows().to_pylist()} == {i: "c5" for i in range(20)}
    assert verify(expiring).consistent
