"""pyspark's Python worker daemon, run with the installed pyspark ahead of Spark's zip archives.

Spark starts its Python workers with `pyspark.zip` and py4j's zip first on their PYTHONPATH, so they
import pyspark from those archives, and Python caches no bytecode for modules imported from a zip: the
daemon and every worker it forks compiled pyspark's modules from source again (the daemons' and
workers' start-up samples were mostly `zipimport._compile_source`; importing the modules a worker
needs took 0.72-0.74 CPU s from the zip against 0.33-0.39 s from the installed package). The engine's
session makes the workers run the driver's interpreter (see `session`), which has the very same pyspark
installed, so this daemon moves the archives behind it on `sys.path` before anything imports pyspark,
then runs pyspark's own daemon unchanged. An interpreter without an installed pyspark of the same
version keeps importing from the archives.

The daemon also imports, once, the modules every worker of the engine imports on its first task
(`PRELOADED`: pyarrow, pandas, pyspark's worker and Arrow serializers, the engine's task modules with
their Kafka client): pyspark's daemon forks a worker per task slot and again whenever one exits, and
a forked worker finds them already imported instead of importing them itself. Measured on
`benchmarks.spark_bench`'s WordCount (local[2], py-spy over the daemon and its workers): 23% of the
Python samples were workers importing, most of it `import pyarrow` in the first `mapInArrow` task and
pyspark's `read_udfs`. A module that fails to import here is left to the worker, which reports it.

Everything the preload made is then frozen (`gc_tuning.freeze_long_lived`; the daemon keeps the
default thresholds, since its workers run other UDFs too): pyspark's daemon runs a full `gc.collect()`
in a worker after every task it reuses that worker for, and a full collection walks every object
the imports made (about 98,000, 0.1 s here); frozen before the fork, they are out of every
collection in every worker, and their memory pages stay shared with the daemon.

The session names this module in `spark.python.daemon.module`; `python -m` imports only the
`streamlet` and `streamlet.spark` packages first, neither of which imports pyspark.
"""

from __future__ import annotations

import importlib.metadata
import os
import sys

_ARCHIVES = ("pyspark.zip", "py4j-")

PRELOADED = ("pyarrow", "pandas", "pyspark.worker", "pyspark.sql.pandas.serializers",
             "streamlet.spark.task_processor", "streamlet.spark.stateless", "aiokafka")
"""Imported by the daemon before it forks workers (see the module docstring). None starts a thread on
import, so the forked workers inherit them safely."""


def _is_spark_archive(entry: str) -> bool:
    name = os.path.basename(entry)
    return name.endswith(".zip") and name.startswith(_ARCHIVES)


def _archive_version(archives: list[str]) -> str | None:
    """The pyspark version in Spark's archive (what the JVM runs), read from the archive's `version.py`."""
    import zipfile

    for archive in archives:
        if os.path.basename(archive) == "pyspark.zip":
            with zipfile.ZipFile(archive) as zipped:
                text = zipped.read("pyspark/version.py").decode()
            return text.split("=", 1)[1].strip().strip("\"'") if "=" in text else None
    return None


def prefer_installed_pyspark(path: list[str]) -> bool:
    """Move Spark's archives to the end of `path` when an installed pyspark of their version is there
    too; True if it did."""
    archives = [entry for entry in path if _is_spark_archive(entry)]
    if not archives:
        return False
    try:
        installed = importlib.metadata.version("pyspark")
        wanted = _archive_version(archives)
    except (OSError, KeyError, importlib.metadata.PackageNotFoundError):
        return False
    if wanted is None or installed != wanted:
        return False
    path[:] = [entry for entry in path if entry not in archives] + archives
    return True


def preload(modules: tuple[str, ...] = PRELOADED) -> list[str]:
    """Import `modules` now; returns those that failed (each worker then imports, and fails, itself)."""
    import importlib

    failed = []
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # the worker that needs it raises it where Spark reports it
            failed.append(name)
    return failed


def main() -> None:
    prefer_installed_pyspark(sys.path)
    preload()
    from pyspark import daemon

    from streamlet.runtime.gc_tuning import freeze_long_lived  # after the path is set and the preloads ran

    freeze_long_lived()
    daemon.manager()


if __name__ == "__main__":
    main()
