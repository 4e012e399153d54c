"""Shared by the HTTP, metrics and page tests: free loopback ports, a WordCount served over HTTP, and an ASGI
app called the way an ASGI server calls it."""

from __future__ import annotations

import socket
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.helpers.app_process import AppProcess
from tests.helpers.kafka import create_topics


def free_ports(n: int) -> list[int]:
    """`n` loopback ports free right now."""
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


async def call_asgi(app: Any, path: str, root_path: str = "", method: str = "GET") -> tuple[int, bytes]:
    """Call the ASGI `app` as an ASGI server does, for `path` (with its query string) mounted under
    `root_path`: the response's status and body."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    path_only, _, query = path.partition("?")
    await app({"type": "http", "method": method, "path": path_only, "root_path": root_path,
               "query_string": query.encode(), "headers": []}, receive, send)
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])


@dataclass
class ServedWordCount:
    """A `streamlet run` WordCount (not started yet), its input topic and application id."""

    app: AppProcess
    input_topic: str
    application_id: str


async def served_wordcount(bootstrap: str, tmp_path: Path, prefix: str, partitions: int, extra_args: list[str],
                           settings: dict[str, Any]) -> ServedWordCount:
    """Create fresh input/output topics and describe a WordCount process run with `extra_args`."""
    sfx = uuid.uuid4().hex[:8]
    inp, out, app_id = f"{prefix}-in-{sfx}", f"{prefix}-out-{sfx}", f"{prefix}-{sfx}"
    await create_topics(bootstrap, {inp: partitions, out: partitions})
    settings = {"bootstrap.servers": bootstrap, "application.id": app_id, "state.dir": tmp_path / "s", **settings}
    app = AppProcess("tests.integration.wordcount_app:topology", settings,
                     tmp_path / "app.log", env={"WORDCOUNT_INPUT": inp, "WORDCOUNT_OUTPUT": out}, extra_args=extra_args)
    return ServedWordCount(app, inp, app_id)
