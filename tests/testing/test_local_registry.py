"""The development schema registry: `LocalSchemaRegistry` and `streamlet registry start|status|stop`,
a real Apicurio Registry serving Confluent's API."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from streamlet.errors import BrokerUnavailableError
from streamlet.testing import local_broker
from streamlet.testing.local_registry import (
    CONFLUENT_API_PATH,
    REGISTRY3_VERSION,
    LocalSchemaRegistry,
    find_java_at_least,
)
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


_LOOPBACK = {"0100007F", "0000000000000000FFFF00000100007F"}  # 127.0.0.1 and ::ffff:127.0.0.1 as /proc writes them


def _listening_addresses(pid: int) -> list[str]:
    """The local addresses (as /proc/net/tcp* writes them) of the TCP sockets process `pid` listens on."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    found = []
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # state LISTEN, the socket's inode
                found.append(fields[1].rsplit(":", 1)[0])
    return found


def test_local_registry_3_serves_confluents_api_on_the_loopback_only() -> None:
    try:
        find_java_at_least(21)
    except BrokerUnavailableError as missing:
        pytest.skip(str(missing))
    with LocalSchemaRegistry(version=REGISTRY3_VERSION) as registry:
        assert registry.url == f"http://127.0.0.1:{registry.port}{CONFLUENT_API_PATH}"
        assert _subjects(registry.url) == []
        info = f"http://127.0.0.1:{registry.port}/apis/registry/v3/system/info"
        with urllib.request.urlopen(info, timeout=10) as response:
            assert json.loads(response.read())["version"] == REGISTRY3_VERSION
        assert registry.pid is not None
        listening = _listening_addresses(registry.pid)
        assert len(listening) == 2 and set(listening) <= _LOOPBACK  # the API and the management interface
        pid = registry.pid
    assert not local_broker._pid_alive(pid)


def test_unknown_registry_version_and_too_old_java_are_refused() -> None:
    with pytest.raises(ValueError, match="2.6.13.Final"):
        LocalSchemaRegistry(version="9.9.9")
    with pytest.raises(BrokerUnavailableError, match="no Java 999"):
        find_java_at_least(999)
