"""Hook wrappers (tracing, metrics): ``@hookimpl(wrapper=True)`` functions that wrap the
hook calls of every log system, registered in process or through the entry-point group
``tablelog.hook_wrappers``."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
import uuid
from collections import Counter
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import tablelog
from tablelog.errors import PositionOutOfRangeError
from tablelog.logs import discovery
from tablelog.plugin import FetchResult, LogConfig, ProduceBatch, hookimpl


class CallMetrics:
    """Counts and times ``produce`` and ``fetch`` calls, whatever the log system."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.seconds: Counter[str] = Counter()
        self.failures: Counter[str] = Counter()

    def _timed(self, hook: str) -> Generator[None, Any, Any]:
        start = time.perf_counter()
        try:
            return (yield)
        except Exception:
            self.failures[hook] += 1
            raise
        finally:
            self.calls[hook] += 1
            self.seconds[hook] += time.perf_counter() - start

    @hookimpl(wrapper=True)
    def produce(self, batch: ProduceBatch) -> Generator[None, Any, Any]:
        return (yield from self._timed("produce"))

    @hookimpl(wrapper=True)
    def fetch(self, partition: int) -> Generator[None, Any, FetchResult]:
        return (yield from self._timed("fetch"))


@pytest.fixture
def metrics() -> Iterator[CallMetrics]:
    wrapper = CallMetrics()
    discovery.register_hook_wrapper(wrapper)
    yield wrapper
    discovery.unregister_hook_wrapper(wrapper)


def _table(tmp_path: Path) -> tablelog.Table:
    return tablelog.create_table(
        str(tmp_path / "wh"), f"db.t_{uuid.uuid4().hex[:8]}", pa.schema([("id", pa.int64())]),
        primary_key=["id"], bucket=2, options={"log.system": "filesystem"},
    )


def test_a_registered_hook_wrapper_counts_and_times_produce_and_fetch_on_the_filesystem_log(
    metrics: CallMetrics, tmp_path: Path
) -> None:
    table = _table(tmp_path)
    with table.writer() as writer:
        writer.write([{"id": i} for i in range(10)])
        writer.commit()
    produced = metrics.calls["produce"]
    assert produced >= 2  # one batch per partition at least
    with table.reader(consistency="transactional", scan_mode="earliest") as reader:
        changes = reader.read_all(idle_timeout_s=0.2)
    assert sorted(c.row["id"] for c in changes) == list(range(10))
    assert metrics.calls["produce"] == produced
    assert metrics.calls["fetch"] >= 2
    assert metrics.seconds["produce"] > 0 and metrics.seconds["fetch"] > 0
    assert set(metrics.calls) == {"produce", "fetch"}


def test_a_hook_wrapper_sees_the_exception_of_the_hook_it_wraps(metrics: CallMetrics, tmp_path: Path) -> None:
    config = LogConfig("filesystem", "db.t", "t", 1, True, {}, str(tmp_path))
    with discovery.load_log_system("filesystem").open(config) as client:
        client.ensure_topic()
        with pytest.raises(PositionOutOfRangeError):
            client.fetch(0, 10**6, 10, 0)
    assert metrics.failures["fetch"] == 1 and metrics.calls["fetch"] == 1


def test_a_wrapper_of_an_optional_hook_does_not_make_the_log_system_implement_it(tmp_path: Path) -> None:
    class ValuesTracer:
        seen = 0

        @hookimpl(wrapper=True)
        def fetch_values(self) -> Generator[None, Any, Any]:
            ValuesTracer.seen += 1
            return (yield)

    wrapper = ValuesTracer()
    discovery.register_hook_wrapper(wrapper)
    try:
        config = LogConfig("filesystem", "db.t", "t", 1, True, {}, str(tmp_path))
        with discovery.load_log_system("filesystem").open(config) as client:
            client.ensure_topic()
            assert not client.fetches_values  # the file log has no fetch_values: read with fetch
            client.produce(ProduceBatch("tok", 0, [None], [b"v"], 0))
            (produced,) = client.flush(5)
            result = client.fetch_values(0, produced.first, 10, 1)
        assert result.values == [b"v"] and ValuesTracer.seen == 0
    finally:
        discovery.unregister_hook_wrapper(wrapper)


def test_a_log_system_loaded_after_a_wrapper_is_unregistered_is_not_wrapped(
    metrics: CallMetrics, tmp_path: Path
) -> None:
    discovery.unregister_hook_wrapper(metrics)
    table = _table(tmp_path)
    with table.writer() as writer:
        writer.write([{"id": 1}])
        writer.commit()
    assert metrics.calls == Counter()


def test_a_hook_wrapper_entry_point_wraps_every_log_system_of_the_process(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "tl_metrics-0.1.dist-info").mkdir(parents=True)
    (site / "tl_metrics-0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: tl-metrics\nVersion: 0.1\n"
    )
    (site / "tl_metrics-0.1.dist-info" / "entry_points.txt").write_text(
        "[tablelog.hook_wrappers]\nmetrics = tl_metrics\n"
    )
    (site / "tl_metrics.py").write_text(textwrap.dedent("""
        from collections import Counter
        from tablelog.plugin import hookimpl

        calls = Counter()

        @hookimpl(wrapper=True)
        def produce(connection):
            calls["produce"] += 1
            return (yield)

        @hookimpl(wrapper=True)
        def fetch(connection):
            calls["fetch"] += 1
            return (yield)
    """))
    script = textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {str(site)!r})
        import pyarrow as pa
        import tablelog, tl_metrics
        table = tablelog.create_table({str(tmp_path / "wh")!r}, "db.t", pa.schema([("id", pa.int64())]),
                                      primary_key=["id"], options={{"log.system": "filesystem"}})
        with table.writer() as writer:
            writer.write([{{"id": i}} for i in range(5)])
            writer.commit()
        with table.reader(consistency="transactional", scan_mode="earliest") as reader:
            assert len(reader.read_all(idle_timeout_s=0.2)) == 5
        print(json.dumps(dict(tl_metrics.calls)))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    calls = json.loads(done.stdout.strip().splitlines()[-1])
    assert calls["produce"] >= 1 and calls["fetch"] >= 1


def test_a_hook_wrapper_entry_point_that_cannot_be_imported_is_named(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "tl_broken-0.1.dist-info").mkdir(parents=True)
    (site / "tl_broken-0.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: tl-broken\nVersion: 0.1\n")
    (site / "tl_broken-0.1.dist-info" / "entry_points.txt").write_text(
        "[tablelog.hook_wrappers]\nbroken = tl_broken_missing\n"
    )
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(site)!r})
        from tablelog.logs import discovery
        try:
            discovery.load_log_system("filesystem")
        except Exception as err:
            print(type(err).__name__, err)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.stdout.startswith("PluginUnavailableError hook wrapper 'broken' (tl_broken_missing")
