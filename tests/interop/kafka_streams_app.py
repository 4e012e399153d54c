"""A real Kafka Streams 4.4.0 application in a subprocess, for the offline-move tests.

`KafkaStreamsApp` builds tests/java/interop with Maven when a source is newer than the jar (the build
stays in tests/java/interop/target), starts `io.streamlet.interop.Main` with one of its topologies, and follows the
lines it prints (DESCRIBE, STATE ..., CLOSED; see Main.java). `close()` closes it the way Kafka
Streams closes by default, whose members stay in the group until their session times out.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import IO, Any

from tests.helpers.maven import built_classpath

JAVA_DIR = Path(__file__).parents[1] / "java" / "interop"
_MAIN = "io.streamlet.interop.Main"
_ACTIVE_TASKS = re.compile(r"Assigning active tasks \{\d")


def java_available() -> bool:
    return shutil.which("java") is not None and shutil.which("mvn") is not None


def java_command() -> list[str]:
    """Compile the module if needed (`built_classpath`); returns the java command that starts `Main` (append
    its arguments)."""
    return ["java", "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-Dorg.slf4j.simpleLogger.showDateTime=true", "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS", "-cp",
            built_classpath(JAVA_DIR, "streamlet-interop-0.1.0.jar"), _MAIN]


def _arguments(app: str, topics: dict[str, str], settings: dict[str, Any]) -> list[str]:
    return [app, *(f"topic.{k}={v}" for k, v in topics.items()), *(f"{k}={v}" for k, v in settings.items())]


def java_describe(app: str, topics: dict[str, str], settings: dict[str, Any] | None = None) -> str:
    """Kafka Streams' `describe()` of the interop topology `app` over these topics (`settings`: the app's own)."""
    out = subprocess.run([*java_command(), *_arguments(app, topics, {**(settings or {}), "describe.only": "true"})],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    for line in out.splitlines():
        if line.startswith("DESCRIBE "):
            return str(json.loads(line[len("DESCRIBE "):]))
    raise AssertionError(f"no DESCRIBE line in:\n{out}")


class KafkaStreamsApp:
    """One Kafka Streams instance (its own JVM) running the interop topology `app`."""

    def __init__(self, app: str, topics: dict[str, str], settings: dict[str, Any], log_path: Path) -> None:
        self._args = _arguments(app, topics, settings)
        self.log_path = log_path
        self.lines: list[str] = []
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> KafkaStreamsApp:
        self._log = open(self.log_path, "a", encoding="utf-8")  # noqa: SIM115 - closed when the process ends
        self.proc = subprocess.Popen([*java_command(), *self._args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._log, text=True, encoding="utf-8")
        assert self.proc.stdout is not None
        threading.Thread(target=self._follow, args=(self.proc.stdout,), daemon=True).start()
        return self

    def _follow(self, stream: IO[str]) -> None:
        for line in stream:
            self.lines.append(line.rstrip("\n"))

    def states(self) -> list[str]:
        return [line[len("STATE "):] for line in self.lines if line.startswith("STATE ")]

    async def wait_for_line(self, line: str, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if line in self.lines:
                return
            assert self.proc is not None
            if self.proc.poll() is not None and line not in self.lines:
                raise AssertionError(f"Kafka Streams exited with {self.proc.returncode} before {line!r}: "
                                     f"{self.lines[-20:]}\n{self.log_tail()}")
            await asyncio.sleep(0.2)
        raise TimeoutError(f"{line!r} not printed by Kafka Streams after {timeout}s: {self.lines[-20:]}\n"
                           f"{self.log_tail()}")

    async def wait_for_active_tasks(self, timeout: float = 120.0) -> None:
        """Until this instance logged that it was handed active tasks (a member of a group may have none)."""
        deadline = time.monotonic() + timeout
        while not _ACTIVE_TASKS.search(self.log_path.read_text(errors="replace")):
            if time.monotonic() > deadline:
                raise TimeoutError(f"no active task handed to the Kafka Streams instance of {self.log_path.name}:\n"
                                   f"{self.log_tail()}")
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"Kafka Streams exited with {self.proc.returncode}:\n{self.log_tail()}")
            await asyncio.sleep(0.5)

    async def close(self, leave_group: bool = False, timeout: float = 90.0) -> int:
        """Close it (by default as Kafka Streams closes: without leaving the group); its exit code."""
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write("close-leave\n" if leave_group else "close\n")
        self.proc.stdin.flush()
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        return self.kill()

    def kill(self) -> int:
        """End the JVM if it still runs; its exit code."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.kill()
        code = self.proc.wait()
        self._log.close()
        return code

    def log_tail(self, chars: int = 3000) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")[-chars:]
