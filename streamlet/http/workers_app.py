"""`WorkersApp`: one HTTP view of all the workers of `streamlet run --workers N --http HOST:PORT`.

The pool process listens on PORT and worker i on PORT+1+i (each announces its own port as its
`application.server`, so queries forward between workers as between machines). The pool's view:

* `/metrics`: every worker's metrics in one exposition, each sample labelled `worker="i"` (a partition
  moving between workers can then never give two samples of one series), HELP and TYPE once per name;
* `/health/live`: 200 while any worker answers live; `/health/ready`: 200 once every worker is ready;
* anything else (queries, `/metadata`, the page): passed to the first worker that answers, which
  forwards a key to its owner itself.
"""

from __future__ import annotations

from streamlet.http.client import ForwardingError, get
from streamlet.http.server import Receive, Scope, Send, respond
from streamlet.metrics.prometheus import CONTENT_TYPE


def merge_expositions(expositions: list[tuple[str, str]]) -> str:
    """Merge Prometheus text expositions of (worker label, text): samples gain `worker="<label>"`."""
    meta: dict[str, list[str]] = {}
    samples: dict[str, list[str]] = {}
    for worker, text in expositions:
        for line in text.splitlines():
            if not line.strip():
                continue
            if line.startswith("#"):
                parts = line.split(" ", 3)
                if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                    entries = meta.setdefault(parts[2], [])
                    if not any(e.split(" ", 2)[1] == parts[1] for e in entries):
                        entries.append(line)
                continue
            name, brace, rest = line.partition("{")
            if brace:
                labels, _, value = rest.partition("} ")
                labelled = f'{name}{{{labels},worker="{worker}"}} {value}' if labels else \
                    f'{name}{{worker="{worker}"}} {value}'
            else:
                series, _, value = line.partition(" ")
                name, labelled = series, f'{series}{{worker="{worker}"}} {value}'
            samples.setdefault(name, []).append(labelled)
    lines: list[str] = []
    for name in sorted(samples):
        lines += meta.get(name, [])
        lines += samples[name]
    return "\n".join(lines) + "\n"


class WorkersApp:
    """The pool's ASGI app over the workers listening at `endpoints` (host, port), worker i at index i."""

    def __init__(self, endpoints: list[tuple[str, int]]) -> None:
        self.endpoints = endpoints

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        path = scope["path"]
        query = scope.get("query_string", b"").decode("latin-1")
        target = f"{path}?{query}" if query else path
        if path == "/metrics":
            status, content_type, body = 200, CONTENT_TYPE, (await self._metrics()).encode()
        elif path in ("/health/live", "/health/ready"):
            status, content_type, body = await self._health(path)
        else:
            status, content_type, body = await self._first_worker(target)
        await respond(send, status, content_type, body)

    async def _metrics(self) -> str:
        found: list[tuple[str, str]] = []
        for index, (host, port) in enumerate(self.endpoints):
            try:
                status, _, body = await get(host, port, "/metrics")
            except ForwardingError:
                continue  # a worker being replaced: its series pause
            if status == 200:
                found.append((str(index), body.decode("utf-8")))
        return merge_expositions(found)

    async def _health(self, path: str) -> tuple[int, str, bytes]:
        statuses = []
        for host, port in self.endpoints:
            try:
                statuses.append((await get(host, port, path))[0])
            except ForwardingError:
                statuses.append(503)
        ok = any(s == 200 for s in statuses) if path.endswith("live") else all(s == 200 for s in statuses)
        body = ('{"workers": [' + ",".join(str(s) for s in statuses) + "]}").encode()
        return (200 if ok else 503), "application/json", body

    async def _first_worker(self, target: str) -> tuple[int, str, bytes]:
        for host, port in self.endpoints:
            try:
                return await get(host, port, target)
            except ForwardingError:
                continue
        return 503, "application/json", b'{"error": "no worker answers"}'
