"""Servers the suite builds from Go modules (`make toxiproxy`, `make jaeger`) into `.cache/bin`."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import pytest

from tests.helpers.app_process import REPO


def find_built(binary: Path, make_target: str, needed_for: str) -> Path:
    """`binary`, built by `make <make_target>` if it is not there yet.

    Without Go or make the test is skipped, except under CI (`CI` set), where a skipped test would hide that
    the suite did not run what it claims: there it fails instead.
    """
    if binary.is_file():
        return binary
    reason = None
    if shutil.which("make") is None:
        reason = "make is not on PATH"
    elif shutil.which("go") is None and not Path("/usr/local/go/bin/go").is_file():
        reason = "Go is not installed (neither go on PATH nor /usr/local/go/bin/go)"
    else:
        result = subprocess.run(["make", "-s", make_target], cwd=REPO, capture_output=True, text=True, check=False)
        if result.returncode != 0 or not binary.is_file():
            reason = f"`make {make_target}` failed ({result.returncode}): {(result.stdout + result.stderr)[-2000:]}"
    if reason is None:
        return binary
    if os.environ.get("CI"):
        pytest.fail(f"{binary.name} is needed and cannot be built: {reason}")
    pytest.skip(f"{binary.name} is needed for {needed_for} and cannot be built: {reason}")


class ChildServer:
    """A server child process of the test (started by a subclass's `start`), stopped on leaving a `with`."""

    _process: subprocess.Popen[bytes] | None = None

    def start(self) -> Any:
        raise NotImplementedError

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
