"""A real fault-injecting TCP proxy for the network-fault tests: toxiproxy, run and driven from Python.

`make toxiproxy` builds `toxiproxy-server` (pinned in the Makefile) into `.cache/bin`; `find_server()`
runs that target itself when the binary is missing, so a plain `pytest` on a fresh clone works too,
and only a machine without Go (and outside CI) skips the tests that need it.

`ToxiproxyServer` starts the server on a free loopback port as a child process that dies with this
process, and speaks its HTTP API with the standard library (a few small JSON requests on loopback,
so no HTTP client dependency). A `Proxy` listens on one loopback port and forwards to an upstream;
faults are toxics (latency, reset_peer, timeout, bandwidth) or disabling the proxy, which closes
every connection through it and refuses new ones (a full cut).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streamlet.runtime.parent_death import die_with_parent
from streamlet.testing.local_broker import HOST, free_ports
from tests.helpers.app_process import REPO
from tests.helpers.go_tools import ChildServer, find_built

SERVER = REPO / ".cache" / "bin" / "toxiproxy-server"


def find_server() -> Path:
    """The toxiproxy-server binary, built by `make toxiproxy` if it is not there yet (`find_built`)."""
    return find_built(SERVER, "toxiproxy", "network-fault tests")


@dataclass
class Proxy:
    """One proxy of a running server: `listen_port` forwards to `upstream` while enabled."""

    server: ToxiproxyServer
    name: str
    listen_port: int
    upstream: str

    @property
    def address(self) -> str:
        return f"{HOST}:{self.listen_port}"

    def add_toxic(self, name: str, kind: str, stream: str = "downstream", toxicity: float = 1.0,
                  **attributes: int) -> None:
        """Add a toxic; `stream` is "upstream" (client to server) or "downstream" (server to client)."""
        self.server.request("POST", f"/proxies/{self.name}/toxics", {
            "name": name, "type": kind, "stream": stream, "toxicity": toxicity, "attributes": attributes,
        })

    def remove_toxic(self, name: str) -> None:
        self.server.request("DELETE", f"/proxies/{self.name}/toxics/{name}")

    def toxics(self) -> list[dict[str, Any]]:
        found = self.server.request("GET", f"/proxies/{self.name}/toxics")
        assert isinstance(found, list)
        return found

    def add_latency(self, latency_ms: int, jitter_ms: int = 0) -> None:
        """The same latency in both directions (toxics `latency-upstream` and `latency-downstream`)."""
        for stream in ("upstream", "downstream"):
            self.add_toxic(f"latency-{stream}", "latency", stream,
                           latency=latency_ms, jitter=jitter_ms)

    def remove_latency(self) -> None:
        for stream in ("upstream", "downstream"):
            self.remove_toxic(f"latency-{stream}")

    def set_enabled(self, enabled: bool) -> None:
        """Disabled: the listener closes and every open connection is closed; enabled: accepts again."""
        self.server.request("POST", f"/proxies/{self.name}", {"enabled": enabled})


class ToxiproxyServer(ChildServer):
    """A toxiproxy-server child process on a free loopback port, and a client for its HTTP API."""

    def __init__(self, log_path: Path, binary: Path | None = None) -> None:
        self.binary = binary
        self.log_path = log_path
        self.port: int | None = None
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> ToxiproxyServer:
        binary = self.binary or find_server()
        self.port = free_ports(1)[0]
        with open(self.log_path, "ab") as out:
            self._process = subprocess.Popen(
                [str(binary), "-host", HOST, "-port", str(self.port)],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, preexec_fn=die_with_parent(),
            )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"toxiproxy-server exited with {self._process.returncode}; "
                                   f"see {self.log_path}")
            with contextlib.suppress(OSError):
                self.request("GET", "/version")
                return self
            time.sleep(0.05)
        raise RuntimeError(f"toxiproxy-server did not answer on {HOST}:{self.port} within 20s")

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """One API call; an HTTP error becomes a RuntimeError carrying the server's explanation."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"http://{HOST}:{self.port}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as response:
                text = response.read()
        except urllib.error.HTTPError as error:
            raise RuntimeError(f"toxiproxy {method} {path}: {error.code} {error.read().decode()}") from error
        return json.loads(text) if text.strip() else None

    def create_proxy(self, name: str, listen_port: int, upstream: str) -> Proxy:
        self.request("POST", "/proxies", {"name": name, "listen": f"{HOST}:{listen_port}", "upstream": upstream,
                                          "enabled": True})
        return Proxy(self, name, listen_port, upstream)

    def reset(self) -> None:
        """Every proxy enabled again and every toxic removed (between tests sharing a server)."""
        self.request("POST", "/reset")
