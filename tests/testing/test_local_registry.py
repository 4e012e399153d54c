"""The development schema registry: `LocalSchemaRegistry` and `streamlet registry start|status|stop`,
a real Apicurio Registry serving Confluent's API."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from streamlet.testing import local_broker
from streamlet.testing.local_registry import CONFLUENT_API_PATH, LocalSchemaRegistry
from tests.helpers.dev_services import dev_service_env

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.registry


def _subjects(url: str) -> list[str]:
    with urllib.request.urlopen(f"{url}/subjects", timeout=10) as response:
        return json.loads(response.read())  # type: ignore[no-any-return]


def test_local_registry_serves_confluents_api_and_stops() -> None:
    with LocalSchemaRegistry() as registry:
        assert registry.url == f"http://127.0.0.1:{registry.port}{CONFLUENT_API_PATH}"
        assert registry.is_running()
        assert _subjects(registry.url) == []
        pid = registry.pid
        assert pid is not None
    assert not registry.is_running()
    assert not local_broker._pid_alive(pid)


@pytest.fixture()
def dev_registry_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """Environment for registry commands with a private state dir; stops any registry left behind."""
    with dev_service_env(tmp_path / "dev-registry", "STREAMLET_DEV_REGISTRY_DIR", "the schema registry") as env:
        yield env


def streamlet(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "streamlet", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=180, stdin=subprocess.DEVNULL, check=False)


def test_registry_start_status_stop(dev_registry_env: dict[str, str]) -> None:
    assert streamlet(dev_registry_env, "registry", "status").returncode == 3
    port = local_broker.free_ports(1)[0]
    started = streamlet(dev_registry_env, "registry", "start", "--port", str(port))
    assert started.returncode == 0, started.stderr
    url = f"http://127.0.0.1:{port}{CONFLUENT_API_PATH}"
    assert started.stdout.strip() == url
    assert _subjects(url) == []  # it outlived the command that started it

    status = streamlet(dev_registry_env, "registry", "status")
    assert status.returncode == 0 and f"running at {url}" in status.stdout
    again = streamlet(dev_registry_env, "registry", "start")
    assert again.stdout.strip() == url and "already running" in again.stderr

    stopped = streamlet(dev_registry_env, "registry", "stop")
    assert stopped.stdout.strip() == f"stopped the schema registry at {url}"
    assert streamlet(dev_registry_env, "registry", "status").returncode == 3
    assert streamlet(dev_registry_env, "registry", "stop").stdout.strip() == "not running"
