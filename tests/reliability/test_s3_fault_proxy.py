"""The S3 fault proxy (:mod:`tablelog.testing.s3_faults`) in front of a real S3 server
(SeaweedFS), driven by real clients: boto3, and a tablelog table whose files pyarrow's AWS
SDK, pypaimon-rust (opendal) and boto3 write. Requests pass unmodified (signatures stay
valid) until a rule fails one, withholds its answer, or drops the connection after the
server applied it; what is on the server is checked directly, not through the proxy.
"""

from __future__ import annotations

import http.client
import http.server
import os
import resource
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError, ConnectionClosedError, ReadTimeoutError

import tablelog
from tablelog.commit.log_commit import CommitResult
from tablelog.errors import CommitError
from tablelog.testing.processes import free_port
from tablelog.testing.s3_faults import S3FaultProxy
from tablelog.testing.s3_server import S3Endpoint

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])
ROWS = [{"id": i, "name": f"row-{i}"} for i in range(5)]


@pytest.fixture
def proxy(s3_server: S3Endpoint) -> Iterator[S3FaultProxy]:
    with S3FaultProxy(s3_server.endpoint) as proxy:
        yield proxy


def one_attempt_client(proxy: S3FaultProxy, server: S3Endpoint, **config: object) -> Any:
    """A boto3 client through the proxy that makes one attempt per call (botocore's
    ``max_attempts`` counts retries after the first: 1 would be two attempts)."""
    return proxy.through(server).client(retries={"total_max_attempts": 1}, **config)


def key(name: str) -> str:
    return f"proxy-{uuid.uuid4().hex[:8]}/{name}"


def stored(server: S3Endpoint, object_key: str) -> bytes | None:
    """The object as the server has it (asked directly, not through the proxy), or None."""
    try:
        return bytes(server.client().get_object(Bucket=server.bucket, Key=object_key)["Body"].read())
    except ClientError as err:
        assert err.response["Error"]["Code"] == "NoSuchKey"
        return None


def table_through(proxy: S3FaultProxy, server: S3Endpoint) -> tablelog.Table:
    # write-only: no background compaction or expiry, so that the requests through the
    # proxy are the commit's own and none reaches it after the test closes it.
    options = {**server.tablelog_options(), "s3.endpoint": proxy.endpoint, "log.system": "none", "write-only": "true"}
    return tablelog.create_table(server.url(f"wh-{uuid.uuid4().hex[:8]}"), "db.t", SCHEMA, primary_key=["id"],
                                 options=options)


def write_and_commit(table: tablelog.Table) -> CommitResult:
    task = table.write_task("w", 1)
    task.write(ROWS)
    return table.commit("w", 1, [task.finish()])


def snapshot_puts(proxy: S3FaultProxy) -> list[object]:
    return [e.outcome for e in proxy.requests if e.method == "PUT" and "/snapshot/snapshot-" in e.path]


def test_boto3_requests_pass_unmodified_on_one_kept_alive_connection_and_are_recorded(
        proxy: S3FaultProxy, s3_server: S3Endpoint) -> None:
    s3, name = one_attempt_client(proxy, s3_server), key("a")
    s3.put_object(Bucket=s3_server.bucket, Key=name, Body=b"hello")
    assert s3.get_object(Bucket=s3_server.bucket, Key=name)["Body"].read() == b"hello"
    assert s3.head_object(Bucket=s3_server.bucket, Key=name)["ContentLength"] == 5
    listed = s3.list_objects_v2(Bucket=s3_server.bucket, Prefix=name)["Contents"]
    assert [o["Key"] for o in listed] == [name]
    s3.delete_object(Bucket=s3_server.bucket, Key=name)  # 204: no body
    s3.put_object(Bucket=s3_server.bucket, Key=name, Body=b"again")

    path = f"/{s3_server.bucket}/{name}"
    assert [(e.method, e.path, e.outcome) for e in proxy.requests] == [
        ("PUT", path, 200), ("GET", path, 200), ("HEAD", path, 200),
        ("GET", f"/{s3_server.bucket}?list-type=2&prefix={name.replace('/', '%2F')}&encoding-type=url", 200),
        ("DELETE", path, 204), ("PUT", path, 200),
    ]
    assert proxy.connections == 1
    assert stored(s3_server, name) == b"again"


