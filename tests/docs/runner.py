"""Runs a page's blocks in order, as a reader would, against the session's real broker.

- Python blocks run in this process, one namespace per page, with the saved files (`# NAME.py`
  blocks of every page) importable; every function a block defines named `test_*` is called with the
  fixtures it names (a coroutine on asyncio), and every one named `topology` or `*_topology` taking
  no argument is built and described. A `script` block runs as a program in the background; a
  `given streams = MODULE:FUNCTION` block runs beside a running `KafkaStreams` of that topology.
- Shell blocks: each command runs in bash in the page's work directory. `streamlet run` and
  `streamlet spark run` (which run until Ctrl-C) are started in the background and waited for until
  they run; at the end of their section they get SIGINT and must exit 0. `make TARGET` is checked to
  be a target of the Makefile, and `pip install` / `pip wheel` to install or build this package (from the
  checkout, a git URL or a wheel it built, with extras pyproject.toml defines); neither is run.
- Console blocks: `$ ` lines are commands, the lines after one are what it prints; the command is
  repeated until its output matches (JSON: every documented field has the documented value), since
  what a running application answers settles over a few seconds.

The only changes made to what the reader sees: `127.0.0.1:9092` becomes the test broker's address and
`127.0.0.1:8080` a free port.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
import tomllib
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hypothesis

from tests.docs.blocks import REPO, Block, section_of

DOC_BOOTSTRAP = "127.0.0.1:9092"
DOC_HTTP = "127.0.0.1:8080"
_READY = {"run": re.compile(r"state transition from \w+ to RUNNING"),
          "spark run": re.compile(r"streamlet spark: running \d+ queries")}
_STARTUP_S = 240.0
_SETTLE_S = 90.0


@dataclass
class _Background:
    """A command or script started in the background, stopped when its section ends."""

    what: str
    where: str
    section: tuple[tuple[int, str], ...]
    process: subprocess.Popen[bytes]
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]


@dataclass
class PageRun:
    """The state of one page's run: its namespace, work directory and background processes."""

    work: Path
    bootstrap: str
    http: str
    fixtures: dict[str, Any]
    namespace: dict[str, Any] = field(default_factory=dict)  # a module's, registered in sys.modules
    background: list[_Background] = field(default_factory=list)
    dev_broker_started: bool = False
    dev_registry_started: bool = False
    _count: int = 0

    # -- the environment ------------------------------------------------------------------------------
    def substitute(self, text: str) -> str:
        return text.replace(DOC_BOOTSTRAP, self.bootstrap).replace(DOC_HTTP, self.http)

    def env(self) -> dict[str, str]:
        tmp = self.work.parent / "tmp"
        tmp.mkdir(exist_ok=True)
        path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
        return dict(os.environ, PYTHONPATH=os.pathsep.join([str(self.work), str(REPO)]), PATH=path,
                    TMPDIR=str(tmp), PYTHONUNBUFFERED="1",
                    STREAMLET_DEV_BROKER_DIR=str(self.work.parent / "dev-broker"),
                    STREAMLET_DEV_REGISTRY_DIR=str(self.work.parent / "dev-registry"))

    def _log_path(self, stem: str) -> Path:
        self._count += 1
        return self.work.parent / f"{self._count:02d}-{stem}.log"

    # -- sections -------------------------------------------------------------------------------------
    def enter(self, block: Block) -> None:
        """Stop the background processes whose section ended before `block`."""
        keep = section_of(block)
        for bg in list(self.background):
            if bg.section != keep[:len(bg.section)]:
                self._stop(bg)

    def finish(self) -> None:
        try:
            for bg in list(self.background):
                self._stop(bg)
        finally:
            for bg in self.background:
                _signal_group(bg.process, signal.SIGKILL)
            for started, tool in ((self.dev_broker_started, "broker"), (self.dev_registry_started, "registry")):
                if started:
                    subprocess.run(["streamlet", tool, "stop"], cwd=self.work, env=self.env(),
                                   capture_output=True, timeout=120)

    def _stop(self, bg: _Background) -> None:
        self.background.remove(bg)
        _signal_group(bg.process, signal.SIGINT)  # Ctrl-C in a terminal: the whole process group
        try:
            code = bg.process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            _signal_group(bg.process, signal.SIGKILL)
            bg.process.wait()
            raise AssertionError(f"{bg.where}: `{bg.what}` did not stop within 120 s of Ctrl-C:\n"
                                 f"{bg.output()}") from None
        assert code == 0, f"{bg.where}: `{bg.what}` exited {code} on Ctrl-C:\n{bg.output()}"

    # -- Python -------------------------------------------------------------------------------------
    def run_python(self, block: Block) -> None:
        code = self.substitute(block.code)
        if block.file_name:
            module_name = block.file_name[:-3]
            sys.modules.pop(module_name, None)
            module = importlib.import_module(module_name)
            self._exercise(vars(module), set(), block)
            return
        if block.annotation == "script":
            self._start_script(block, code)
            return
        given = re.fullmatch(r"given\s+streams\s*=\s*(\S+)", block.annotation or "")
        before = set(self.namespace)
        compiled = compile(code, block.where, "exec", dont_inherit=True)
        if given:
            asyncio.run(self._with_streams(given.group(1), compiled, block))
        else:
            exec(compiled, self.namespace)
        self._exercise(self.namespace, before, block)

    def _exercise(self, names: dict[str, Any], before: set[str], block: Block) -> None:
        """Call the block's tests and build its topologies."""
        from streamlet.topology import Topology

        for name, value in list(names.items()):
            if name in before or not inspect.isfunction(value) or value.__module__ not in (
                    names.get("__name__"), "builtins"):
                continue
            if name.startswith("test_"):
                self._call_test(value, block)
            elif name == "topology" or name.endswith("_topology"):
                required = [p for p in inspect.signature(value).parameters.values() if p.default is p.empty]
                if required:
                    continue
                built = value()
                if isinstance(built, tuple):
                    built = built[0]
                if not isinstance(built, Topology):
                    built = built.build()
                assert isinstance(built, Topology), f"{block.where}: {name}() built {built!r}"
                assert str(built.describe()).startswith("Topologies:"), block.where

    def _call_test(self, test: Callable[..., Any], block: Block) -> None:
        inner = getattr(getattr(test, "hypothesis", None), "inner_test", test)
        wanted = list(inspect.signature(inner).parameters)
        if hasattr(test, "hypothesis"):
            wanted = [name for name in wanted if name in self.fixtures]
            # What the property says is checked, not how fast examples come on a loaded machine.
            test = hypothesis.settings(max_examples=25, deadline=None,
                                       suppress_health_check=[hypothesis.HealthCheck.too_slow])(test)
        args = {}
        for name in wanted:
            assert name in self.fixtures, f"{block.where}: {test.__name__} asks for an unknown fixture {name!r}"
            args[name] = self.fixtures[name]() if name == "tmp_path" else self.fixtures[name]
        result = test(**args)
        if inspect.iscoroutine(result):
            asyncio.run(result)

    async def _with_streams(self, target: str, compiled: Any, block: Block) -> None:
        from streamlet import KafkaStreams
        from streamlet.cli import load_target
        from streamlet.kafka.topic_manager import create_user_topics

        topology, _ = load_target(target)
        config = {"application.id": f"docs-{uuid.uuid4().hex[:8]}", "bootstrap.servers": self.bootstrap,
                  "state.dir": str(self.fixtures["tmp_path"]()), "statestore.cache.max.bytes": 0}
        await create_user_topics(topology, config, 1)
        async with KafkaStreams(topology, config) as streams:
            deadline = time.monotonic() + _STARTUP_S
            while streams.state.name != "RUNNING":
                assert time.monotonic() < deadline, f"{block.where}: {target} did not reach RUNNING"
                await asyncio.sleep(0.2)
            exec(compiled, {**self.namespace, "streams": streams})

    def _start_script(self, block: Block, code: str) -> None:
        script = self.work / f"doc_script_{block.line}.py"
        script.write_text(code)
        app_id = re.search(r"""["']application\.id["']\s*:\s*["']([^"']+)""", code)
        assert app_id, f"{block.where}: a script block must set its application.id"
        bg = self._spawn(f"python {script.name}", block, [sys.executable, script.name])
        self._wait_for_group(bg, app_id.group(1))

    # -- shell ----------------------------------------------------------------------------------------
    def run_shell(self, block: Block) -> None:
        for command in _commands(block.code):
            self.run_command(command, block)

    def run_console(self, block: Block) -> None:
        for command, expected in _console(block.code):
            self.run_command(command, block, self.substitute(expected))

    def run_command(self, command: str, block: Block, expected: str | None = None) -> None:
        words = shlex.split(command, comments=True)
        assert words, f"{block.where}: an empty command"
        command = self.substitute(command)
        if words[0] == "make":
            targets = re.findall(r"^([\w.-]+):", (REPO / "Makefile").read_text(), re.MULTILINE)
            assert len(words) == 2 and words[1] in targets, f"{block.where}: no make target in {command!r}"
            return
        if words[0] == "pip":
            _check_pip(words, block)
            return
        assert words[0] in ("streamlet", "python", "curl"), f"{block.where}: what runs {command!r}?"
        long_running = next((kind for kind in _READY if words[1:1 + len(kind.split())] == kind.split()), None)
        if words[0] == "streamlet" and long_running:
            bg = self._spawn(command, block, ["bash", "-c", command])
            self._wait_for_log(bg, _READY[long_running])
            return
        if words[:3] == ["streamlet", "broker", "start"]:
            self.dev_broker_started = True
        if words[:3] == ["streamlet", "registry", "start"]:
            self.dev_registry_started = True
        deadline = time.monotonic() + (_SETTLE_S if expected is not None else 0)
        while True:
            done = subprocess.run(["bash", "-c", command], cwd=self.work, env=self.env(), capture_output=True,
                                  text=True, timeout=900)
            assert done.returncode == 0, (f"{block.where}: `{command}` exited {done.returncode}:\n"
                                          f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
            if expected is None or _matches(done.stdout, expected):
                return
            assert time.monotonic() < deadline, (f"{block.where}: `{command}` printed\n{done.stdout}\n"
                                                 f"where the page shows\n{expected}")
            time.sleep(1)

    # -- background processes -------------------------------------------------------------------------
    def _spawn(self, what: str, block: Block, argv: list[str]) -> _Background:
        log = self._log_path(re.sub(r"\W+", "-", what)[:40])
        with open(log, "wb") as out:
            process = subprocess.Popen(argv, cwd=self.work, env=self.env(), stdout=out, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, start_new_session=True)
        bg = _Background(what, block.where, section_of(block), process, log)
        self.background.append(bg)
        return bg

    def _wait_for_log(self, bg: _Background, ready: re.Pattern[str]) -> None:
        deadline = time.monotonic() + _STARTUP_S
        while not ready.search(bg.log.read_text(errors="replace")):
            assert bg.process.poll() is None, f"{bg.where}: `{bg.what}` ended:\n{bg.output()}"
            assert time.monotonic() < deadline, f"{bg.where}: `{bg.what}` did not start running:\n{bg.output()}"
            time.sleep(0.5)

    def _wait_for_group(self, bg: _Background, group: str) -> None:
        deadline = time.monotonic() + _STARTUP_S
        while not asyncio.run(_group_is_stable(self.bootstrap, group)):
            assert bg.process.poll() is None, f"{bg.where}: `{bg.what}` ended:\n{bg.output()}"
            assert time.monotonic() < deadline, f"{bg.where}: `{bg.what}` did not join {group}:\n{bg.output()}"
            time.sleep(1)


def _signal_group(process: subprocess.Popen[bytes], signum: int) -> None:
    """`signum` to the process group `process` leads (started in a session of its own), if it is there."""
    try:
        os.killpg(process.pid, signum)
    except ProcessLookupError:
        pass


async def _group_is_stable(bootstrap: str, group: str) -> bool:
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        described = await admin.describe_consumer_groups([group])
    finally:
        await admin.close()
    for response in described:
        for entry in response.groups:
            _error, group_id, state, _protocol_type, _protocol, members = entry[:6]
            if group_id == group and state == "Stable" and members:
                return True
    return False


_PIP_SPEC = re.compile(r"(?:\.|dist/streamlet-\*\.whl|streamlet(?P<git_extras>\[[\w,]+\])? @ git\+\S+)"
                       r"(?P<extras>\[[\w,]+\])?")


def _check_pip(words: list[str], block: Block) -> None:
    """`pip install` of this package (the checkout `.`, `streamlet @ git+URL`, or a wheel `pip wheel` put in
    `dist/`), with extras pyproject.toml defines; or `pip wheel` of the checkout into `dist/`."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["name"] == "streamlet"
    command = " ".join(words)
    if words[1] == "wheel":
        assert words[2:] == ["--no-deps", "-w", "dist", "."], f"{block.where}: {command!r} builds what, where?"
        return
    spec = _PIP_SPEC.fullmatch(words[2]) if words[1:2] == ["install"] and len(words) == 3 else None
    assert spec, f"{block.where}: {command!r} installs what?"
    for group in (spec.group("git_extras"), spec.group("extras")):
        unknown = set(group[1:-1].split(",")) - set(project["optional-dependencies"]) if group else set()
        assert not unknown, f"{block.where}: {command!r}: pyproject.toml defines no extra {sorted(unknown)}"


def _commands(code: str) -> list[str]:
    """A shell block's commands: continuation lines joined, comment-only lines dropped."""
    commands: list[str] = []
    pending = ""
    for line in code.splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        commands.append(pending + line)
        pending = ""
    assert not pending, f"a shell block ends in a continuation: {pending!r}"
    return commands


def _console(code: str) -> list[tuple[str, str]]:
    """A console block's (`$ command`, what it prints) pairs."""
    pairs: list[tuple[str, str]] = []
    for line in code.splitlines():
        if line.startswith("$ "):
            pairs.append((line[2:], ""))
        else:
            assert pairs, f"a console block starts without a `$ ` command: {line!r}"
            pairs[-1] = (pairs[-1][0], pairs[-1][1] + line + "\n")
    return pairs


def _matches(printed: str, expected: str) -> bool:
    """JSON: every field the page shows has the value shown (answers may carry more fields); text: equal."""
    try:
        shown = json.loads(expected)
    except json.JSONDecodeError:
        return printed.strip() == expected.strip()
    try:
        return _contains(json.loads(printed), shown)
    except json.JSONDecodeError:
        return False


def _contains(actual: Any, shown: Any) -> bool:
    if isinstance(shown, dict):
        return isinstance(actual, dict) and all(k in actual and _contains(actual[k], v) for k, v in shown.items())
    if isinstance(shown, list):
        return isinstance(actual, list) and len(actual) == len(shown) and all(map(_contains, actual, shown))
    return bool(actual == shown)
