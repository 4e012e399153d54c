"""A small HTTP/1.1 server for ASGI apps, on asyncio streams alone (no dependency).

It runs `streamlet run --http HOST:PORT` and nothing more: GET and HEAD requests, bodies read by
Content-Length, one request per connection (`Connection: close`). An application that already has
an ASGI server (uvicorn, hypercorn) mounts `streamlet.http.streams_app(streams)` there instead.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import unquote, urlsplit

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_MAX_HEADER_BYTES = 64 * 1024
_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed", 500: "Internal Server Error",
            502: "Bad Gateway", 503: "Service Unavailable"}


async def respond(send: Send, status: int, content_type: str, body: bytes) -> None:
    """Send one whole ASGI response."""
    headers = [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def serve(app: ASGIApp, host: str, port: int) -> asyncio.Server:
    """Start serving `app` on host:port; close the returned server to stop (`port` 0 picks a free one)."""
    async def on_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await _one_request(app, reader, writer, (host, port))
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        except Exception:
            log.exception("HTTP request failed")
        finally:
            writer.close()

    return await asyncio.start_server(on_connection, host, port, limit=_MAX_HEADER_BYTES)


async def _one_request(app: ASGIApp, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                       server: tuple[str, int]) -> None:
    head = await reader.readuntil(b"\r\n\r\n")
    request_line, *header_lines = head.decode("latin-1").split("\r\n")
    method, target, _version = request_line.split(" ", 2)
    headers = [tuple(line.split(":", 1)) for line in header_lines if ":" in line]
    raw_headers = [(name.strip().lower().encode("latin-1"), value.strip().encode("latin-1")) for name, value in headers]
    length = int(dict(raw_headers).get(b"content-length", b"0") or 0)
    body = await reader.readexactly(length) if length else b""
    url = urlsplit(target)
    scope: Scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method.upper(),
                    "scheme": "http", "path": unquote(url.path), "raw_path": url.path.encode("latin-1"),
                    "query_string": url.query.encode("latin-1"), "root_path": "", "headers": raw_headers,
                    "server": server, "client": writer.get_extra_info("peername")}
    received = False

    async def receive() -> Message:
        nonlocal received
        if received:
            return {"type": "http.disconnect"}
        received = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            status = int(message["status"])
            lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}"]
            lines += [f"{k.decode('latin-1')}: {v.decode('latin-1')}" for k, v in message.get("headers", [])]
            lines.append("Connection: close")
            writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        elif message["type"] == "http.response.body" and method.upper() != "HEAD":
            writer.write(message.get("body", b""))
        await writer.drain()

    await app(scope, receive, send)


def serve_in_thread(app: ASGIApp, host: str, port: int) -> None:
    """Serve `app` from a daemon thread with an event loop of its own, for a process that has none
    (the `--workers` pool supervises its workers synchronously). It ends with the process."""
    started = threading.Event()
    failure: list[BaseException] = []

    async def forever() -> None:
        try:
            server = await serve(app, host, port)
        except BaseException as exc:
            failure.append(exc)
            raise
        finally:
            started.set()
        await server.serve_forever()

    threading.Thread(target=lambda: asyncio.run(forever()), daemon=True, name="streamlet-http").start()
    started.wait()
    if failure:
        raise failure[0]
