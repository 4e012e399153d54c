"""The ASGI app mounted under a prefix, as a framework mounts it, called the way an ASGI server calls it."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from streamlet import KafkaStreams
from streamlet.http import streams_app
from tests.http.served_apps import call_asgi
from tests.queries.query_app import topology

pytestmark = pytest.mark.anyio


async def test_mounted_under_a_prefix_the_routes_answer_before_start(tmp_path: Path) -> None:
    streams = KafkaStreams(topology(), {"application.id": "mounted", "state.dir": str(tmp_path)})
    app = streams_app(streams)
    for root, path in (("/streams", "/streams/health/live"), ("/streams", "/health/live"), ("", "/health/live")):
        status, body = await call_asgi(app, path, root)
        assert status == 200 and orjson.loads(body) == {"state": "CREATED"}
    assert (await call_asgi(app, "/streams/health/ready", "/streams"))[0] == 503
    status, body = await call_asgi(app, "/streams/stores/counts/keys/a", "/streams")
    assert status == 503 and "start()" in orjson.loads(body)["error"]  # Kafka Streams' StreamsNotStarted
    assert (await call_asgi(app, "/streams/stores/nope/keys/a", "/streams"))[0] == 404
    assert (await call_asgi(app, "/streams/stores/counts/windows/a", "/streams"))[0] == 400  # a key-value store
    assert (await call_asgi(app, "/streams/metrics", "/streams"))[0] == 200
    status, page = await call_asgi(app, "/streams/", "/streams")
    assert status == 200 and b"<svg" in page and b'href="metrics"' in page  # relative links work under a prefix
    assert (await call_asgi(app, "/streams/health/live", "/streams", method="POST"))[0] == 405
