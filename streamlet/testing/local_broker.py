"""A real, single-node Apache Kafka broker on 127.0.0.1, for development and integration tests.

streamlet never fakes Kafka: tests, the demo and `streamlet broker start` run the genuine broker
(KRaft mode, broker and controller in one JVM), fetched once from Maven Central as plain jars with
Maven and cached. Transactions work out of the box (single-replica transaction and offsets logs),
so exactly-once applications can be tested against it.

Three layers, each usable alone:
- `ensure_kafka_jars()`: the pinned Kafka jars in the cache (fetched at most once, under a file lock
  so that two processes starting at the same time do not both download into the same place);
- `LocalKafkaBroker`: one broker process owned by this Python process (context manager, restart);
- `start_dev_broker()` / `stop_dev_broker()` / `dev_broker_status()`: a long-lived background broker
  whose pid and ports live in a state file, for `streamlet broker start|stop|status`.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any, TypeVar

from streamlet.errors import BrokerUnavailableError
from streamlet.kafka.maven_jars import cache_dir, fetch_maven_jars, file_lock, find_java
from streamlet.runtime.parent_death import die_with_parent

log = logging.getLogger(__name__)
_State = TypeVar("_State")

KAFKA_VERSIONS = ("4.4.0", "3.9.1")
"""The broker versions streamlet runs and tests against (one pom each in `broker/`); the first is the default."""
VERSION_ENV = "STREAMLET_KAFKA_VERSION"
"""Names the version a `LocalKafkaBroker()` without `version=` runs (the test suite runs its broker-level
exactly-once, chaos and security tests on the other one too)."""
SCALA_VERSION = "2.13"
HOST = "127.0.0.1"
DEFAULT_DEV_PORT = 9092

_RESOURCES = Path(__file__).resolve().parent / "broker"
_STARTED_MARKER = "Kafka Server started"
SASL_MECHANISMS = ("SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN")
ADMIN_USER = "streamlet-admin"
"""The SASL super-user a broker with `sasl_users` adds for test harnesses (password made at start-up)."""


# -- the broker's jars -------------------------------------------------------------------------

def default_kafka_version() -> str:
    """`$STREAMLET_KAFKA_VERSION` if set (it must be one of `KAFKA_VERSIONS`), else the newest supported."""
    return check_kafka_version(os.environ.get(VERSION_ENV) or KAFKA_VERSIONS[0])


def check_kafka_version(version: str) -> str:
    if version not in KAFKA_VERSIONS:
        raise BrokerUnavailableError(f"Kafka {version} is not one streamlet runs: pick one of "
                                     f"{', '.join(KAFKA_VERSIONS)} (set {VERSION_ENV} or version=...)")
    return version


def kafka_home(cache: Path | None = None, version: str | None = None) -> Path:
    return (cache or cache_dir()) / f"kafka-{version or default_kafka_version()}"


def ensure_kafka_jars(cache: Path | None = None, version: str | None = None) -> Path:
    """Return the directory holding the Kafka broker jars of `version` (default: `default_kafka_version()`),
    fetching them with Maven the first time."""
    version = check_kafka_version(version or default_kafka_version())
    home = kafka_home(cache, version)
    fetch_maven_jars(_RESOURCES / f"pom-{version}.xml", home, f"Apache Kafka {version}",
                     f"kafka_{SCALA_VERSION}-{version}.jar")
    return home / "libs"


# -- ports ----------------------------------------------------------------------------------------

def port_is_free(port: int) -> bool:
    """True if a server could listen on 127.0.0.1:port (SO_REUSEADDR, as the JVM binds)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
    return True


