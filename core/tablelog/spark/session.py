"""A local SparkSession set up for tablelog: the demo and the tests use it.

Python workers run this interpreter (``spark.pyspark.python``), the RocksDB state store
is on (``normalize`` needs it), Spark's own logging is cut down to ``log_level`` from the
JVM's first line on, and the ``tablelog`` data source is registered.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Mapping
from typing import TYPE_CHECKING

from tablelog.errors import TablelogError
from tablelog.spark.datasource import register
from tablelog.spark.normalize import ROCKSDB_PROVIDER, STATE_STORE_PROVIDER

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_LOG4J = """\
status = error
rootLogger.level = {level}
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{{HH:mm:ss}} %p %c{{1}}: %m%n%ex
"""


def java_available() -> str | None:
    """The java executable Spark will use, or None."""
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return os.path.join(home, "bin", "java")
    return shutil.which("java")


def local_session(
    master: str = "local[2]",
    app_name: str = "tablelog",
    conf: Mapping[str, str] | None = None,
    log_level: str = "ERROR",
    logger_levels: Mapping[str, str] | None = None,
) -> SparkSession:
    """A local SparkSession (or the running one) with the ``tablelog`` source registered.

    ``logger_levels``: log4j levels for single loggers (``{"org.apache.spark.util.Utils": "off"}``).
    """
    if java_available() is None:
        raise TablelogError("Spark needs Java (17 or newer): none found on PATH or in JAVA_HOME")
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    log_config = os.path.join(tempfile.mkdtemp(prefix="tablelog-spark-"), "log4j2.properties")
    with open(log_config, "w") as f:
        f.write(_LOG4J.format(level=log_level.lower()))
        for i, (logger, level) in enumerate(sorted((logger_levels or {}).items())):
            f.write(f"logger.l{i}.name = {logger}\nlogger.l{i}.level = {level.lower()}\n")
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.pyspark.python", sys.executable)
        .config("spark.pyspark.driver.python", sys.executable)
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{log_config}")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config(STATE_STORE_PROVIDER, ROCKSDB_PROVIDER)
    )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    register(spark)
    return spark
