"""`spark-cluster`: a Spark standalone cluster on loopback for `benchmarks.spark_bench` (a master and two
workers of one core each, as many cores as `local[2]`), started from pyspark's own `bin/spark-class`.

`local[N]` runs the executor inside the driver's JVM; a standalone cluster runs it in separate executor
JVMs that the workers launch, with the shuffle, the state stores and the Python workers there, so what
crosses processes on a real deployment crosses them here too. The executors run this interpreter with
this process's PYTHONPATH (the benchmark's apps and streamlet must import there as in the driver).
Everything listens on 127.0.0.1 only; the cluster's processes are stopped when the session ends.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from streamlet.runtime.parent_death import die_with_parent

CLUSTER = "spark-cluster"
"""The `--masters` name of the standalone cluster."""
WORKERS = 2
CORES_PER_WORKER = 1
WORKER_MEMORY = "1g"
_LOOPBACK = "127.0.0.1"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((_LOOPBACK, 0))
        return int(s.getsockname()[1])


def _spark_class() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "bin" / "spark-class"


def _alive_workers(ui_port: int) -> int:
    with suppress(OSError, ValueError), urllib.request.urlopen(f"http://{_LOOPBACK}:{ui_port}/json/", timeout=5) as r:
        return int(json.load(r).get("aliveworkers", 0))
    return 0


@contextmanager
def standalone_cluster(workers: int = WORKERS, timeout_s: float = 180.0) -> Iterator[str]:
    """A master and `workers` workers on loopback; yields the master URL (`spark://127.0.0.1:PORT`) once
    every worker has registered. Their logs go to a temporary directory, named if start-up fails."""
    logs = Path(tempfile.mkdtemp(prefix="spark-cluster-"))
    env = {**os.environ, "SPARK_LOCAL_IP": _LOOPBACK, "SPARK_LOG_DIR": str(logs),
           "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable)}
    port, ui_port = _free_port(), _free_port()
    procs: list[subprocess.Popen[bytes]] = []

    def start(name: str, *args: str) -> None:
        out = (logs / f"{name}.log").open("wb")
        # Its own session (a Ctrl-C or a killpg of the run reaches the driver first, which stops the cluster
        # below), and SIGKILL from Linux if this process dies before it could (`spark-class` execs the JVM,
        # which keeps the request): a killed run leaves no cluster behind to slow the next one.
        procs.append(subprocess.Popen([str(_spark_class()), *args], env=env, stdout=out, stderr=subprocess.STDOUT,
                                      start_new_session=True, preexec_fn=die_with_parent(signal.SIGKILL)))

    try:
        start("master", "org.apache.spark.deploy.master.Master", "--host", _LOOPBACK, "--port", str(port),
              "--webui-port", str(ui_port))
        url = f"spark://{_LOOPBACK}:{port}"
        for i in range(workers):
            work = logs / f"worker-{i}"
            work.mkdir()
            start(f"worker-{i}", "org.apache.spark.deploy.worker.Worker", "--host", _LOOPBACK, "--webui-port",
                  str(_free_port()), "--cores", str(CORES_PER_WORKER), "--memory", WORKER_MEMORY,
                  "--work-dir", str(work), url)
        deadline = time.monotonic() + timeout_s
        while _alive_workers(ui_port) < workers:
            dead = [p.args for p in procs if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                why = f"exited: {dead}" if dead else "timeout"
                raise RuntimeError(f"the standalone cluster did not come up ({why}); logs in {logs}")
            time.sleep(0.5)
        yield url
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def cluster_conf() -> dict[str, str]:
    """What a session on the cluster needs beyond the engine's own settings: the driver on loopback, the
    executors' Python path as the driver's, one executor of one core per worker."""
    return {"spark.driver.host": _LOOPBACK, "spark.driver.bindAddress": _LOOPBACK,
            "spark.executorEnv.PYTHONPATH": os.pathsep.join(dict.fromkeys(
                [os.getcwd(), *[p for p in sys.path if p and os.path.isdir(p)],
                 *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]])),
            "spark.executorEnv.SPARK_LOCAL_IP": _LOOPBACK,
            "spark.executor.cores": str(CORES_PER_WORKER), "spark.executor.memory": "768m",
            "spark.cores.max": str(WORKERS * CORES_PER_WORKER)}


@contextmanager
def session_for(master: str, app_name: str, conf: Mapping[str, str]) -> Iterator[Any]:
    """A SparkSession on `master` (a Spark master URL, or `CLUSTER` for a standalone cluster started
    here), stopped at the end (with the cluster)."""
    from streamlet.spark.session import spark_session

    if master != CLUSTER:
        spark = spark_session(master, app_name, conf)
        try:
            yield spark
        finally:
            spark.stop()
        return
    with standalone_cluster() as url:
        spark = spark_session(url, app_name, {**dict(conf), **cluster_conf()})
        try:
            _wait_for_executors(spark, WORKERS)
            yield spark
        finally:
            spark.stop()


def _wait_for_executors(spark: Any, count: int, timeout_s: float = 120.0) -> None:
    """Block until `count` executors registered (the first micro-batch would otherwise run on fewer)."""
    tracker = spark.sparkContext._jsc.sc().statusTracker()
    deadline = time.monotonic() + timeout_s
    while len(tracker.getExecutorInfos()) - 1 < count:  # the driver is listed too
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {len(tracker.getExecutorInfos()) - 1} of {count} executors registered")
        time.sleep(0.5)
