"""Helpers for the schema'd serde tests: a `mock://` scope per test, and Confluent's REST API of a real
registry (read a subject, register a schema the way another client would)."""

from __future__ import annotations

import json
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

from streamlet.schema_registry import drop_scope
from streamlet.schema_registry.client import RegistrySettings, registry_client


def mock_scope_url() -> Iterator[str]:
    """A fresh `mock://` URL, its scope dropped afterwards (the body of the tests' `url` fixtures)."""
    scope = f"unit-{uuid.uuid4().hex}"
    yield f"mock://{scope}"
    drop_scope(scope)


def latest_id(url: str, subject: str) -> int:
    """The id of the subject's latest schema, as the process's client for `url` sees it."""
    client = registry_client(RegistrySettings.from_config({"schema.registry.url": url}))
    return int(client.get_latest_version(subject).schema_id)


def unique_topic(kind: str) -> str:
    """A topic name of its own for one case: `kind` and a random suffix."""
    return f"{kind}-{uuid.uuid4().hex[:10]}"


def subject_of(topic: str, is_key: bool) -> str:
    """The subject of `topic`'s keys or values under Confluent's default `TopicNameStrategy`."""
    return f"{topic}-{'key' if is_key else 'value'}"


def registered_id(registry: str, subject: str) -> int:
    """The id of the subject's latest schema, read through Confluent's REST API (no client cache)."""
    return int(get_json(f"{registry}/subjects/{subject}/versions/latest")["id"])


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def register(registry: str, subject: str, schema: str, schema_type: str) -> int:
    """Registers `schema` under `subject` through Confluent's REST API; returns its id."""
    request = urllib.request.Request(
        f"{registry}/subjects/{subject}/versions",
        data=json.dumps({"schema": schema, "schemaType": schema_type}).encode(),
        headers={"Content-Type": "application/vnd.schemaregistry.v1+json"}, method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        return int(json.loads(response.read())["id"])