def free_ports(count: int) -> list[int]:
    """`count` distinct ports that were free a moment ago (all bound at once, so none repeats)."""
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind((HOST, 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _accepts_connections(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=1.0):
            return True
    except OSError:
        return False


# -- process helpers ------------------------------------------------------------------------------


def _pid_alive(pid: int) -> bool:
    """True if `pid` runs and is not a zombie (an exited child nobody has reaped yet)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def _pid_command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        result = subprocess.run(["ps", "-p", str(pid), "-o", "command="], capture_output=True, text=True,
                                check=False)
        return result.stdout


def terminate_pid(pid: int, timeout: float, what: str = "the Kafka broker") -> None:
    """SIGTERM (the broker shuts down cleanly), then SIGKILL if it is still there after `timeout`;
    `what` names the process in the warning."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _pid_alive(pid):
            return
        time.sleep(0.1)
    log.warning("%s (pid %d) did not stop within %.0fs; killing it", what, pid, timeout)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    while _pid_alive(pid):
        time.sleep(0.05)


def _random_cluster_id() -> str:
    """A Kafka cluster id: a random UUID in URL-safe base64 without padding, not starting with '-'."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def failure_hint(lines: list[str]) -> str:
    """What a failed start's log says first went wrong: its first ERROR line (a broker that fails logs the cause,
    then a shutdown whose own complaints come last), else its last line naming an exception; "" if none."""
    errors = [line for line in lines if " ERROR " in line]
    if not errors:
        errors = [line for line in lines if "Exception" in line][-1:]
    return f": {errors[0].strip()}" if errors else ""


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


# -- the broker -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Listener:
    """One entry of the broker's `listeners` (and, when advertised, `advertised.listeners`).

    The three listener properties are joined from one list of these, so that each kind of listener
    (plain, proxied, secured, ...) is added in one place and the properties stay consistent.
    """

    name: str
    protocol: str
    port: int
    advertised_port: int | None  # None: not advertised to clients (the KRaft controller)


class LocalKafkaBroker:
    """A single-node Apache Kafka broker+controller (KRaft) listening on 127.0.0.1.

    `version` is one of `KAFKA_VERSIONS` (default: `$STREAMLET_KAFKA_VERSION`, else 4.4.0, KRaft with
    transactions v2 and streams groups on, as a fresh 4.4 cluster is formatted); `version="3.9.1"` runs the
    3.x line. Mind 4.x's defaults: it rejects records timestamped more than an hour in the future.
    `port=None` picks a free port; `data_dir=None` uses a temporary directory that `stop()` removes
    (a given `data_dir` is kept, and a formatted one is reused). `restart()` keeps port and data,
    which is what tests of broker outages need. `detach=True` lets the broker outlive this Python
    process (own session, no parent-death signal): `streamlet broker start` uses it.

    `proxied_ports` is for network-fault tests: Kafka clients bootstrap anywhere but then connect to
    the address the broker *advertises*, so a fault-injecting proxy in front of the broker only sees
    all of a client's traffic if the broker advertises the proxy. For each given port P (a proxy's
    listen port), the broker gets one more PLAINTEXT listener `PROXIED<i>` that binds a port of its
    own (`proxied_upstreams[P]`, the proxy's upstream) and advertises 127.0.0.1:P. Clients that
    bootstrap through the proxy stay behind it; the direct listener (`bootstrap_servers`) is
    unaffected, so a test harness keeps a fault-free path to the same broker.

    `sasl_users={"alice": "secret", ...}` also opens a SASL_SSL listener (a self-signed certificate
    for 127.0.0.1 made at start-up; SCRAM-SHA-256/512 and PLAIN) where those users and the harness's
    super-user `ADMIN_USER` log in: `.sasl_ssl_bootstrap_servers`, `.client_settings(user)`.
    `acls=True` runs Kafka's StandardAuthorizer: SASL users may then do only what ACLs allow (see
    `streamlet.testing.broker_acls`). The PLAINTEXT listener stays open for the harness; its
    principal (`User:ANONYMOUS`, also the inter-broker and controller one) is a super-user.
    """

    def __init__(
        self,
        port: int | None = None,
        data_dir: str | os.PathLike[str] | None = None,
        *,
        controller_port: int | None = None,
        heap: str = "512m",
        startup_timeout: float = 120.0,
        stop_timeout: float = 30.0,
        detach: bool = False,
        proxied_ports: Sequence[int] = (),
        sasl_users: Mapping[str, str] | None = None,
        acls: bool = False,
        sasl_ssl_port: int | None = None,
        version: str | None = None,
    ) -> None:
        self.version = check_kafka_version(version or default_kafka_version())
        self._given_data_dir = Path(data_dir).resolve() if data_dir is not None else None
        self.heap = heap
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self.detach = detach
        self.port: int | None = port
        self.controller_port: int | None = controller_port
        self.data_dir: Path | None = self._given_data_dir
        self.proxied_ports = tuple(proxied_ports)
        self.proxied_upstreams: dict[int, int] = {}  # advertised (proxy) port -> port the broker binds
        self._owns_data_dir = False
        self._process: subprocess.Popen[bytes] | None = None
        self._stdout: IO[bytes] | None = None
        for name, password in (sasl_users or {}).items():
            _check_sasl_user(name, password)
        self.sasl_users: dict[str, str] = dict(sasl_users or {})
        self.acls = acls
        self.sasl_ssl_port: int | None = sasl_ssl_port if self.sasl_users else None
        self._admin_password: str | None = None

    # -- public surface ----------------------------------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        """`127.0.0.1:PORT` of the PLAINTEXT listener, for `bootstrap.servers`."""
        if self.port is None:
            raise BrokerUnavailableError("the broker has no port yet: start() it first")
        return f"{HOST}:{self.port}"

    @property
    def sasl_ssl_bootstrap_servers(self) -> str:
        """The SASL_SSL listener (only with `sasl_users`)."""
        if not self.sasl_users:
            raise BrokerUnavailableError("this broker has no SASL_SSL listener: pass sasl_users=...")
        if self.sasl_ssl_port is None:
            raise BrokerUnavailableError("the broker has no port yet: start() it first")
        return f"{HOST}:{self.sasl_ssl_port}"

    @property
    def ca_file(self) -> Path:
        """The broker's self-signed certificate (PEM): what clients trust."""
        return self._tls_dir() / "broker-cert.pem"

    @property
    def admin_user(self) -> str:
        """A SASL super-user for test harnesses (topics and ACLs through the SASL_SSL listener)."""
        return ADMIN_USER

    def client_settings(self, user: str, mechanism: str = "SCRAM-SHA-512",
                        password: str | None = None) -> dict[str, str]:
        """The streamlet settings (Kafka's own names) that connect to the SASL_SSL listener as `user`.

        `password` replaces the user's real one (to test a failed login)."""
        if mechanism not in SASL_MECHANISMS:
            raise ValueError(f"mechanism must be one of {', '.join(SASL_MECHANISMS)}, got {mechanism!r}")
        if password is None:
            known = dict(self.sasl_users)
            if self._admin_password is not None:
                known[ADMIN_USER] = self._admin_password
            if user not in known:
                raise KeyError(f"{user!r} is not a SASL user of this broker")
            password = known[user]
        module = ("org.apache.kafka.common.security.plain.PlainLoginModule" if mechanism == "PLAIN"
                  else "org.apache.kafka.common.security.scram.ScramLoginModule")
        return {
            "bootstrap.servers": self.sasl_ssl_bootstrap_servers,
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": mechanism,
            "sasl.jaas.config": f'{module} required username="{user}" password="{password}";',
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(self.ca_file),
        }

    @property
    def pid(self) -> int | None:
        """The broker JVM's process id while it runs, else None."""
        return self._process.pid if self._process is not None else None

    @property
    def log_file(self) -> Path:
        """The broker's own log (`server.log`), useful when a test wants to show why it failed."""
        return self._dirs()[1] / "server.log"

    def is_running(self) -> bool:
        """True while the broker's process is alive."""
        return self._process is not None and self._process.poll() is None

    def start(self) -> LocalKafkaBroker:
        """Start the broker (formatting its storage on first start) and wait until it accepts clients."""
        if self.is_running():
            return self
        java = find_java()
        libs = ensure_kafka_jars(version=self.version)
        self._assign_ports()
        if self.data_dir is None:
            self.data_dir = Path(tempfile.mkdtemp(prefix="streamlet-kafka-"))
            self._owns_data_dir = True
        log_dirs, logs_dir = self._dirs()
        log_dirs.mkdir(parents=True, exist_ok=True)
        logs_dir.mkdir(parents=True, exist_ok=True)
        if self.sasl_users:
            self._prepare_tls_and_admin()
        properties = self._write_server_properties()
        classpath = f"{libs}{os.sep}*"
        if not (log_dirs / "meta.properties").is_file():
            self._format(java, classpath, properties)
        server_log = logs_dir / "server.log"
        log_offset = server_log.stat().st_size if server_log.exists() else 0
        self._stdout = open(logs_dir / "broker.out", "ab")  # noqa: SIM115 - closed in _stop_process
        began = time.monotonic()
        self._process = subprocess.Popen(
            [java, *self._jvm_options(f"-Xmx{self.heap}"), "-cp", classpath, "kafka.Kafka", str(properties)],
            stdin=subprocess.DEVNULL, stdout=self._stdout, stderr=subprocess.STDOUT,
            start_new_session=self.detach,
            preexec_fn=None if self.detach else die_with_parent(),
        )
        try:
            self._wait_until_ready(server_log, log_offset)
        except BaseException:
            self._stop_process()
            raise
        log.info("Kafka %s broker at %s ready in %.1fs (data in %s)",
                 self.version, self.bootstrap_servers, time.monotonic() - began, self.data_dir)
        return self

    def stop(self) -> None:
        """Stop the broker cleanly; a temporary data dir is removed, a given one is kept."""
        self._stop_process()
        if self._owns_data_dir and self.data_dir is not None:
            shutil.rmtree(self.data_dir, ignore_errors=True)
            self.data_dir = None
            self._owns_data_dir = False

    def restart(self) -> LocalKafkaBroker:
        """Stop and start again on the same ports with the same data (nothing is lost)."""
        self._stop_process()
        return self.start()

    def __enter__(self) -> LocalKafkaBroker:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def __repr__(self) -> str:
        where = self.bootstrap_servers if self.port is not None else "no port yet"
        return (f"LocalKafkaBroker({where}, version={self.version}, running={self.is_running()}, "
                f"data_dir={self.data_dir})")

    # -- internals ---------------------------------------------------------------------------------
    def _dirs(self) -> tuple[Path, Path]:
        if self.data_dir is None:
            raise BrokerUnavailableError("the broker has no data directory yet: start() it first")
        return self.data_dir / "kafka-logs", self.data_dir / "logs"

    def _assign_ports(self) -> None:
        """Pick ports once; a restart reuses them so that clients reconnect to the same address."""
        unproxied = [p for p in self.proxied_ports if p not in self.proxied_upstreams]
        need_sasl_port = bool(self.sasl_users) and self.sasl_ssl_port is None
        if self.port is None or self.controller_port is None or unproxied or need_sasl_port:
            taken = {self.port, self.controller_port, self.sasl_ssl_port, *self.proxied_ports,
                     *self.proxied_upstreams.values()}
            spare = iter(p for p in free_ports(4 + len(unproxied)) if p not in taken)
            if self.port is None:
                self.port = next(spare)
            if self.controller_port is None:
                self.controller_port = next(spare)
            for advertised in unproxied:
                self.proxied_upstreams[advertised] = next(spare)
            if need_sasl_port:
                self.sasl_ssl_port = next(spare)
        sasl_port = [self.sasl_ssl_port] if self.sasl_ssl_port is not None else []
        for port in (self.port, self.controller_port, *self.proxied_upstreams.values(), *sasl_port):
            if not port_is_free(port):
                raise BrokerUnavailableError(f"port {port} on {HOST} is already in use, so the Kafka broker "
                                             "cannot listen there.")

    def _jvm_options(self, heap_option: str) -> list[str]:
        logs_dir = self._dirs()[1]
        return [
            heap_option, "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-Djava.awt.headless=true",
            f"-Dkafka.logs.dir={logs_dir}", self._log_config_option(),
        ]

    def _log_config_option(self) -> str:
        """Kafka 3.x logs with reload4j, 4.x with log4j2: each reads its own system property and file format."""
        if self.version.startswith("3."):
            return f"-Dlog4j.configuration=file:{_RESOURCES / 'log4j.properties'}"
        return f"-Dlog4j2.configurationFile={_RESOURCES / 'log4j2.properties'}"

    def _listeners(self) -> list[_Listener]:
        """Every listener the broker opens; the three listener properties are built from this list."""
        assert self.port is not None and self.controller_port is not None
        listeners = [
            _Listener("PLAINTEXT", "PLAINTEXT", self.port, self.port),
            _Listener("CONTROLLER", "PLAINTEXT", self.controller_port, None),
        ]
        listeners += [_Listener(f"PROXIED{index}", "PLAINTEXT", self.proxied_upstreams[advertised], advertised)
                      for index, advertised in enumerate(self.proxied_ports)]
        if self.sasl_users:
            assert self.sasl_ssl_port is not None
            listeners.append(_Listener("SASL_SSL", "SASL_SSL", self.sasl_ssl_port, self.sasl_ssl_port))
        return listeners

    # -- SASL_SSL (sasl_users) ---------------------------------------------------------------------
    def _tls_dir(self) -> Path:
        if self.data_dir is None:
            raise BrokerUnavailableError("the broker has no data directory yet: start() it first")
        return self.data_dir / "tls"

    def _prepare_tls_and_admin(self) -> None:
        """A self-signed certificate for 127.0.0.1 (kept with the data, so a restart keeps it) and the
        harness super-user's password (also kept: SCRAM credentials live in the formatted metadata)."""
        tls = self._tls_dir()
        tls.mkdir(mode=0o700, parents=True, exist_ok=True)
        secret = tls / "admin-password"
        if not secret.is_file():
            secret.write_text(secrets.token_urlsafe(18))
            secret.chmod(0o600)
        self._admin_password = secret.read_text().strip()
        if self.ca_file.is_file():
            return
        key, cert = tls / "broker-key.pem", self.ca_file
        openssl = shutil.which("openssl")
        if openssl is None:
            raise BrokerUnavailableError("openssl was not found on PATH: it makes the SASL_SSL listener's "
                                         "certificate (e.g. `apt-get install openssl`).")
        result = subprocess.run(
            [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "30", "-subj", "/CN=localhost",
             "-addext", f"subjectAltName=IP:{HOST},DNS:localhost", "-keyout", str(key), "-out", str(cert)],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False,
        )
        if result.returncode != 0:
            raise BrokerUnavailableError(f"openssl could not make the broker certificate: {result.stderr.strip()}")
        key.chmod(0o600)
        # Kafka's PEM key store: the private key (unencrypted PKCS#8) followed by its certificate.
        keystore = tls / "broker-keystore.pem"
        keystore.write_text(key.read_text() + cert.read_text())
        keystore.chmod(0o600)

    def _sasl_settings(self) -> dict[str, Any]:
        """server.properties entries of the SASL_SSL listener (and of the authorizer with `acls`)."""
        if not self.sasl_users:
            return {}
        assert self._admin_password is not None
        users = {**self.sasl_users, ADMIN_USER: self._admin_password}
        plain_users = " ".join(f'user_{name}="{password}"' for name, password in users.items())
        prefix = "listener.name.sasl_ssl"
        settings: dict[str, Any] = {
            "sasl.enabled.mechanisms": ",".join(SASL_MECHANISMS),
            f"{prefix}.plain.sasl.jaas.config":
                f"org.apache.kafka.common.security.plain.PlainLoginModule required {plain_users};",
            f"{prefix}.scram-sha-256.sasl.jaas.config":
                "org.apache.kafka.common.security.scram.ScramLoginModule required;",
            f"{prefix}.scram-sha-512.sasl.jaas.config":
                "org.apache.kafka.common.security.scram.ScramLoginModule required;",
            f"{prefix}.ssl.keystore.type": "PEM",
            f"{prefix}.ssl.keystore.location": self._tls_dir() / "broker-keystore.pem",
        }
        if self.acls:
            settings["authorizer.class.name"] = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
            # The PLAINTEXT listeners (inter-broker, controller, harness) authenticate as ANONYMOUS.
            settings["super.users"] = f"User:ANONYMOUS;User:{ADMIN_USER}"
        return settings

    def _scram_format_args(self) -> list[str]:
        """`StorageTool format --add-scram` arguments: SCRAM credentials are part of the metadata log."""
        if not self.sasl_users:
            return []
        assert self._admin_password is not None
        users = {**self.sasl_users, ADMIN_USER: self._admin_password}
        return [arg for name, password in users.items() for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512")
                for arg in ("--add-scram", f'{mechanism}=[name={name},password="{password}"]')]

    def _write_server_properties(self) -> Path:
        log_dirs, _ = self._dirs()
        assert self.data_dir is not None
        listeners = self._listeners()
        settings: dict[str, Any] = {
            "process.roles": "broker,controller",
            "node.id": 1,
            "controller.quorum.voters": f"1@{HOST}:{self.controller_port}",
            "listeners": ",".join(f"{item.name}://{HOST}:{item.port}" for item in listeners),
            "advertised.listeners": ",".join(f"{item.name}://{HOST}:{item.advertised_port}"
                                             for item in listeners if item.advertised_port is not None),
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": ",".join(f"{item.name}:{item.protocol}" for item in listeners),
            "log.dirs": log_dirs,
            # One node: every internal topic has one replica, and transactions work.
            "num.partitions": 1,
            "default.replication.factor": 1,
            "min.insync.replicas": 1,
            "offsets.topic.replication.factor": 1,
            "offsets.topic.num.partitions": 10,
            "transaction.state.log.replication.factor": 1,
            "transaction.state.log.min.isr": 1,
            "transaction.state.log.num.partitions": 10,
            # Development speed: consumer groups form at once; topics the apps forget are created.
            "group.initial.rebalance.delay.ms": 0,
            "auto.create.topics.enable": "true",
            "delete.topic.enable": "true",
            # The log cleaner compacts changelogs; its default 128 MiB buffer would not fit the heap.
            "log.cleaner.dedupe.buffer.size": 32 * 1024 * 1024,
            **self._sasl_settings(),
        }
        path = self.data_dir / "server.properties"
        path.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))
        path.chmod(0o600)  # with sasl_users it holds the PLAIN users' passwords
        return path

    def _format(self, java: str, classpath: str, properties: Path) -> None:
        logs_dir = self._dirs()[1]
        result = subprocess.run(
            [java, *self._jvm_options("-Xmx256m"), "-cp", classpath, "kafka.tools.StorageTool", "format",
             "-t", _random_cluster_id(), "-c", str(properties), *self._scram_format_args()],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False,
        )
        (logs_dir / "format.out").write_text(result.stdout + result.stderr)
        if result.returncode != 0:
            reason = (result.stderr.strip() or result.stdout.strip()).splitlines()
            raise BrokerUnavailableError(
                f"formatting the Kafka data directory {self.data_dir} failed (exit code {result.returncode})"
                f": {reason[-1] if reason else 'no output'}"
            )

    def _wait_until_ready(self, server_log: Path, log_offset: int) -> None:
        """Wait for the broker's own "started" log line, then for its listener to accept connections.

        The KRaft broker logs that line only after it registered with the controller and was
        unfenced; a bare TCP connect could succeed earlier, before requests are served.
        """
        assert self._process is not None and self.port is not None
        deadline = time.monotonic() + self.startup_timeout
        started = False
        while time.monotonic() < deadline:
            code = self._process.poll()
            if code is not None:
                raise BrokerUnavailableError(self._startup_failure(code, server_log))
            if not started:
                started = self._log_contains(server_log, log_offset, _STARTED_MARKER)
            if started and _accepts_connections(self.port):
                return
            time.sleep(0.1)
        raise BrokerUnavailableError(
            f"the Kafka broker did not become ready within {self.startup_timeout:.0f}s; see {server_log}."
        )

    @staticmethod
    def _log_contains(path: Path, offset: int, text: str) -> bool:
        try:
            with open(path, "rb") as handle:
                handle.seek(offset)
                return text.encode() in handle.read()
        except OSError:
            return False

    def _startup_failure(self, code: int, server_log: Path) -> str:
        logs_dir = self._dirs()[1]
        hint = failure_hint((_tail(server_log, 200) + "\n" + _tail(logs_dir / "broker.out", 50)).splitlines())
        return f"the Kafka broker exited with code {code} while starting (logs in {logs_dir}){hint}"

    def _stop_process(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            terminate_pid(process.pid, self.stop_timeout)
        if process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=5)
        if self._stdout is not None:
            self._stdout.close()
            self._stdout = None


