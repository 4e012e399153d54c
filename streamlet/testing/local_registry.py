"""A real schema registry on 127.0.0.1 for development and tests: Apicurio Registry, Confluent's API.

As with the broker (`streamlet.testing.local_broker`), nothing is faked: tests, `streamlet registry start`
and the `schema_registry` pytest fixture run the genuine Apicurio Registry 2.6.13.Final (the last line
that runs on Java 17), fetched once from Maven Central with Maven into the same cache and unpacked. It
keeps its schemas in memory (a restart forgets them), listens on the loopback interface only, and serves
Confluent's Schema Registry API under `/apis/ccompat/v7`: the URL clients are given.
`LocalSchemaRegistry(version=REGISTRY3_VERSION)` runs Apicurio Registry 3.3.3 instead (in-memory H2 storage,
the same Confluent API; it needs Java 21+, which is looked for apart from the Java 17 the default uses).

Three layers, as for the broker:
- `ensure_registry_app()`: the unpacked application in the cache (fetched at most once, under a lock);
- `LocalSchemaRegistry`: one registry process owned by this Python process (context manager);
- `start_dev_registry()` / `stop_dev_registry()` / `dev_registry_status()`: a long-lived background
  registry whose pid and port live in a state file, for `streamlet registry start|stop|status`.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path
from types import TracebackType
from typing import IO

from streamlet.errors import BrokerUnavailableError
from streamlet.kafka.maven_jars import cache_dir, fetch_maven_archive, file_lock, find_java
from streamlet.runtime.parent_death import die_with_parent
from streamlet.testing.local_broker import (
    HOST,
    _pid_alive,
    _pid_command_line,
    _tail,
    dev_service_dir,
    free_ports,
    port_is_free,
    read_state_file,
    terminate_pid,
)

log = logging.getLogger(__name__)

REGISTRY_VERSION = "2.6.13.Final"
"""The Apicurio Registry release streamlet runs (3.x needs Java 21)."""
REGISTRY_ARTIFACT = f"io.apicurio:apicurio-registry-app:{REGISTRY_VERSION}:tar.gz:all"
CONFLUENT_API_PATH = "/apis/ccompat/v7"
"""Where Apicurio serves Confluent's Schema Registry API."""
DEFAULT_DEV_PORT = 8081
"""Confluent Schema Registry's usual port, taken by `streamlet registry start` when free."""

REGISTRY3_VERSION = "3.3.3"
"""The Apicurio Registry 3.x release `LocalSchemaRegistry(version=REGISTRY3_VERSION)` runs (Java 21+)."""

_RUNNER_JAR = f"apicurio-registry-app-{REGISTRY_VERSION}-runner.jar"
_LABEL = f"Apicurio Registry {REGISTRY_VERSION}"


@dataclass(frozen=True)
class _Release:
    """How one Apicurio Registry release is fetched and run."""

    runnable: str  # the jar to `java -jar`, inside the unpacked archive
    java: int  # the oldest Java it runs on
    management: bool  # serves a second (management) HTTP interface, to be kept on the loopback too


_RELEASES = {
    REGISTRY_VERSION: _Release(_RUNNER_JAR, 17, management=False),
    REGISTRY3_VERSION: _Release("quarkus-run.jar", 21, management=True),  # Quarkus' fast-jar layout
}


def _release(version: str) -> _Release:
    if version not in _RELEASES:
        raise ValueError(f"no Apicurio Registry {version!r}: streamlet runs {', '.join(_RELEASES)}")
    return _RELEASES[version]


def registry_home(cache: Path | None = None, version: str = REGISTRY_VERSION) -> Path:
    return (cache or cache_dir()) / f"apicurio-registry-{version}"


def ensure_registry_app(cache: Path | None = None, version: str = REGISTRY_VERSION) -> Path:
    """The registry's runnable jar in the cache, fetched with Maven and unpacked the first time."""
    runnable = _release(version).runnable
    home = registry_home(cache, version)
    fetch_maven_archive(f"io.apicurio:apicurio-registry-app:{version}:tar.gz:all", home,
                        f"Apicurio Registry {version}", runnable)
    return home / runnable


def _java_major(java_home: Path) -> int | None:
    """The feature release (17, 21, 25, ...) of the Java installed at `java_home`, from its `release` file."""
    try:
        text = (java_home / "release").read_text()
    except OSError:
        return None
    found = re.search(r'^JAVA_VERSION="(?:1\.)?(\d+)', text, re.MULTILINE)
    return int(found.group(1)) if found else None