def test_a_chunked_request_body_passes_with_its_signature_valid(proxy: S3FaultProxy, s3_server: S3Endpoint) -> None:
    name, body = key("chunked"), b"a chunked body " * 1000
    request = AWSRequest(method="PUT", url=f"{proxy.endpoint}/{s3_server.bucket}/{name}", data=body)
    S3SigV4Auth(Credentials(s3_server.access_key, s3_server.secret_key), "s3", s3_server.region).add_auth(request)
    connection = http.client.HTTPConnection(proxy.host, proxy.port, timeout=10)
    connection.putrequest("PUT", f"/{s3_server.bucket}/{name}", skip_host=True, skip_accept_encoding=True)
    for header, value in [*request.headers.items(), ("Host", f"{proxy.host}:{proxy.port}"),
                          ("Transfer-Encoding", "chunked")]:
        connection.putheader(header, value)
    connection.endheaders()
    for start in range(0, len(body), 4000):
        part = body[start:start + 4000]
        connection.send(b"%x\r\n%s\r\n" % (len(part), part))
    connection.send(b"0\r\n\r\n")
    response = connection.getresponse()
    assert (response.status, response.read()) == (200, b"")
    connection.close()
    assert stored(s3_server, name) == body


class _ChunkedAnswers(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.write(b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "11")  # of the body a GET would have: none follows
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def chunked_proxy() -> Iterator[S3FaultProxy]:
    """The proxy in front of a server of this test's own, which answers chunked (SeaweedFS
    answers with a Content-Length)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _ChunkedAnswers)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with S3FaultProxy(f"http://127.0.0.1:{server.server_address[1]}") as proxy:
            yield proxy
    finally:
        server.shutdown()
        server.server_close()


def answers_on_one_connection(proxy: S3FaultProxy, methods: list[str]) -> list[tuple[int, bytes]]:
    connection = http.client.HTTPConnection(proxy.host, proxy.port, timeout=10)
    answers = []
    for method in methods:
        connection.request(method, "/b/k")
        response = connection.getresponse()
        answers.append((response.status, response.read()))
    connection.close()
    return answers


def test_chunked_and_bodiless_answers_keep_the_connection_in_step(chunked_proxy: S3FaultProxy) -> None:
    answers = answers_on_one_connection(chunked_proxy, ["GET", "HEAD", "GET"])
    assert answers == [(200, b"hello world"), (200, b""), (200, b"hello world")]
    assert chunked_proxy.connections == 1


def test_a_kept_alive_connection_works_while_the_process_has_more_than_1024_descriptors(
        chunked_proxy: S3FaultProxy) -> None:
    # A long fault session's test process passes 1024 descriptors, past which select() refuses one.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4096)), hard))
    spare = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        answers = answers_on_one_connection(chunked_proxy, ["GET", "GET", "GET"])
    finally:
        for fd in spare:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert answers == [(200, b"hello world")] * 3, chunked_proxy.broken
    assert chunked_proxy.connections == 1
    assert chunked_proxy.broken == []


def test_an_exchange_the_proxy_gives_up_on_is_recorded_with_its_cause() -> None:
    with S3FaultProxy(f"http://127.0.0.1:{free_port()}") as proxy:  # nothing listens there
        connection = http.client.HTTPConnection(proxy.host, proxy.port, timeout=10)
        connection.request("GET", "/b/k")
        with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
            connection.getresponse()
        connection.close()
        deadline = time.monotonic() + 5
        while not proxy.broken and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(proxy.broken) == 1
        assert proxy.broken[0].startswith("GET /b/k: ConnectionRefusedError"), proxy.broken
        assert proxy.requests == []


def test_fail_answers_an_s3_error_without_forwarding_and_the_connection_stays_usable(
        proxy: S3FaultProxy, s3_server: S3Endpoint) -> None:
    s3, name = one_attempt_client(proxy, s3_server), key("snapshot/snapshot-1")
    rule = proxy.fail("PUT", "snapshot-")
    with pytest.raises(ClientError) as raised:
        s3.put_object(Bucket=s3_server.bucket, Key=name, Body=b"{}")
    assert raised.value.response["Error"]["Code"] == "SlowDown"
    assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
    assert stored(s3_server, name) is None

    s3.put_object(Bucket=s3_server.bucket, Key=name, Body=b"{}")  # times=1: the next one passes
    assert rule.fired == 1
    assert snapshot_puts(proxy) == ["fail", 200]
    assert proxy.connections == 1
    assert stored(s3_server, name) == b"{}"


def test_apply_then_hang_applies_the_put_and_withholds_the_answer(
        proxy: S3FaultProxy, s3_server: S3Endpoint) -> None:
    s3, name = one_attempt_client(proxy, s3_server, read_timeout=2), key("hung")
    rule = proxy.apply_then_hang("PUT")
    with pytest.raises(ReadTimeoutError):
        s3.put_object(Bucket=s3_server.bucket, Key=name, Body=b"applied")
    assert stored(s3_server, name) == b"applied"
    assert rule.fired == 1
    assert proxy.requests[-1].outcome == "apply_then_hang"


def test_apply_then_drop_applies_the_put_and_resets_the_connection(
        proxy: S3FaultProxy, s3_server: S3Endpoint) -> None:
    s3, name = one_attempt_client(proxy, s3_server), key("dropped")
    proxy.apply_then_drop("PUT")
    with pytest.raises(ConnectionClosedError):
        s3.put_object(Bucket=s3_server.bucket, Key=name, Body=b"applied")
    assert stored(s3_server, name) == b"applied"
    assert proxy.requests[-1].outcome == "apply_then_drop"


def test_hang_forwards_nothing_until_clear_releases_the_connection(
        proxy: S3FaultProxy, s3_server: S3Endpoint) -> None:
    s3, name = one_attempt_client(proxy, s3_server, read_timeout=1), key("never")
    proxy.hang("PUT", name, times=None)
    for _ in range(2):
        with pytest.raises(ReadTimeoutError):
            s3.put_object(Bucket=s3_server.bucket, Key=name, Body=b"x")
    assert stored(s3_server, name) is None
    proxy.clear()
    s3.put_object(Bucket=s3_server.bucket, Key=name, Body=b"x")
    assert [e.outcome for e in proxy.requests] == ["hang", "hang", 200]


def test_delay_forwards_late(proxy: S3FaultProxy, s3_server: S3Endpoint) -> None:
    s3, name = one_attempt_client(proxy, s3_server), key("late")
    s3.put_object(Bucket=s3_server.bucket, Key=name, Body=b"x")
    rule = proxy.delay(1.0, "GET")
    started = time.monotonic()
    assert s3.get_object(Bucket=s3_server.bucket, Key=name)["Body"].read() == b"x"
    assert time.monotonic() - started >= 1.0
    assert rule.fired == 1


def test_a_tablelog_table_writes_commits_and_reads_through_the_proxy(
        proxy: S3FaultProxy, s3_server: S3Endpoint) -> None:
    table = table_through(proxy, s3_server)
    result = write_and_commit(table)
    assert (result.snapshot_id, result.committed) == (1, True)
    assert sorted(table.rows().to_pylist(), key=lambda r: r["id"]) == ROWS
    requests = proxy.requests
    # The data file (pypaimon-rust), the manifests (pyarrow, multipart) and the snapshot
    # (boto3, conditional) all went through the proxy.
    assert any(e.method == "PUT" and "/bucket-0/data-" in e.path and e.outcome == 200 for e in requests)
    assert any(e.method == "PUT" and "/manifest/manifest-" in e.path and e.outcome == 200 for e in requests)
    assert snapshot_puts(proxy) == [200]
    assert all(isinstance(e.outcome, int) and e.outcome < 500 for e in requests)


def test_a_503_on_the_snapshot_put_is_retried_and_the_commit_lands_once(
        proxy: S3FaultProxy, s3_server: S3Endpoint) -> None:
    table = table_through(proxy, s3_server)
    rule = proxy.fail(method="PUT", path="/snapshot/snapshot-", status=503, times=1)
    result = write_and_commit(table)
    # tablelog's boto3 client retries a SlowDown (standard mode, three attempts).
    assert (result.snapshot_id, result.committed) == (1, True)
    assert rule.fired == 1
    assert snapshot_puts(proxy) == ["fail", 200]
    assert [(s.id, s.commit_user, s.commit_identifier) for s in table.snapshots()] == [(1, "w", 1)]
    assert sorted(table.rows().to_pylist(), key=lambda r: r["id"]) == ROWS


def test_a_snapshot_put_applied_but_unanswered_commits_once_and_is_reported_as_this_calls_commit(
        proxy: S3FaultProxy, s3_server: S3Endpoint) -> None:
    table = table_through(proxy, s3_server)
    proxy.apply_then_drop(method="PUT", path="/snapshot/snapshot-")
    result = write_and_commit(table)
    # boto3 retries the conditional put, which now finds the snapshot (412); the committer
    # reads the table again and finds the commit there, made by this call (its start time
    # and its log records): committed, not a replay's "already".
    assert snapshot_puts(proxy) == ["apply_then_drop", 412]
    assert (result.snapshot_id, result.committed) == (1, True)
    assert [(s.id, s.commit_user, s.commit_identifier) for s in table.snapshots()] == [(1, "w", 1)]
    assert sorted(table.rows().to_pylist(), key=lambda r: r["id"]) == ROWS


def test_a_compaction_whose_snapshot_put_landed_unanswered_keeps_its_files_and_reports_its_snapshot(
        proxy: S3FaultProxy, s3_server: S3Endpoint) -> None:
    table = table_through(proxy, s3_server)
    for identifier in (1, 2, 3):  # three sorted runs of one bucket
        task = table.write_task("w", identifier)
        task.write([{**row, "name": f"{row['name']}-{identifier}"} for row in ROWS])
        table.commit("w", identifier, [task.finish()])
    proxy.apply_then_drop(method="PUT", path="/snapshot/snapshot-4", times=2)  # the put and its retry
    result = table.compact()
    # Its snapshot landed; the answers did not. Deleting its new files would leave the
    # table's latest snapshot naming files that are gone.
    assert result.snapshot_id == 4
    assert [s.commit_kind for s in table.snapshots()] == ["APPEND", "APPEND", "APPEND", "COMPACT"]
    assert sorted(table.rows().to_pylist(), key=lambda r: r["id"]) == [{**r, "name": f"{r['name']}-3"} for r in ROWS]


def test_a_commit_whose_reads_of_the_table_fail_commits_nothing_and_says_retry(
        proxy: S3FaultProxy, s3_server: S3Endpoint) -> None:
    table = table_through(proxy, s3_server)
    task = table.write_task("w", 1)
    task.write(ROWS)
    receipt = task.finish()
    failing = proxy.fail(path="/snapshot", status=503, times=None)  # every look at the snapshots
    with pytest.raises(CommitError, match=r"before its snapshot was sent .* nothing was committed: retry the commit"):
        table.commit("w", 1, [receipt])
    assert failing.fired >= 1 and snapshot_puts(proxy) == []
    proxy.clear()
    assert table.commit("w", 1, [receipt]).committed  # the retry the error asks for
    assert [(s.id, s.commit_user, s.commit_identifier) for s in table.snapshots()] == [(1, "w", 1)]
