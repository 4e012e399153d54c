"""`POST /stores/{store}/query` turns down what is no IQv2 request with the status the GET routes use for the
same kind of error (answers to valid requests are compared with Kafka Streams' in
tests/queries/test_iqv2_java.py)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from streamlet import KafkaStreams
from streamlet.http import streams_app
from tests.queries import iqv2_cases

pytestmark = pytest.mark.anyio


async def _post(app: Any, path: str, body: bytes, method: str = "POST") -> tuple[int, Any]:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app({"type": "http", "method": method, "path": path, "root_path": "", "query_string": b"",
               "headers": []}, receive, send)
    return sent[0]["status"], orjson.loads(b"".join(m.get("body", b"") for m in sent[1:]))


@pytest.fixture
def app() -> Any:
    streams = KafkaStreams(iqv2_cases.topology("in"), {"application.id": "iqv2-route",
                                                        "bootstrap.servers": "127.0.0.1:1"})
    return streams_app(streams)


@pytest.mark.parametrize(("body", "says"), [
    (b"not json", "not JSON"),
    (b"[]", "JSON object"),
    (b'{"query": {"type": "NoSuchQuery", "key": "a"}}', "unknown query type"),
    (b'{"query": {"type": "KeyQuery"}}', "needs a 'key'"),
    (b'{"query": {"type": "WindowKeyQuery", "key": "a", "time_from": "soon", "time_to": 1}}', "'time_from'"),
    (b'{"query": {"type": "RangeQuery", "order": "SIDEWAYS"}}', "order"),
    (b'{"query": {"type": "KeyQuery", "key": "a"}, "partitions": "all"}', "'partitions'"),
    (b'{"query": {"type": "KeyQuery", "key": "a"}, "position_bound": {"in": 5}}', "'position_bound'"),
])
async def test_a_malformed_request_is_400_with_the_reason(app: Any, body: bytes, says: str) -> None:
    status, answer = await _post(app, "/stores/kv/query", body)
    assert status == 400
    assert says in answer["error"]


async def test_an_unknown_store_is_404_and_a_client_not_started_503(app: Any) -> None:
    body = orjson.dumps({"query": {"type": "KeyQuery", "key": "a"}})
    assert (await _post(app, "/stores/nope/query", body))[0] == 404
    status, answer = await _post(app, "/stores/kv/query", body)
    assert status == 503 and answer["retriable"]


async def test_post_elsewhere_and_other_methods_are_405(app: Any) -> None:
    assert (await _post(app, "/stores/kv/all", b"{}"))[0] == 405
    assert (await _post(app, "/stores/kv/query", b"{}", method="PUT"))[0] == 405
