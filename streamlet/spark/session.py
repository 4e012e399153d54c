"""The SparkSession the engine runs in: the Kafka connector's jars, the RocksDB state store, our Python.

`transformWithState` requires the RocksDB state-store provider. The Python workers must run this
interpreter (its venv holds streamlet, the topology's modules and the protobuf pyspark checks), and
must be able to import the application's modules as the driver does: the current directory and the
driver's sys.path go on their PYTHONPATH (set before the JVM starts, which passes it on).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

from streamlet.spark.jars import ensure_spark_jars

ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
SIMPLIFIED_TRACEBACK = "spark.sql.execution.pyspark.udf.simplifiedTraceback.enabled"
"""Off in the engine's sessions, so that one worker daemon serves all its Python workers (see `configure`)."""
_NOISY_LOGGERS = ("org.apache.spark.sql.execution.streaming.state", "org.apache.spark.sql.execution.python",
                  "org.apache.spark.sql.execution.streaming.operators.stateful")


def _worker_environment() -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    paths = [os.getcwd(), *[p for p in sys.path if p and os.path.isdir(p)],
             *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))


def configure(spark: Any) -> None:
    """What the engine needs of any session, also one the caller built (`SparkStreams(spark=...)`).

    Spark keeps a worker daemon per distinct worker environment, and sets `SPARK_SIMPLIFIED_TRACEBACK`
    for `mapInArrow`'s workers but not for `transformWithState`'s: with the flag on, a fused query
    started two daemons, each importing everything the engine's workers need (`worker_daemon.PRELOADED`,
    about 2 CPU s), and its counting stage waited for the second one on its first batch. With it off,
    a Python error's traceback also shows pyspark's worker frames above the engine's."""
    spark.conf.set("spark.sql.streaming.stateStore.providerClass", ROCKSDB_PROVIDER)
    spark.conf.set(SIMPLIFIED_TRACEBACK, "false")
    jvm = spark.sparkContext._jvm
    level = jvm.org.apache.logging.log4j.Level.ERROR
    for name in _NOISY_LOGGERS:  # a WARN per missing map key read, per state call
        jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(name, level)


def spark_session(master: str = "local[*]", app_name: str = "streamlet",
                  conf: Mapping[str, str] | None = None) -> Any:
    """Get or create the session, with the connector jars from the cache (fetched once if missing)."""
    from pyspark.sql import SparkSession

    _worker_environment()
    builder = (SparkSession.builder.master(master).appName(app_name)
               .config("spark.jars", ",".join(str(j) for j in ensure_spark_jars()))
               .config("spark.sql.streaming.stateStore.providerClass", ROCKSDB_PROVIDER)
               .config("spark.ui.enabled", "false")
               .config("spark.sql.adaptive.enabled", "false")
               # pyspark's daemon, importing the installed pyspark rather than Spark's zip (see worker_daemon)
               .config("spark.python.daemon.module", "streamlet.spark.worker_daemon"))
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    configure(spark)
    return spark
