"""The SparkSession the engine runs in: the Kafka connector's jars, the RocksDB state store, our Python.

`transformWithState` requires the RocksDB state-store provider. The Python workers must run this
interpreter (its venv holds streamlet, the topology's modules and the protobuf pyspark checks), and
must be able to import the application's modules as the driver does: the current directory and the
driver's sys.path go on their PYTHONPATH (set before the JVM starts, which passes it on).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Mapping
from typing import Any

from streamlet.spark.jars import ensure_spark_jars

ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
SIMPLIFIED_TRACEBACK = "spark.sql.execution.pyspark.udf.simplifiedTraceback.enabled"
"""Off in the engine's sessions, so that one worker daemon serves all its Python workers (see `configure`)."""
log = logging.getLogger(__name__)
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


def _worker_pid(_item: int) -> int:
    return os.getpid()


class WorkerWarmUp(threading.Thread):
    """Starts the session's Python workers in the background while the engine's queries start.

    Spark starts its Python worker daemon (which imports everything the engine's workers need, see
    `worker_daemon`) and forks its workers only when the first Python task runs, which for a
    query is after its first micro-batch was planned: on a cold JVM, seconds of fetching offsets,
    planning and `transformWithState`'s schema check, during which the workers could have been
    starting. So the engine runs a trivial job on one worker per core as soon as it has the session;
    Spark keeps those workers and hands them the query's first tasks. Measured with
    `benchmarks.spark_bench` (WordCount, 250,000 lines, `local[2]`, A/B alternated): the run took
    29.98-34.03 s (first micro-batch 15.5-17.5 s) against 33.27-39.81 s (19.4-24.7 s) without it.
    A failure here changes nothing (the query starts its workers itself); `workers` holds the pids
    of the workers it started."""

    def __init__(self, spark: Any) -> None:
        super().__init__(name="streamlet-spark-worker-warm-up", daemon=True)
        self._spark = spark
        self.workers: set[int] = set()

    def run(self) -> None:
        try:
            context = self._spark.sparkContext
            slots = max(1, int(context.defaultParallelism))
            self.workers = set(context.parallelize(range(slots), slots).map(_worker_pid).collect())
        except Exception as exc:  # the session stopped, or no Python worker can start: the query reports it
            log.debug("warming the Python workers up failed: %s", exc)


def warm_up_workers(spark: Any) -> WorkerWarmUp:
    """Start a `WorkerWarmUp` for `spark` and return it (running)."""
    warm_up = WorkerWarmUp(spark)
    warm_up.start()
    return warm_up