def find_java_at_least(major: int) -> str:
    """A `java` of release `major` or newer: $JAVA_HOME's, else the one on PATH, else the newest JDK or JRE
    under /usr/lib/jvm. Raises `BrokerUnavailableError` naming what was found when none is new enough."""
    homes: list[Path] = []
    if os.environ.get("JAVA_HOME"):
        homes.append(Path(os.environ["JAVA_HOME"]))
    try:
        homes.append(Path(find_java()).resolve().parents[1])
    except BrokerUnavailableError:
        pass
    jvm = Path("/usr/lib/jvm")
    if jvm.is_dir():
        homes.extend(sorted(jvm.iterdir(), key=lambda home: _java_major(home) or 0, reverse=True))
    seen: list[str] = []
    for home in homes:
        java = home / "bin" / "java"
        version = _java_major(home)
        if version is not None and version >= major and os.access(java, os.X_OK):
            return str(java)
        seen.append(f"{home} ({version or 'unknown'})")
    raise BrokerUnavailableError(f"no Java {major}+ was found (looked at $JAVA_HOME, java on PATH and "
                                 f"/usr/lib/jvm: {', '.join(seen) or 'nothing'}); install one or set JAVA_HOME.")


def _answers(url: str) -> bool:
    """True when the Confluent API answers `GET /subjects` (the registry serves requests)."""
    try:
        with urllib.request.urlopen(f"{url}/subjects", timeout=2.0) as response:
            return bool(response.status == 200)
    except (OSError, urllib.error.URLError):
        return False


class LocalSchemaRegistry:
    """A Confluent-compatible schema registry (Apicurio Registry 2.6.13.Final) on 127.0.0.1.

    `port=None` picks a free port. Schemas live in memory: `stop()` forgets them, and so does
    `restart()` (same port). `.url` is the Confluent API's address, for `schema.registry.url`.
    `detach=True` lets the registry outlive this Python process (`streamlet registry start` uses it).
    Needs Java 17+ and, once, Maven to fetch the application.

    `version=REGISTRY3_VERSION` runs Apicurio Registry 3.3.3 instead: the same Confluent API at the same
    path, ids being content ids as in 2.6, its own v3 API beside it (what Apicurio's 3.x Java serdes use).
    It needs Java 21+, found by `find_java_at_least(21)`; its management interface listens on another free
    loopback port.
    """

    def __init__(self, port: int | None = None, *, heap: str = "512m", startup_timeout: float = 120.0,
                 stop_timeout: float = 30.0, detach: bool = False, log_dir: str | os.PathLike[str] | None = None,
                 version: str = REGISTRY_VERSION) -> None:
        self.version = version
        self._how = _release(version)
        self.port = port
        self.heap = heap
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self.detach = detach
        self.log_dir = Path(log_dir).resolve() if log_dir is not None else None
        self._process: subprocess.Popen[bytes] | None = None
        self._stdout: IO[bytes] | None = None

    @property
    def url(self) -> str:
        """`http://127.0.0.1:PORT/apis/ccompat/v7`: Confluent's API, for `schema.registry.url`."""
        if self.port is None:
            raise BrokerUnavailableError("the schema registry has no port yet: start() it first")
        return f"http://{HOST}:{self.port}{CONFLUENT_API_PATH}"

    @property
    def pid(self) -> int | None:
        """The registry JVM's process id while it runs, else None."""
        return self._process.pid if self._process is not None else None

    @property
    def log_file(self) -> Path:
        """Where the registry's output goes."""
        return (self.log_dir or cache_dir()) / f"registry-{self.port}.out"

    def is_running(self) -> bool:
        """True while the registry's process is alive."""
        return self._process is not None and self._process.poll() is None

    def start(self) -> LocalSchemaRegistry:
        """Start the registry and wait until its Confluent API answers."""
        if self.is_running():
            return self
        java = find_java() if self._how.java <= 17 else find_java_at_least(self._how.java)
        runner = ensure_registry_app(version=self.version)
        if self.port is None:
            self.port = free_ports(1)[0]
        if not port_is_free(self.port):
            raise BrokerUnavailableError(f"port {self.port} on {HOST} is already in use, so the schema registry "
                                         "cannot listen there.")
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        self._stdout = open(self.log_file, "ab")  # noqa: SIM115 - closed in _stop_process
        environment = {**os.environ, "QUARKUS_HTTP_HOST": HOST, "QUARKUS_HTTP_PORT": str(self.port)}
        if self._how.management:  # else it takes 0.0.0.0:9000, shared by every registry on the machine
            management_port = next(port for port in free_ports(2) if port != self.port)
            environment |= {"QUARKUS_MANAGEMENT_HOST": HOST, "QUARKUS_MANAGEMENT_PORT": str(management_port)}
        began = time.monotonic()
        self._process = subprocess.Popen(
            [java, f"-Xmx{self.heap}", "-XX:+UseSerialGC", "-Djava.awt.headless=true", "-jar", str(runner)],
            cwd=runner.parent, env=environment, stdin=subprocess.DEVNULL, stdout=self._stdout,
            stderr=subprocess.STDOUT, start_new_session=self.detach,
            preexec_fn=None if self.detach else die_with_parent(),
        )
        try:
            self._wait_until_ready()
        except BaseException:
            self._stop_process()
            raise
        log.info("schema registry at %s ready in %.1fs", self.url, time.monotonic() - began)
        return self

    def stop(self) -> None:
        """Stop the registry (its schemas are gone)."""
        self._stop_process()

    def restart(self) -> LocalSchemaRegistry:
        """Stop and start again on the same port (empty: schemas live in memory)."""
        self._stop_process()
        return self.start()

    def __enter__(self) -> LocalSchemaRegistry:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def __repr__(self) -> str:
        where = self.url if self.port is not None else "no port yet"
        release = "" if self.version == REGISTRY_VERSION else f", version={self.version!r}"
        return f"LocalSchemaRegistry({where}{release}, running={self.is_running()})"

    def _wait_until_ready(self) -> None:
        assert self._process is not None
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            code = self._process.poll()
            if code is not None:
                raise BrokerUnavailableError(f"the schema registry exited with code {code} while starting; "
                                             f"see {self.log_file}:\n{_tail(self.log_file)}")
            if _answers(self.url):
                return
            time.sleep(0.2)
        raise BrokerUnavailableError(f"the schema registry did not answer within {self.startup_timeout:.0f}s; "
                                     f"see {self.log_file}.")

    def _stop_process(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            terminate_pid(process.pid, self.stop_timeout, "the schema registry")
        if process is not None:
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        if self._stdout is not None:
            self._stdout.close()
            self._stdout = None


# -- the long-lived development registry (streamlet registry start|stop|status) ----------------------

@dataclass
class DevRegistryState:
    pid: int
    port: int

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}{CONFLUENT_API_PATH}"


