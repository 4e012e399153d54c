"""The mypyc-compiled hot path (setup.py, streamlet/_compiled.py): in use when built and current, never when
`STREAMLET_PURE_PYTHON=1` or a source changed since the build, and the pure-Python modules still pass.

The rest of the suite runs whatever this checkout has (compiled after `make test`'s set-up on a machine
with a C compiler); the subprocesses here pin each mode."""

from __future__ import annotations

import importlib.machinery
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import streamlet._compiled as compiled

ROOT = Path(__file__).resolve().parent.parent
_PROBE = (
    "import json, importlib, streamlet, streamlet._compiled as c\n"
    "for m in c.HOT_MODULES: importlib.import_module(m)\n"
    "print(json.dumps({'compiled': c.COMPILED, 'reason': c.REASON, 'files': c.in_use()}))\n"
)


def _probe(pure: bool) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != compiled.PURE_ENV}
    if pure:
        env[compiled.PURE_ENV] = "1"
    out = subprocess.run([sys.executable, "-W", "error", "-c", _PROBE], cwd=ROOT, env=env, capture_output=True,
                         text=True, check=True, timeout=120)
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def _built() -> bool:
    return (Path(compiled.__file__).parent / compiled.MANIFEST_NAME).exists()


def test_compiled_modules_are_in_use_when_built() -> None:
    """Where a C compiler is installed the build must have happened: a compilation mypyc refuses (an edit
    it cannot compile) only warns at install, and would otherwise go unnoticed as a slower pure-Python run."""
    if not _built():
        if shutil.which("cc") or shutil.which("gcc"):
            pytest.fail("a C compiler is here but the hot path is not compiled: run `make compile` and read its "
                        "warning (setup.py)")
        pytest.skip("the hot path is not compiled here (no C compiler when installed); see setup.py")
    result = _probe(pure=False)
    assert result["compiled"], result["reason"]
    assert sorted(result["files"]) == sorted(compiled.HOT_MODULES)
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    assert all(f.endswith(suffixes) for f in result["files"].values()), result["files"]


def test_pure_python_when_asked() -> None:
    result = _probe(pure=True)
    assert not result["compiled"]
    assert result["reason"] == f"{compiled.PURE_ENV} is set"
    assert sorted(result["files"]) == sorted(compiled.HOT_MODULES)
    assert all(f.endswith(".py") for f in result["files"].values()), result["files"]


def test_a_changed_source_is_never_shadowed_by_its_compiled_module(monkeypatch: pytest.MonkeyPatch) -> None:
    if not _built():
        pytest.skip("the hot path is not compiled here")
    edited = compiled.source_path("streamlet.stores.keyvalue.caching")
    real = compiled.source_digest
    monkeypatch.setattr(compiled, "source_digest", lambda p: "edited" if p == edited else real(p))
    use, reason = compiled._decide({})
    assert not use
    assert reason == f"stale: {edited} changed since it was compiled"
    monkeypatch.setattr(compiled, "source_digest", real)
    assert compiled._decide({compiled.PURE_ENV: "0"}) == (True, "compiled with mypyc")


def test_pure_finder_loads_the_source_file() -> None:
    spec = compiled._PureSourceFinder().find_spec("streamlet.stores.cache", None)
    assert spec is not None and spec.origin == str(compiled.source_path("streamlet.stores.cache"))
    assert compiled._PureSourceFinder().find_spec("streamlet.stores.api", None) is None


def test_wordcount_and_the_driver_tests_pass_in_pure_python() -> None:
    """The driver tests (WordCount among them) and the DSL's records-as-Kafka-Streams tests, on the `.py`
    modules; the surrounding suite runs them on the compiled ones."""
    env = {**os.environ, compiled.PURE_ENV: "1"}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/driver",
                           "tests/dsl/test_dsl_java_behaviour.py", "tests/stores/test_caching.py",
                           "tests/stores/test_typed_store.py", "tests/stores/test_changelogging.py",
                           "tests/stores/test_timestamped.py", "tests/actors/test_task_progress.py"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout and "failed" not in proc.stdout


def test_suppliers_in_a_topology_pickle_compiled_or_not() -> None:
    """The Spark engine pickles topologies: a supplier in a compiled module must stay a plain class (a mypyc
    native class can be neither built by pickle's `__new__` nor given its attributes back)."""
    import pickle

    from streamlet.dsl.processors.aggregate import (
        StreamAggregateSupplier,
        StreamReduceSupplier,
        count_aggregator,
        count_initializer,
    )
    from streamlet.dsl.processors.window_aggregate import WindowAggregateSupplier
    from streamlet.dsl.time_windows import TimeWindows

    agg = StreamAggregateSupplier("s", count_initializer, count_aggregator)
    agg.enable_sending_old_values()
    back = pickle.loads(pickle.dumps(agg))
    assert (back.store_name, back.send_old_values, back.aggregator) == ("s", True, count_aggregator)
    reduce = pickle.loads(pickle.dumps(StreamReduceSupplier("r", max)))
    assert (reduce.store_name, reduce.reducer) == ("r", max)
    windows = TimeWindows.of_size_with_no_grace(10)
    win = pickle.loads(pickle.dumps(WindowAggregateSupplier("w", windows, count_initializer, count_aggregator)))
    assert win.windows == windows
    from streamlet.dsl.processors.table import TableSourceSupplier

    table = pickle.loads(pickle.dumps(TableSourceSupplier("t", "q")))
    assert (table.store_name, table.queryable_name) == ("t", "q")
