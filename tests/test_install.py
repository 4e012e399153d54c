"""Installing streamlet without make: `pip install .` and `pip wheel .` in fresh virtual environments.

What a user does on a machine with Python, a C compiler and Java, checked offline:

- `pip install .` (non-editable) into a fresh venv gives the `streamlet` command and the mypyc-compiled hot path
  (the build manifest is installed and every hot module loads from its extension module), a tiny topology runs on
  the TopologyTestDriver, and `streamlet broker start` starts a real KRaft broker on loopback from that install,
  which then takes and serves records (aiokafka, from the same venv) until `streamlet broker stop`;
- `pip wheel .` then installing the wheel into another fresh venv, with the compiler taken away (`CC=/nonexistent`):
  the build falls back to pure Python, and the installed `streamlet version` says so and why.

`pip install .` is the PEP 517 backend's `build_wheel` followed by installing that wheel, the very call `pip wheel .`
makes: so the two tests together cover both commands on both branches of setup.py (compiled, fallback) with one
mypyc compilation (about a minute) instead of two.

Offline: nothing is downloaded. The builds run with `--no-index --no-build-isolation --check-build-dependencies`
(so pyproject's [build-system] requirements must be what setup.py needs, and be there); the suite's venv lends its
installed dependencies to the fresh venvs through a directory of links to its site-packages entries, without its
own (editable) streamlet, so the fresh venvs can only import the streamlet they installed (each test checks
`streamlet.__file__`). The source is copied to a temporary directory first (pip builds in the tree it is given:
`build/` and `*.egg-info` land in the copy, never in the checkout).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from pathlib import Path

import pytest

import streamlet._compiled as compiled
from streamlet.cli import main as cli_main
from streamlet.cli.main import _log_hot_path
from streamlet.testing import local_broker

ROOT = Path(__file__).resolve().parents[1]
_SOURCE_FILES = ("pyproject.toml", "setup.py", "README.md", "LICENSE")
_BUILD_LEFTOVERS = ("__pycache__", "*.pyc", "*.so", compiled.MANIFEST_NAME, compiled.FALLBACK_NAME)
_PIP_OFFLINE = ("--no-index", "--no-build-isolation", "--check-build-dependencies")

_PROBE = textwrap.dedent("""
    import importlib, json, sys
    import streamlet, streamlet._compiled as c
    for m in c.HOT_MODULES:
        importlib.import_module(m)
    from streamlet import Consumed, Grouped, Materialized, Produced, Serdes, StreamsBuilder
    from streamlet.testing import TopologyTestDriver
    builder = StreamsBuilder()
    (builder.stream("lines", Consumed(key_serde=Serdes.String(), value_serde=Serdes.String()))
        .flat_map_values(lambda line: line.split())
        .group_by(lambda _k, word: word, Grouped(key_serde=Serdes.String(), value_serde=Serdes.String()))
        .count(Materialized("counts"))
        .to_stream().to("counts", Produced(key_serde=Serdes.String(), value_serde=Serdes.Long())))
    with TopologyTestDriver(builder.build(), {"application.id": "install-probe"}) as driver:
        lines = driver.create_input_topic("lines", Serdes.String(), Serdes.String())
        for line in ("a b a", "b a"):
            lines.pipe_input(None, line)
        out = driver.create_output_topic("counts", Serdes.String(), Serdes.Long())
        counts = out.read_key_values_to_map()
    print(json.dumps({"file": streamlet.__file__, "compiled": c.COMPILED, "reason": c.REASON,
                      "files": c.in_use(), "counts": counts, "path": sys.path}))
""")

_PRODUCE_CONSUME = textwrap.dedent("""
    import asyncio, sys
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    async def main(servers):
        producer = AIOKafkaProducer(bootstrap_servers=servers)
        await producer.start()
        try:
            for i in range(3):
                await producer.send_and_wait("install-check", f"record-{i}".encode())
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer("install-check", bootstrap_servers=servers, auto_offset_reset="earliest",
                                    group_id=None, enable_auto_commit=False)
        await consumer.start()
        try:
            seen = []
            while len(seen) < 3:
                batch = await asyncio.wait_for(consumer.getmany(timeout_ms=1000), 60)
                seen += [r.value.decode() for records in batch.values() for r in records]
            print(" ".join(seen))
        finally:
            await consumer.stop()

    asyncio.run(main(sys.argv[1]))
