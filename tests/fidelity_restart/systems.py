"""The two systems under comparison, each one application instance in its own OS process on the real broker.

- `StreamletApp`: `streamlet run tests.fidelity_restart.streamlet_app:topology --set k=v ...`, the case's topology
  built with tests/fidelity's Python builder (`ops.build`). SIGTERM closes it cleanly.
- `KafkaStreamsApp`: `io.streamlet.fidelity.RestartApp` of tests/java/fidelity on Kafka Streams 4.4.0 (or the
  version `FIDELITY_RESTART_KAFKA_VERSION` names, each built into tests/java/fidelity/target/<version>): the same case
  description applied op for op as `Runner` applies it. A line "close" on its stdin
  closes it cleanly.

Both take the same settings (Kafka Streams' names), both can be killed with SIGKILL, and both say when they
reached RUNNING since they were started and whether they failed.
"""

from __future__ import annotations

import functools
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import IO, Any, Protocol

from tests.fidelity import harness
from tests.helpers.app_process import AppProcess

REPO = Path(__file__).resolve().parents[2]
KAFKA_VERSION = os.environ.get("FIDELITY_RESTART_KAFKA_VERSION", harness.KAFKA_STREAMS_VERSION)
"""The Kafka Streams version of the Java side (4.4.0, tests/fidelity's default)."""


class App(Protocol):
    """One instance of one system running one case."""

    name: str
    log_path: Path

    def start(self) -> object: ...
    def running(self) -> bool: ...
    def alive(self) -> bool: ...
    def failure(self) -> str | None: ...
    def close(self, timeout: float = 90) -> int: ...
    def close_leaving(self, timeout: float = 90) -> int: ...
    def kill(self) -> None: ...
    def log_tail(self, lines: int = 40) -> str: ...


@functools.cache
def _classpath() -> str:
    """RestartApp's classpath: tests/java/fidelity built on `KAFKA_VERSION` (Maven, when needed) by
    tests/fidelity's harness, which keeps each version's build in tests/java/fidelity/target/<version>."""
    command = harness.build_runner(KAFKA_VERSION)
    return command[command.index("-cp") + 1]


def _class_archive(classpath: str) -> Path:
    """Where the JVM keeps the classes RestartApp loaded (a CDS archive, made by the first run that exits, used by
    the next ones: a JVM then starts in about half the time). Named after the jar's build, which it belongs to."""
    jar = Path(classpath.split(":", 1)[0])
    return jar.with_name(f"restart-app-{int(jar.stat().st_mtime)}.jsa")


class KafkaStreamsApp:
    """RestartApp in a JVM; its stdout lines (STATE, ERROR, CLOSED) go to the log and are watched."""

    name = "kafka-streams"

    def __init__(self, case_file: Path, settings: dict[str, Any], log_path: Path) -> None:
        classpath = _classpath()
        archive = _class_archive(classpath)
        sharing = f"-XX:SharedArchiveFile={archive}" if archive.exists() else f"-XX:ArchiveClassesAtExit={archive}"
        self._command = ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", sharing, "-cp", classpath,
                         "io.streamlet.fidelity.RestartApp", str(case_file), *(f"{k}={v}" for k, v in settings.items())]
        self.log_path = log_path
        self._proc: subprocess.Popen[str] | None = None
        self._lines: list[str] = []
        self._error: str | None = None

    def start(self) -> KafkaStreamsApp:
        self._lines = []
        self._error = None
        log = open(self.log_path, "a", encoding="utf-8")  # noqa: SIM115 - closed by the reader thread
        log.write(f"=== start @{int(time.time() * 1000)}\n")
        log.flush()
        self._proc = subprocess.Popen(self._command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                      text=True, encoding="utf-8", cwd=REPO)
        threading.Thread(target=self._read, args=(self._proc.stdout, log), daemon=True).start()
        return self

    def _read(self, stream: IO[str], log: IO[str]) -> None:
        with log:
            for line in stream:
                self._lines.append(line.rstrip("\n"))
                if line.startswith("ERROR "):
                    self._error = line[6:].rsplit(" @", 1)[0].strip()
                log.write(line)
                log.flush()

    def running(self) -> bool:
        return any(line.startswith("STATE RUNNING") for line in self._lines)

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None and self._error is None

    def failure(self) -> str | None:
        return self._error

    def close(self, timeout: float = 90) -> int:
        return self._close("close", timeout)

    def close_leaving(self, timeout: float = 90) -> int:
        """A clean close that leaves the group (a plain one does not: the group would wait for its session to
        time out before it hands the instance's tasks to another)."""
        return self._close("close-leave", timeout)

    def _close(self, command: str, timeout: float) -> int:
        assert self._proc is not None and self._proc.stdin is not None
        if self._proc.poll() is None:
            try:
                self._proc.stdin.write(command + "\n")
                self._proc.stdin.flush()
            except BrokenPipeError:
                pass
            try:
                self._proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        return self._proc.returncode

    def kill(self) -> None:
        assert self._proc is not None
        self._proc.kill()
        self._proc.wait()

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


class StreamletApp(AppProcess):
    """`streamlet run` of the case in a Python process; its log is watched for the state transitions."""

    name = "streamlet"

    def __init__(self, case_file: Path, settings: dict[str, Any], log_path: Path) -> None:
        super().__init__("tests.fidelity_restart.streamlet_app:topology", settings, log_path,
                         env={"RESTART_CASE_FILE": str(case_file)}, extra_args=["--close-timeout", "60"])
        self._offset = 0

    def start(self) -> StreamletApp:
        with open(self.log_path, "a", encoding="utf-8") as log:
            log.write(f"=== start @{int(time.time() * 1000)}\n")
        self._offset = self.log_path.stat().st_size
        super().start()
        return self

    def _since_start(self) -> str:
        if not self.log_path.exists():
            return ""
        with open(self.log_path, encoding="utf-8", errors="replace") as log:
            log.seek(self._offset)
            return log.read()

    def running(self) -> bool:
        return "to RUNNING" in self._since_start()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None and "to ERROR" not in self._since_start()

    def failure(self) -> str | None:
        text = self._since_start()
        if "to ERROR" not in text and "the application failed" not in text:
            return None
        lines = [line for line in text.splitlines() if "error" in line.lower()]
        return lines[-1] if lines else "failed"

    def close(self, timeout: float = 90) -> int:
        return self.stop(timeout)

    def close_leaving(self, timeout: float = 90) -> int:
        """A clean close: streamlet always leaves the group."""
        return self.stop(timeout)

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])
