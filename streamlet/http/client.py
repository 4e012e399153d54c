"""Forwarding a query to the instance that owns the key: one GET over asyncio streams, JSON back.

Instances talk to each other only through the endpoints they announce (`application.server`), with
the same small HTTP the server speaks; nothing else needs to be installed on either side.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson


class ForwardingError(Exception):
    """The owner could not be reached or answered garbage; the caller answers 502."""


async def get_json(host: str, port: int, path_and_query: str, timeout: float = 10.0) -> tuple[int, Any]:
    """GET `path_and_query` from host:port; returns (status, decoded JSON body)."""
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(host, port)
            try:
                writer.write(f"GET {path_and_query} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n"
                             .encode("latin-1"))
                await writer.drain()
                response = await reader.read()
            finally:
                writer.close()
    except (OSError, TimeoutError) as exc:
        raise ForwardingError(f"cannot reach {host}:{port}: {exc}") from exc
    head, _, body = response.partition(b"\r\n\r\n")
    try:
        status = int(head.split(b" ", 2)[1])
        return status, orjson.loads(body) if body else None
    except (IndexError, ValueError, orjson.JSONDecodeError) as exc:
        raise ForwardingError(f"{host}:{port} answered something that is not JSON over HTTP") from exc