""")


# -- fresh venvs ----------------------------------------------------------------------------------

def _copy_source(target: Path) -> Path:
    """What `pip install .` reads from the checkout (the package, its build files), without build leftovers."""
    target.mkdir(parents=True)
    for name in _SOURCE_FILES:
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, target / name)
    shutil.copytree(ROOT / "streamlet", target / "streamlet", ignore=shutil.ignore_patterns(*_BUILD_LEFTOVERS))
    return target


def _suite_dependencies(target: Path) -> Path:
    """A directory of links to the suite venv's installed distributions, except streamlet itself (its editable
    install points at the checkout) and the `.pth` files (which would run its import hooks)."""
    target.mkdir(parents=True)
    for site in dict.fromkeys((sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"])):
        for entry in Path(site).iterdir():
            name = entry.name.lower()
            if name.startswith(("streamlet", "__editable__")) or name.endswith(".pth") or name == "__pycache__":
                continue
            if not (target / entry.name).exists():
                (target / entry.name).symlink_to(entry)
    return target


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment without whatever points a Python at the checkout or at the suite's venv."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP", compiled.PURE_ENV)
           and not k.startswith("PIP_")}
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1", PIP_NO_CACHE_DIR="1", **extra)
    return env


def _run(args: list[str | Path], cwd: Path, env: dict[str, str], timeout: float = 600,
         ok: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True,
                            timeout=timeout, stdin=subprocess.DEVNULL, check=False)
    if ok:
        assert result.returncode == 0, f"{args}: {result.returncode}\n{result.stdout[-3000:]}\n{result.stderr[-5000:]}"
    return result


class FreshVenv:
    """A venv made by the suite's interpreter, without pip of its own (pip comes with the lent dependencies)."""

    def __init__(self, path: Path, dependencies: Path) -> None:
        self.path = path
        env = _clean_env()
        _run([sys.executable, "-m", "venv", "--without-pip", path], cwd=path.parent, env=env, timeout=120)
        self.python = path / "bin" / "python"
        site = _run([self.python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                    cwd=path.parent, env=env).stdout.strip()
        self.site_packages = Path(site).resolve()
        (self.site_packages / "_streamlet_suite_dependencies.pth").write_text(f"{dependencies}\n")

    def pip(self, *args: str | Path, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return _run([self.python, "-m", "pip", *args], cwd=cwd, env=_clean_env(**(env or {})))

    def streamlet(self, *args: str, cwd: Path, env: dict[str, str] | None = None,
                  ok: bool = True) -> subprocess.CompletedProcess[str]:
        return _run([self.path / "bin" / "streamlet", *args], cwd=cwd, env=_clean_env(**(env or {})), timeout=240,
                    ok=ok)

    def probe(self, cwd: Path) -> dict[str, object]:
        out = _run([self.python, "-c", _PROBE], cwd=cwd, env=_clean_env(), timeout=240).stdout
        result: dict[str, object] = json.loads(out.strip().splitlines()[-1])
        assert Path(str(result["file"])).resolve().is_relative_to(self.site_packages), result
        assert result["counts"] == {"a": 3, "b": 2}, result
        return result

    def installed_package(self) -> Path:
        return self.site_packages / "streamlet"


def _have_c_compiler() -> bool:
    return bool(shutil.which(os.environ.get("CC", "cc").split()[0]) or shutil.which("gcc"))


def _data_files(package: Path) -> set[str]:
    """The package's files that are not Python sources or build products, relative to it."""
    built = (compiled.MANIFEST_NAME, compiled.FALLBACK_NAME)
    return {str(p.relative_to(package)) for p in package.rglob("*")
            if p.is_file() and p.suffix not in (".py", ".pyc", ".so") and "__pycache__" not in p.parts
            and p.name not in built}


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> FreshVenv:
    """`pip install .` into a fresh venv, with the C compiler there: the compiled hot path."""
    if not _have_c_compiler():
        pytest.skip("no C compiler here: the compiled install cannot be checked (the fallback test still runs)")
    base = tmp_path_factory.mktemp("pip-install")
    source = _copy_source(base / "src")
    venv = FreshVenv(base / "venv", _suite_dependencies(base / "deps"))
    venv.pip("install", *_PIP_OFFLINE, ".", cwd=source)
    return venv


# -- pip install . --------------------------------------------------------------------------------

def test_pip_install_gives_the_command_and_the_compiled_hot_path(installed: FreshVenv) -> None:
    cwd = installed.path.parent
    package = installed.installed_package()
    assert (package / compiled.MANIFEST_NAME).is_file()
    assert not (package / compiled.FALLBACK_NAME).exists()
    assert _data_files(package) == _data_files(ROOT / "streamlet")  # poms, log4j configs, py.typed

    assert "broker" in installed.streamlet("--help", cwd=cwd).stdout
    version = installed.streamlet("version", cwd=cwd).stdout
    assert "hot path: compiled (mypyc)" in version, version
    assert f"package: {package}" in version, version

    result = installed.probe(cwd)
    assert result["compiled"] is True, result["reason"]
    files = result["files"]
    assert isinstance(files, dict) and sorted(files) == sorted(compiled.HOT_MODULES)
    assert all(Path(f).resolve().is_relative_to(package) for f in files.values()), files
    assert all(f.endswith(".so") for f in files.values()), files


@pytest.mark.broker
def test_broker_start_from_the_install(installed: FreshVenv, tmp_path: Path) -> None:
    """`streamlet broker start` of the installed package: its cache (jars, the dev broker's state) is wherever
    STREAMLET_CACHE_DIR says; here a fresh one holding only a link to the jars the suite fetched already."""
    version = local_broker.default_kafka_version()
    jars = local_broker.ensure_kafka_jars(version=version)
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / f"kafka-{version}").symlink_to(jars.parent)
    env = {"STREAMLET_CACHE_DIR": str(cache), local_broker.VERSION_ENV: version}
    port = local_broker.free_ports(1)[0]
    state_file = cache / "dev-broker" / "state.json"
    try:
        assert installed.streamlet("broker", "status", cwd=tmp_path, ok=False, env=env).returncode == 3
        started = installed.streamlet("broker", "start", "--port", str(port), cwd=tmp_path, env=env)
        assert started.stdout.strip() == f"127.0.0.1:{port}", started
        assert f"running at 127.0.0.1:{port}" in installed.streamlet("broker", "status", cwd=tmp_path, env=env).stdout
        assert str(cache / "dev-broker" / "data") in json.loads(state_file.read_text())["data_dir"]

        echoed = _run([installed.python, "-c", _PRODUCE_CONSUME, f"127.0.0.1:{port}"], cwd=tmp_path,
                      env=_clean_env(), timeout=180)
        assert echoed.stdout.split() == ["record-0", "record-1", "record-2"], echoed

        stopped = installed.streamlet("broker", "stop", cwd=tmp_path, env=env)
        assert stopped.stdout.strip() == f"stopped the broker at 127.0.0.1:{port}"
        assert installed.streamlet("broker", "status", cwd=tmp_path, ok=False, env=env).returncode == 3
    finally:
        if state_file.exists():  # a failed assertion above: no broker left behind
            pid = json.loads(state_file.read_text())["pid"]
            if local_broker._pid_alive(pid) and "kafka.Kafka" in local_broker._pid_command_line(pid):
                local_broker.terminate_pid(pid, 30)


# -- pip wheel . without a C compiler -------------------------------------------------------------

def test_pip_wheel_without_a_compiler_installs_pure_python_and_says_so(tmp_path: Path) -> None:
    source = _copy_source(tmp_path / "src")
    venv = FreshVenv(tmp_path / "venv", _suite_dependencies(tmp_path / "deps"))
    wheels = tmp_path / "wheels"
    venv.pip("wheel", *_PIP_OFFLINE, "--no-deps", "-w", wheels, ".", cwd=source, env={"CC": "/nonexistent"})
    (wheel,) = wheels.glob("streamlet-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        assert archive.read(f"streamlet/{compiled.FALLBACK_NAME}").decode().strip() == "no C compiler found"
    assert f"streamlet/{compiled.MANIFEST_NAME}" not in names
    assert not [n for n in names if n.endswith(".so")], names

    venv.pip("install", "--no-index", wheel, cwd=tmp_path)
    version = venv.streamlet("version", cwd=tmp_path).stdout
    assert "hot path: pure Python (not compiled at install: no C compiler found)" in version, version
    result = venv.probe(tmp_path)
    assert result["compiled"] is False
    assert result["reason"] == "not compiled at install: no C compiler found"
    files = result["files"]
    assert isinstance(files, dict) and all(f.endswith(".py") for f in files.values()), files


# -- what the command says about the hot path (in process) ----------------------------------------

def test_version_names_the_hot_path(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["version"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("streamlet ")
    assert f"hot path: {compiled.describe()}\n" in out
    assert "cache: " in out


def test_run_warns_when_the_hot_path_fell_back_unasked(monkeypatch: pytest.MonkeyPatch,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="streamlet.cli")
    for is_compiled, reason, level in ((True, "compiled with mypyc", logging.INFO),
                                       (False, f"{compiled.PURE_ENV} is set", logging.INFO),
                                       (False, "not compiled at install: no C compiler found", logging.WARNING)):
        monkeypatch.setattr(compiled, "COMPILED", is_compiled)
        monkeypatch.setattr(compiled, "REASON", reason)
        caplog.clear()
        _log_hot_path()
        (record,) = caplog.records
        assert record.levelno == level
        assert record.getMessage().startswith(f"hot path: {compiled.describe()}")


def test_a_fallback_build_leaves_its_reason(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(compiled, "_PACKAGE_DIR", tmp_path)
    assert compiled._decide({}) == (False, "not compiled: no build manifest")
    (tmp_path / compiled.FALLBACK_NAME).write_text("mypyc (the mypy package) was not installed\n")
    assert compiled._decide({}) == (False, "not compiled at install: mypyc (the mypy package) was not installed")
    assert compiled._decide({compiled.PURE_ENV: "1"}) == (False, f"{compiled.PURE_ENV} is set")
