"""A small HTTP/1.1 server for ASGI apps, on asyncio streams alone (no dependency).

It runs `streamlet run --http HOST:PORT` and nothing more: GET, HEAD and POST requests, bodies read by
Content-Length, one request per connection (`Connection: close`). An application that already has
an ASGI server (uvicorn, hypercorn) mounts `streamlet.http.streams_app(streams)` there instead.
A request is always answered: a malformed one with 400, an app that fails before it answers with 500
(JSON `{"error": ...}`, the traceback in the log); the server itself keeps serving.
"""

from __future__ import annotations

import asyncio
import json
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
    try:
        method, target, _version = request_line.split(" ", 2)
        headers = [tuple(line.split(":", 1)) for line in header_lines if ":" in line]
        raw_headers = [(name.strip().lower().encode("latin-1"), value.strip().encode("latin-1"))
                       for name, value in headers]
        length = int(dict(raw_headers).get(b"content-length", b"0") or 0)
    except ValueError:
        _answer_error(writer, 400, f"malformed request {request_line[:200]!r}")
        await writer.drain()
        return
    body = await reader.readexactly(length) if length else b""
    url = urlsplit(target)
    scope: Scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method.upper(),
                    "scheme": "http", "path": unquote(url.path), "raw_path": url.path.encode("latin-1"),
                    "query_string": url.query.encode("latin-1"), "root_path": "", "headers": raw_headers,
                    "server": server, "client": writer.get_extra_info("peername")}
    received = False
    started = False

    async def receive() -> Message:
        nonlocal received
        if received:
            return {"type": "http.disconnect"}
        received = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Message) -> None:
        nonlocal started
        if message["type"] == "http.response.start":
            started = True
            status = int(message["status"])
            lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}"]
            lines += [f"{k.decode('latin-1')}: {v.decode('latin-1')}" for k, v in message.get("headers", [])]
            lines.append("Connection: close")
            writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        elif message["type"] == "http.response.body" and method.upper() != "HEAD":
            writer.write(message.get("body", b""))
        await writer.drain()

    try:
        await app(scope, receive, send)
    except Exception as exc:
        if started:  # part of the answer is out: all that is left is to close the connection
            raise
        log.error("HTTP app failed on %s %s", method, target, exc_info=exc)
        _answer_error(writer, 500, f"{type(exc).__name__}: {exc}")
        await writer.drain()


def _answer_error(writer: asyncio.StreamWriter, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    writer.write((f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}\r\ncontent-type: application/json\r\n"
                  f"content-length: {len(body)}\r\nConnection: close\r\n\r\n").encode("latin-1") + body)


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