def _check_sasl_user(name: str, password: str) -> None:
    """User names and passwords go into JAAS and `--add-scram` strings: refuse what would break them."""
    if not name or any(ch in name for ch in ' ="[],;\\') or name == ADMIN_USER:
        raise ValueError(f"unusable SASL user name {name!r}")
    if not password or any(ch in password for ch in '"\\,]'):  # StorageTool's --add-scram splits on , and ]
        raise ValueError(f"the password of SASL user {name!r} is empty or holds one of: quote, backslash, comma, ]")


# -- the long-lived development broker (streamlet broker start|stop|status) -----------------------

@dataclass
class DevBrokerState:
    pid: int
    port: int
    controller_port: int
    data_dir: str

    @property
    def bootstrap_servers(self) -> str:
        return f"{HOST}:{self.port}"


def dev_service_dir(variable: str, name: str) -> Path:
    """`$variable` if set, else `<cache>/name`: where a development service (`streamlet broker|registry start`)
    keeps its state file."""
    configured = os.environ.get(variable)
    return Path(configured).expanduser().resolve() if configured else cache_dir() / name


def read_state_file(path: Path, build: Callable[[dict[str, Any]], _State]) -> _State | None:
    """`build(the JSON object in path)`, or None when the file is missing, unreadable or incomplete."""
    try:
        return build(json.loads(path.read_text()))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def dev_broker_dir() -> Path:
    """`STREAMLET_DEV_BROKER_DIR`, else `<cache>/dev-broker`: state file and broker data."""
    return dev_service_dir("STREAMLET_DEV_BROKER_DIR", "dev-broker")


