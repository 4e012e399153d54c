"""A real Keycloak on 127.0.0.1 for the tests of refused credentials: Apicurio Registry 2.6 checks a basic-auth
user:password only through Keycloak (its `CLIENT_CREDENTIALS_BASIC_AUTH_ENABLED` mode: the user is a Keycloak
client's id, the password its secret, checked by a client-credentials grant), so a registry that answers a
wrong password with HTTP 401 is Apicurio in front of this.

Keycloak 26 (`org.keycloak:keycloak-quarkus-dist`, fetched once from Maven Central with Maven into the cache,
as the broker and the registry are) needs Java 21 or later: `KEYCLOAK_JAVA_HOME`, else the newest JDK under
/usr/lib/jvm that is 21 or later. It runs in development mode with an in-memory database, listens on the
loopback interface only, and dies with the process that started it; realms and clients are made through its
admin REST API.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import IO, Any

from streamlet.errors import BrokerUnavailableError
from streamlet.kafka.maven_jars import cache_dir, fetch_maven_archive, file_lock
from streamlet.runtime.parent_death import die_with_parent
from streamlet.testing.local_broker import HOST, _tail, free_ports, terminate_pid

KEYCLOAK_VERSION = "26.4.0"
_ARTIFACT = f"org.keycloak:keycloak-quarkus-dist:{KEYCLOAK_VERSION}:tar.gz"
_ADMIN = ("admin", "admin-local-only")


def keycloak_home() -> Path:
    """The unpacked distribution in the cache (fetched with Maven the first time)."""
    home = cache_dir() / f"keycloak-{KEYCLOAK_VERSION}"
    fetch_maven_archive(_ARTIFACT, home, f"Keycloak {KEYCLOAK_VERSION}", f"keycloak-{KEYCLOAK_VERSION}/bin/kc.sh")
    return home / f"keycloak-{KEYCLOAK_VERSION}"


def java_21_home() -> Path:
    """A JDK of version 21 or later: `KEYCLOAK_JAVA_HOME`, else the newest under /usr/lib/jvm."""
    given = os.environ.get("KEYCLOAK_JAVA_HOME")
    if given:
        return Path(given)
    found: list[tuple[int, Path]] = []
    for candidate in Path("/usr/lib/jvm").glob("*"):
        release = candidate / "release"  # JAVA_VERSION="25.0.1"
        text = release.read_text(errors="replace") if release.is_file() else ""
        match = re.search(r'^JAVA_VERSION="(\d+)', text, re.MULTILINE)
        if match and int(match.group(1)) >= 21 and (candidate / "bin" / "java").is_file():
            found.append((int(match.group(1)), candidate))
    if not found:
        raise BrokerUnavailableError("Keycloak needs Java 21 or later: none under /usr/lib/jvm; set KEYCLOAK_JAVA_HOME")
    return max(found)[1]


class LocalKeycloak:
    """Keycloak on 127.0.0.1, development mode, in-memory database (context manager)."""

    def __init__(self, startup_timeout: float = 600.0) -> None:
        self.startup_timeout = startup_timeout
        self.port: int | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._out: IO[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def log_file(self) -> Path:
        return cache_dir() / f"keycloak-{self.port}.out"

    def start(self) -> LocalKeycloak:
        home = keycloak_home()
        self.port = free_ports(1)[0]
        environment = {**os.environ, "JAVA_HOME": str(java_21_home()), "KC_BOOTSTRAP_ADMIN_USERNAME": _ADMIN[0],
                       "KC_BOOTSTRAP_ADMIN_PASSWORD": _ADMIN[1]}
        self._out = open(self.log_file, "ab")  # noqa: SIM115 - closed in stop
        # Development mode re-builds the distribution in place before it starts: one at a time.
        with file_lock(home.parent / "start.lock"):
            self._process = subprocess.Popen(
                [str(home / "bin" / "kc.sh"), "start-dev", f"--http-port={self.port}", f"--http-host={HOST}",
                 "--db=dev-mem", f"--http-management-port={free_ports(1)[0]}"],
                cwd=home, env=environment, stdin=subprocess.DEVNULL, stdout=self._out, stderr=subprocess.STDOUT,
                preexec_fn=die_with_parent())
            try:
                self._wait_until_ready()
            except BaseException:
                self.stop()
                raise
        return self

    def _wait_until_ready(self) -> None:
        assert self._process is not None
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            code = self._process.poll()
            if code is not None:
                raise BrokerUnavailableError(f"Keycloak exited with code {code} while starting; see "
                                             f"{self.log_file}:\n{_tail(self.log_file)}")
            try:
                with urllib.request.urlopen(f"{self.url}/realms/master", timeout=2.0) as response:
                    if response.status == 200:
                        return
            except (OSError, urllib.error.URLError):
                pass
            time.sleep(0.5)
        raise BrokerUnavailableError(f"Keycloak did not answer within {self.startup_timeout:.0f}s; see {self.log_file}")

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            terminate_pid(process.pid, 30.0, "Keycloak")
        if process is not None:
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        if self._out is not None:
            self._out.close()
            self._out = None

    def __enter__(self) -> LocalKeycloak:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    # -- the admin REST API --------------------------------------------------------------------------------
    def _call(self, method: str, path: str, body: Any = None, token: str | None = None,
              form: dict[str, str] | None = None) -> Any:
        headers = {}
        data = None
        if form is not None:
            data = urllib.parse.urlencode(form).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        elif body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        request = urllib.request.Request(f"{self.url}{path}", data=data, headers=headers, method=method)
        with urllib.request.urlopen(request, timeout=300) as response:  # a realm takes long on a loaded machine
            text = response.read()
        return json.loads(text) if text else None

    def _admin_token(self) -> str:
        answer = self._call("POST", "/realms/master/protocol/openid-connect/token", form={
            "grant_type": "password", "client_id": "admin-cli", "username": _ADMIN[0], "password": _ADMIN[1]})
        return str(answer["access_token"])

    def create_realm(self, realm: str, clients: dict[str, str | None]) -> None:
        """A realm with these clients: a secret makes a confidential client whose service account can take a
        client-credentials token (a registry user, the secret its password); None a client without one."""
        self._call("POST", "/admin/realms", {"realm": realm, "enabled": True}, self._admin_token())
        for client_id, secret in clients.items():
            client: dict[str, Any] = {"clientId": client_id, "enabled": True, "protocol": "openid-connect",
                                      "standardFlowEnabled": False, "directAccessGrantsEnabled": False}
            if secret is None:
                client["bearerOnly"] = True
            else:
                client.update({"publicClient": False, "secret": secret, "serviceAccountsEnabled": True,
                               "clientAuthenticatorType": "client-secret"})
            # A fresh token for each call: the admin's lives 60 s, less than a realm took on a loaded machine.
            self._call("POST", f"/admin/realms/{realm}/clients", client, self._admin_token())
