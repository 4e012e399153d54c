"""Forwarding a query to the instance that owns the key: one GET (or an IQv2 POST) over asyncio streams, JSON back.

Instances talk to each other only through the endpoints they announce (`application.server`), with
the same small HTTP the server speaks; nothing else needs to be installed on either side.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson


class ForwardingError(Exception):
    """The owner could not be reached or answered garbage; the caller answers 502."""


async def get(host: str, port: int, path_and_query: str, timeout: float = 10.0) -> tuple[int, str, bytes]:
    """GET `path_and_query` from host:port; returns (status, content type, body). Only for servers
    that answer with Content-Length or close the connection (this package's server does both)."""
    return await request(host, port, "GET", path_and_query, None, timeout)


async def request(host: str, port: int, method: str, path_and_query: str, body: bytes | None,
                  timeout: float = 10.0) -> tuple[int, str, bytes]:
    """One request (a JSON `body` when given) to host:port; returns (status, content type, body)."""
    request_head = f"{method} {path_and_query} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n"
    if body is not None:
        request_head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(host, port)
            try:
                writer.write((request_head + "\r\n").encode("latin-1") + (body or b""))
                await writer.drain()
                response = await reader.read()
            finally:
                writer.close()
    except (OSError, TimeoutError) as exc:
        raise ForwardingError(f"cannot reach {host}:{port}: {exc}") from exc
    head, _, body = response.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    try:
        status = int(lines[0].split(" ", 2)[1])
    except (IndexError, ValueError) as exc:
        raise ForwardingError(f"{host}:{port} did not answer HTTP") from exc
    headers = {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines[1:])}
    return status, headers.get("content-type", ""), body


async def get_json(host: str, port: int, path_and_query: str, timeout: float = 10.0) -> tuple[int, Any]:
    """GET `path_and_query` from host:port; returns (status, decoded JSON body)."""
    status, _content_type, body = await get(host, port, path_and_query, timeout)
    return _decoded(host, port, status, body)


async def post_json(host: str, port: int, path: str, data: Any, timeout: float = 10.0) -> tuple[int, Any]:
    """POST `data` as JSON to host:port; returns (status, decoded JSON body)."""
    status, _content_type, body = await request(host, port, "POST", path, orjson.dumps(data), timeout)
    return _decoded(host, port, status, body)


def _decoded(host: str, port: int, status: int, body: bytes) -> tuple[int, Any]:
    try:
        return status, orjson.loads(body) if body else None
    except orjson.JSONDecodeError as exc:
        raise ForwardingError(f"{host}:{port} answered something that is not JSON") from exc
