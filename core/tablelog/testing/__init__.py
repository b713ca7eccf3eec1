"""Reusable test suites for log-system plugins (import in your plugin's tests).

``LogSystemConformance`` is the pytest base class every log system passes; see
:mod:`tablelog.testing.conformance` for how to use it.
"""

from tablelog.testing.conformance import ClientOpener, LogSystemConformance, opened_clients

__all__ = ["ClientOpener", "LogSystemConformance", "opened_clients"]
