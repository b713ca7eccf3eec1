"""The LogSystem conformance suite: what every log system must do, as pytest tests.

Use it from a plugin's test module::

    import uuid
    import pytest
    from tablelog.plugin import LogConfig
    from tablelog.testing import LogSystemConformance

    class TestMyLogConformance(LogSystemConformance):
        @pytest.fixture
        def log_config_factory(self, my_broker):
            def make(partitions: int = 2, auto_register: bool = True) -> LogConfig:
                return LogConfig(
                    system="mylog", table="db.t", topic=f"conformance-{uuid.uuid4().hex}",
                    partitions=partitions, auto_register=auto_register,
                    options={"url": my_broker.url},
                )
            return make

Contract for the fixture ``log_config_factory``: a callable
``(partitions: int = 2, auto_register: bool = True) -> LogConfig`` returning a
config for a *fresh, unique topic* on every call (for a broker-backed plugin,
pointing at a real broker).

A second fixture, ``unreachable_log_config``, gives a config of the same system
whose log cannot be reached (a server address where nothing listens, with short
client time-outs; for a local log, a path that cannot be accessed)::

        @pytest.fixture
        def unreachable_log_config(self, log_config_factory):
            config = log_config_factory()
            port = tablelog.testing.free_port()  # nothing listens there
            return attrs.evolve(config, options={**config.options, "url": f"mylog://127.0.0.1:{port}"})

The suite loads the system with
:func:`tablelog.logs.discovery.load_log_system` (``config.system``), opens clients
itself and closes every one of them after each test.

The tests only use what the hook contracts promise: positions are ints that grow
strictly within a partition but need not be dense, so the suite never computes
"position + 1"; it follows :attr:`FetchResult.next_position` and the ranges that
``flush`` returns. Brokers may show flushed records a little later, so every read
is a loop of short fetches until the expected count or a deadline, never a sleep.
A subclass may tune the class attributes of :class:`~.base.ConformanceBase` for a slow broker.

The tests are grouped by hook, one module each: topics, producing (produce and flush),
fetching, waiting (``wait_for_records``), positions (end positions, seek and
delete_before), sizes (large records against the log's limit), unreachable (an outage),
committing (commit and close), retention (whole tables on the log: retention after
commits, with writers committing in another order than they wrote), partitioned (a table
partitioned by day: every change counted, reads of some of its partitions), attached (the log
attached to a table another Paimon writer created and filled, a table moved to it from
the file log and detached from it while readers run);
:class:`LogSystemConformance` combines them all.
"""

from __future__ import annotations

from tablelog.testing.conformance.attached import AttachedLogTests
from tablelog.testing.conformance.base import ClientOpener, ConfigFactory, opened_clients
from tablelog.testing.conformance.committing import CommitCloseTests
from tablelog.testing.conformance.fetching import FetchTests
from tablelog.testing.conformance.partitioned import PartitionedTableTests
from tablelog.testing.conformance.positions import PositionTests
from tablelog.testing.conformance.producing import ProduceFlushTests
from tablelog.testing.conformance.retention import RetentionTests
from tablelog.testing.conformance.sizes import RecordSizeTests
from tablelog.testing.conformance.topics import TopicTests
from tablelog.testing.conformance.unreachable import UnreachableLogTests
from tablelog.testing.conformance.waiting import WaitForRecordsTests

__all__ = ["ClientOpener", "ConfigFactory", "LogSystemConformance", "opened_clients"]


# pytest collects inherited tests base class first (reverse MRO), so listing the groups
# last-to-first keeps the suite's order: topics, producing, ..., committing.
class LogSystemConformance(
    PartitionedTableTests,
    AttachedLogTests,
    RetentionTests,
    CommitCloseTests,
    UnreachableLogTests,
    RecordSizeTests,
    PositionTests,
    WaitForRecordsTests,
    FetchTests,
    ProduceFlushTests,
    TopicTests,
):
    """Base class of the conformance tests; see the module docstring for how to use it."""
