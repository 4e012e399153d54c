"""The workers' daemon imports the installed pyspark, not Spark's zip archive (see `worker_daemon`)."""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyspark

from streamlet.spark.session import warm_up_workers
from streamlet.spark.worker_daemon import PRELOADED, prefer_installed_pyspark, preload


def _archives(tmp_path: Path, version: str) -> list[str]:
    archive = tmp_path / "pyspark.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("pyspark/version.py", f'__version__: str = "{version}"\n')
    py4j = tmp_path / "py4j-0.10.9.9-src.zip"
    with zipfile.ZipFile(py4j, "w") as zipped:
        zipped.writestr("py4j/__init__.py", "")
    return [str(archive), str(py4j)]


def test_archives_move_behind_an_installed_pyspark_of_their_version(tmp_path: Path) -> None:
    archives = _archives(tmp_path, pyspark.__version__)
    path = [*archives, "/app", "/site-packages"]
    assert prefer_installed_pyspark(path)
    assert path == ["/app", "/site-packages", *archives]


def test_archives_stay_first_when_the_installed_pyspark_differs(tmp_path: Path) -> None:
    archives = _archives(tmp_path, "3.5.0")
    path = [*archives, "/site-packages"]
    assert not prefer_installed_pyspark(path)
    assert path == [*archives, "/site-packages"]


def test_a_path_without_archives_is_left_alone() -> None:
    path = ["/app", "/site-packages"]
    assert not prefer_installed_pyspark(path)
    assert path == ["/app", "/site-packages"]


def test_the_engines_workers_import_the_installed_pyspark(spark: Any) -> None:
    def where(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa
        import pyspark as worker_pyspark

        for _batch in batches:
            yield pa.RecordBatch.from_pydict({"file": [worker_pyspark.__file__]})

    [row] = spark.range(1).mapInArrow(where, "file string").collect()
    assert ".zip" not in row.file
    assert Path(row.file) == Path(pyspark.__file__)


def test_a_failing_preload_is_left_to_the_worker() -> None:
    assert preload(("json", "streamlet_no_such_module")) == ["streamlet_no_such_module"]


def test_workers_start_with_the_engines_modules_imported(spark: Any) -> None:
    """A plain Python UDF imports neither pyarrow nor the engine's task modules; its worker has them all the
    same, imported once by the daemon it was forked from."""

    def imported(_row: Any) -> list[str]:
        import sys

        return sorted(name for name in PRELOADED if name in sys.modules)

    [found] = spark.sparkContext.parallelize([0], 1).map(imported).collect()
    assert found == sorted(PRELOADED)


def test_workers_start_with_the_daemons_objects_frozen(spark: Any) -> None:
    """What the daemon imported is out of the collector's reach in its workers: pyspark's full
    `gc.collect()` after every task does not walk it again."""

    def frozen(_row: Any) -> int:
        import gc

        return gc.get_freeze_count()

    [count] = spark.sparkContext.parallelize([0], 1).map(frozen).collect()
    assert count > 10_000


def _parent(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rindex(")") + 2:].split()[1])


def test_the_warm_up_starts_workers_of_the_daemon_the_engines_arrow_tasks_use(spark: Any) -> None:
    """The warm-up's workers and a `mapInArrow` task's come from one daemon: it started the workers the
    queries' tasks run in. Spark keeps a daemon per worker environment, and `mapInArrow`'s had
    `SPARK_SIMPLIFIED_TRACEBACK` in it (see `session.configure`)."""

    def parent(batches: Iterator[Any]) -> Iterator[Any]:
        import os

        import pyarrow as pa

        for _batch in batches:
            yield pa.RecordBatch.from_pydict({"parent": [os.getppid()], "flag": [os.environ.get(
                "SPARK_SIMPLIFIED_TRACEBACK", "unset")]})

    warm_up = warm_up_workers(spark)
    warm_up.join(120)
    assert not warm_up.is_alive()
    assert len(warm_up.workers) >= 1
    daemons = {_parent(pid) for pid in warm_up.workers}
    rows = spark.range(2, numPartitions=2).mapInArrow(parent, "parent long, flag string").collect()
    assert {row.flag for row in rows} == {"unset"}
    assert {row.parent for row in rows} == daemons
    assert len(daemons) == 1
