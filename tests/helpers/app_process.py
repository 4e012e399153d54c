"""A `streamlet run` application in an OS process of its own, as an operator starts it: started, stopped
(SIGTERM), killed (kill -9), frozen (SIGSTOP) and resumed, its log followed."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
"""The repository's root: the apps' working directory and PYTHONPATH."""


class AppProcess:
    """A `streamlet run` app instance in its own OS process."""

    def __init__(self, target: str, settings: dict[str, Any], log_path: Path,
                 env: dict[str, str] | None = None, extra_args: list[str] | None = None) -> None:
        self.target = target
        self.extra_args = extra_args or []
        self.settings = settings
        self.log_path = log_path
        self.env = env or {}
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> AppProcess:
        args = [sys.executable, "-m", "streamlet", "run", self.target, *self.extra_args]
        for k, v in self.settings.items():
            args += ["--set", f"{k}={v}"]
        env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1", **self.env)
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(args, cwd=REPO, env=env, stdout=self._log, stderr=subprocess.STDOUT)
        return self

    def stop(self, timeout: float = 60) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        return self.proc.returncode

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait()
        self._log.close()

    def clone(self, index: int) -> AppProcess:
        """Another instance of the same application, with its own state directory and log."""
        settings = dict(self.settings)
        if "state.dir" in settings:
            settings["state.dir"] = Path(settings["state.dir"]).with_name(f"state-{index}")
        return AppProcess(self.target, settings, self.log_path.with_name(f"app-{index}.log"), self.env,
                          self.extra_args)

    def pause(self) -> None:
        """SIGSTOP: the process is frozen (no heartbeats, no commits) but keeps its connections."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGCONT)

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    async def wait_for_log(self, text: str, timeout: float = 60.0) -> None:
        """Wait until the app's log contains `text` (e.g. a task started after a rebalance)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.log_text():
                return
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"the app exited with {self.proc.returncode}:\n{self.log_text()[-3000:]}")
            await asyncio.sleep(0.2)
        raise TimeoutError(f"{text!r} not in the app's log after {timeout}s:\n{self.log_text()[-3000:]}")