def dev_registry_dir() -> Path:
    """`STREAMLET_DEV_REGISTRY_DIR`, else `<cache>/dev-registry`: state file and log."""
    return dev_service_dir("STREAMLET_DEV_REGISTRY_DIR", "dev-registry")


def _state_file() -> Path:
    return dev_registry_dir() / "state.json"


def _read_state() -> DevRegistryState | None:
    return read_state_file(_state_file(), lambda raw: DevRegistryState(int(raw["pid"]), int(raw["port"])))


def dev_registry_status() -> DevRegistryState | None:
    """The running development registry, or None (a recorded pid now running something else is not it)."""
    state = _read_state()
    if state is None or not _pid_alive(state.pid) or _RUNNER_JAR not in _pid_command_line(state.pid):
        return None
    return state


def start_dev_registry(port: int | None = None) -> tuple[DevRegistryState, bool]:
    """Start the background development registry unless it runs; returns (state, newly_started).

    Without `port` it listens on 8081 when that is free (Confluent Schema Registry's port), else on any free port.
    """
    directory = dev_registry_dir()
    with file_lock(directory / "state.lock"):
        running = dev_registry_status()
        if running is not None:
            return running, False
        if port is None:
            port = DEFAULT_DEV_PORT if port_is_free(DEFAULT_DEV_PORT) else None
        registry = LocalSchemaRegistry(port, detach=True, log_dir=directory)
        registry.start()
        assert registry.pid is not None and registry.port is not None
        state = DevRegistryState(registry.pid, registry.port)
        _state_file().write_text(json.dumps(asdict(state), indent=2) + "\n")
        return state, True


def stop_dev_registry(timeout: float = 30.0) -> DevRegistryState | None:
    """Stop the background development registry; returns what was stopped, or None if none ran."""
    with file_lock(dev_registry_dir() / "state.lock"):
        running = dev_registry_status()
        if running is not None:
            terminate_pid(running.pid, timeout, "the schema registry")
        return running
