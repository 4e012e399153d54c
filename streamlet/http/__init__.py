"""The HTTP face of a streamlet application: interactive queries, health, metrics, the live page.

`streams_app(streams)` is a plain ASGI app: mount it in your own ASGI server or framework, e.g.

    app.mount("/streams", streams_app(streams))          # Starlette / FastAPI

or let streamlet serve it on its own small asyncio HTTP server (what `streamlet run --http HOST:PORT`
does), inside your event loop next to the `KafkaStreams` it serves:

    async with KafkaStreams(topology, config) as streams:
        server = await serve(streams_app(streams), "0.0.0.0", 8080)
        ...
        server.close()

Set `application.server` to the host:port other instances reach this one at, so that any instance
can forward a key query to the key's owner. See `streamlet.http.streams_app` for the routes.
"""

from __future__ import annotations

from typing import Any

from streamlet.http.server import serve
from streamlet.http.streams_app import StreamsApp


def streams_app(streams: Any) -> StreamsApp:
    """The ASGI app of `streams` (a `KafkaStreams`): queries, `/metadata` and `/health/*`."""
    return StreamsApp(streams)


__all__ = ["StreamsApp", "serve", "streams_app"]
