"""The environment for a `streamlet broker|registry start|stop|status` test: a private state folder, and
whatever the test left running stopped afterwards (`dev_service_env`)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from streamlet.testing import local_broker

REPO = Path(__file__).resolve().parents[2]


@contextmanager
def dev_service_env(state_dir: Path, env_var: str, what: str) -> Iterator[dict[str, str]]:
    """The environment for the commands of one development service (`env_var` names its state folder, set to
    `state_dir`); on exit, stops the process its state file names if it still runs (`what` is its name)."""
    yield dict(os.environ, PYTHONPATH=str(REPO), **{env_var: str(state_dir)})
    state_file = state_dir / "state.json"
    if state_file.exists():
        pid = json.loads(state_file.read_text())["pid"]
        if local_broker._pid_alive(pid):
            local_broker.terminate_pid(pid, 30, what)