def _state_file() -> Path:
    return dev_broker_dir() / "state.json"


def _read_state() -> DevBrokerState | None:
    return read_state_file(_state_file(), lambda raw: DevBrokerState(
        int(raw["pid"]), int(raw["port"]), int(raw["controller_port"]), str(raw["data_dir"])))


def _is_our_broker(state: DevBrokerState) -> bool:
    """The recorded pid is alive and still that broker (pids get reused after a reboot)."""
    return _pid_alive(state.pid) and "kafka.Kafka" in _pid_command_line(state.pid) \
        and state.data_dir in _pid_command_line(state.pid)


def dev_broker_status() -> DevBrokerState | None:
    """The running development broker, or None."""
    state = _read_state()
    return state if state is not None and _is_our_broker(state) else None


def start_dev_broker(port: int | None = None, version: str | None = None) -> tuple[DevBrokerState, bool]:
    """Start the background development broker unless it runs; returns (state, newly_started).

    Without `port`, it listens on 9092 when that is free (the address every Kafka tutorial uses),
    else on any free port. Its data survives stop/start in `<dev broker dir>/data`. `version`: see
    `LocalKafkaBroker` (a 4.x broker takes over a 3.9 one's data; not the other way round).
    """
    directory = dev_broker_dir()
    with file_lock(directory / "state.lock"):
        running = dev_broker_status()
        if running is not None:
            return running, False
        previous = _read_state()
        if port is None:
            port = DEFAULT_DEV_PORT if port_is_free(DEFAULT_DEV_PORT) else None
        controller_port = None  # reuse the last one: the quorum's voter address stays the same
        if previous is not None and previous.controller_port != port \
                and port_is_free(previous.controller_port):
            controller_port = previous.controller_port
        broker = LocalKafkaBroker(port, directory / "data", controller_port=controller_port, detach=True,
                                  version=version)
        broker.start()
        assert broker.pid is not None and broker.port is not None and broker.controller_port is not None
        state = DevBrokerState(broker.pid, broker.port, broker.controller_port, str(broker.data_dir))
        _state_file().write_text(json.dumps(asdict(state), indent=2) + "\n")
        return state, True


def stop_dev_broker(timeout: float = 30.0) -> DevBrokerState | None:
    """Stop the background development broker; returns what was stopped, or None if none ran."""
    with file_lock(dev_broker_dir() / "state.lock"):
        running = dev_broker_status()
        if running is not None:
            terminate_pid(running.pid, timeout)
        return running
